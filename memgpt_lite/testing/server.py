"""A fake OpenAI-compatible HTTP server, for testing agents offline.

The server speaks real HTTP on 127.0.0.1, so the code under test uses the real
``openai`` client (retries, timeouts, error classes and all) and nothing is
mocked inside the process. Replies are scripted, and every request is checked
the way the real API checks it, above all the rule that each tool call must be
answered by exactly one tool message. A test that breaks that rule fails here
the same way it would fail against OpenAI::

    with FakeOpenAIServer() as server:
        server.enqueue(reply("thinking", tool_calls=[call("send_message", message="hi")]))
        client = openai.OpenAI(base_url=server.base_url, api_key=server.api_key)
        ...
        assert server.rejections == []

When the script runs out, ``server.responder`` (if set) answers instead; with
neither, the server answers 400 rather than 5xx because the client retries 5xx.

Besides replies and errors, the script (``testing_script.py``) has the ways
real servers misbehave: ``drop()``, ``html()``, ``raw()`` bodies such as
truncated JSON, ``hang()`` and ``drip()``.

``POST /v1/embeddings`` answers with deterministic bag-of-words vectors that
``fake_embedding(text)`` reproduces, after any failures scripted apart from the
chat script with ``enqueue_embeddings(error(...), drop())``.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import socketserver
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memgpt_lite.llm.tokens import TokenCounter
from memgpt_lite.testing.embeddings import DEFAULT_DIMENSION, embedding_response, input_texts
from memgpt_lite.testing.embeddings import cosine as cosine  # re-exported for tests
from memgpt_lite.testing.embeddings import fake_embedding as fake_embedding  # re-exported for tests
from memgpt_lite.testing.script import (
    HTML_PAGE,
    Drip,
    Drop,
    ErrorReply,
    Hang,
    RawReply,
    Reply,
    Responder,
    Scripted,
    ToolCall,
    call,
    call_raw,
    check_scripted,
    drip,
    drop,
    error,
    hang,
    html,
    raw,
    reply,
    say,
)
from memgpt_lite.testing.validation import (
    Rejected,
    check_context,
    parse_request_body,
    validate_chat_request,
    validate_embedding_request,
)

__all__ = [
    "HTML_PAGE",
    "Drip",
    "Drop",
    "ErrorReply",
    "FakeOpenAIServer",
    "Hang",
    "RawReply",
    "RecordedRequest",
    "Reply",
    "Responder",
    "Scripted",
    "ToolCall",
    "call",
    "call_raw",
    "cosine",
    "drip",
    "drop",
    "error",
    "fake_embedding",
    "hang",
    "html",
    "raw",
    "reply",
    "say",
]

# How often a hung answer looks whether the client has hung up.
HANG_POLL_SECONDS = 0.02

# --------------------------------------------------------------------- server


@dataclass
class RecordedRequest:
    """One request as received. Header names are lower-cased; ``status`` is 0
    for a dropped or hung connection; ``body`` is None when it was not valid JSON."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    status: int = 0
    error: str | None = None


@dataclass
class _Response:
    status: int
    body: dict[str, Any] | None  # None: drop the connection
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    rejected: bool = False  # refused by the server itself, not by the script
    # The history list (chat or embedding requests) the request body joins.
    history: list[dict[str, Any]] | None = None
    # How a scripted misbehaviour goes out.
    raw: bytes | None = None  # sent instead of the JSON of `body`
    content_type: str = "application/json"
    hang: bool = False
    drip: Drip | None = None


def _error_response(
    status: int,
    message: str,
    *,
    error_type: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
    rejected: bool = True,
) -> _Response:
    body = {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    return _Response(status, body, rejected=rejected)


def _scripted_response(item: Scripted, completion: dict[str, Any] | None = None) -> _Response:
    """The answer for a scripted item; `completion` is the body for a reply."""
    if isinstance(item, Drip):
        response = _scripted_response(item.item, completion)
        response.drip, response.delay = item, response.delay + item.delay
        return response
    if isinstance(item, Reply):
        return _Response(200, completion, delay=item.delay)
    if isinstance(item, Drop | Hang):
        return _Response(0, None, delay=item.delay, hang=isinstance(item, Hang))
    if isinstance(item, RawReply):
        response = _Response(item.status, {}, dict(item.headers), item.delay, raw=item.body)
        response.content_type = item.content_type
        return response
    response = _error_response(
        item.status,
        item.message,
        error_type=item.error_type,
        param=item.param,
        code=item.code,
        rejected=False,
    )
    response.headers, response.delay = dict(item.headers), item.delay
    return response


def _client_gone(sock: socket.socket) -> bool:
    """True once the client has closed its end of the connection."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable) and not sock.recv(1, socket.MSG_PEEK)
    except OSError:
        return True


class _HTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that tracks open connections so stop() can close
    kept-alive ones instead of leaving threads blocked on them."""

    daemon_threads = True

    def __init__(self, fake: FakeOpenAIServer) -> None:
        self.fake = fake
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls getfqdn(), a reverse DNS lookup that can
        # stall on machines with no network.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._open_lock:
            sockets = list(self._open)
        for sock in sockets:
            with contextlib.suppress(OSError):  # already closed by the client
                sock.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up (timeouts, drop tests) is normal here.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the openai client expects
    # Headers and body go out in two writes; with Nagle's algorithm on, the
    # second waits for the client's delayed ACK, adding ~40 ms to every reply.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def do_GET(self) -> None:  # noqa: N802 - name required by BaseHTTPRequestHandler
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # keep test output clean

    def _handle(self, method: str) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length, self.close_connection = 0, True
        raw = self.rfile.read(length) if length > 0 else b""
        if len(raw) < length:
            # The client went away mid-request (killed, say): nothing to
            # answer, and nothing it sent was a request to judge.
            self.close_connection = True
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake = self.server.fake
        response = fake._respond(method, self.path.split("?", 1)[0], headers, raw)
        # Wake early when the server stops, so stop() never waits on a sleeper.
        if response.delay > 0 and fake._stopping.wait(response.delay):
            response.body, response.hang = None, False
        if response.hang:
            self._hang()
        if response.body is None:
            self.close_connection = True
            return
        data = self._encode(response)
        if response.drip is None:
            self.wfile.write(data)
        else:
            self._drip(data, response.drip)

    def _encode(self, response: _Response) -> bytes:
        """The whole HTTP response: status line, headers and body."""
        body = response.raw if response.raw is not None else json.dumps(response.body).encode()
        try:
            reason = HTTPStatus(response.status).phrase
        except ValueError:
            reason = ""
        lines = [
            f"HTTP/1.1 {response.status} {reason}",
            f"Content-Type: {response.content_type}",
            f"Content-Length: {len(body)}",
            f"x-request-id: req_{uuid.uuid4().hex}",
            *(f"{name}: {value}" for name, value in response.headers.items()),
        ]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    def _hang(self) -> None:
        """Say nothing until the client hangs up or the server stops."""
        fake = self.server.fake
        with fake._lock:
            fake._hanging += 1
        try:
            while not fake._stopping.wait(HANG_POLL_SECONDS):
                if _client_gone(self.connection):
                    break
        finally:
            with fake._lock:
                fake._hanging -= 1

    def _drip(self, data: bytes, drip: Drip) -> None:
        for start in range(0, len(data), drip.chunk):
            if start and self.server.fake._stopping.wait(drip.interval):
                self.close_connection = True
                return
            try:
                self.wfile.write(data[start : start + drip.chunk])
            except OSError:  # the client gave up: normal for a drip
                self.close_connection = True
                return


class FakeOpenAIServer:
    """A scripted OpenAI-compatible server on 127.0.0.1; see the module docstring.

    ``requests`` holds every request; ``rejections`` those the server itself
    refused (bad auth, unknown path, validation, empty script); ``chat_requests``
    the bodies of chat requests that passed validation and were answered from
    the script or the responder (scripted errors and drops included);
    ``embedding_requests`` likewise for embeddings, and ``embedding_inputs_seen``
    how many inputs were actually embedded (answered with vectors).
    """

    model_id = "fake-model"  # the one model GET /v1/models lists

    def __init__(
        self,
        context_window: int | None = None,
        reject_required_tool_choice: bool = False,
        api_key: str = "test-key",
        embedding_dimension: int = DEFAULT_DIMENSION,
    ) -> None:
        if not (isinstance(embedding_dimension, int) and embedding_dimension >= 1):
            raise ValueError(f"embedding_dimension must be an int >= 1: {embedding_dimension!r}")
        self.embedding_dimension = embedding_dimension
        self.context_window = context_window
        self.reject_required_tool_choice = reject_required_tool_choice
        self.api_key = api_key
        self.responder: Responder | None = None
        self._lock = threading.RLock()  # re-entrant: a responder may read history
        self._queue: deque[Scripted] = deque()
        self._requests: list[RecordedRequest] = []
        self._rejections: list[RecordedRequest] = []
        self._chat_requests: list[dict[str, Any]] = []
        self._embedding_queue: deque[Scripted] = deque()
        self._embedding_requests: list[dict[str, Any]] = []
        self._embedding_inputs_seen = 0
        self._counters: dict[str, TokenCounter] = {}
        self._hanging = 0
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        # A new route is one entry here plus one method.
        self._routes: dict[tuple[str, str], Callable[[dict[str, Any] | None], _Response]] = {
            ("GET", "/v1/models"): self._list_models,
            ("POST", "/v1/chat/completions"): self._chat_completions,
            ("POST", "/v1/embeddings"): self._embeddings,
        }

    # -- lifecycle --------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        if self._httpd is None:
            self._stopping.clear()
            self._httpd = _HTTPServer(self)
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.02},
                name="FakeOpenAIServer",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.close_connections()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("FakeOpenAIServer is not started")
        return f"http://127.0.0.1:{self._httpd.server_port}/v1"

    # -- script and history -----------------------------------------------

    def enqueue(self, *items: Scripted) -> None:
        """Append scripted answers; malformed ones raise ValueError now."""
        for item in items:
            check_scripted(item)
        with self._lock:
            self._queue.extend(items)

    def enqueue_embeddings(self, *items: Scripted) -> None:
        """Script failures (anything but a reply) for the next embedding requests,
        apart from the chat script; once they are used up, requests get the
        deterministic vectors."""
        for item in items:
            if isinstance(item, Reply) or (isinstance(item, Drip) and isinstance(item.item, Reply)):
                raise ValueError("enqueue_embeddings takes failures such as error(), not reply()")
            check_scripted(item)
        with self._lock:
            self._embedding_queue.extend(items)

    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def hanging(self) -> int:
        """How many hang() answers still hold a connection open (the client
        has not hung up yet)."""
        with self._lock:
            return self._hanging

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self._rejections.clear()
            self._chat_requests.clear()
            self._embedding_queue.clear()
            self._embedding_requests.clear()
            self._embedding_inputs_seen = 0

    # History is returned as copies, so callers never iterate a list being appended to.
    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def rejections(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._rejections)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._chat_requests)

    @property
    def embedding_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._embedding_requests)

    @property
    def embedding_inputs_seen(self) -> int:
        with self._lock:
            return self._embedding_inputs_seen

    # -- request handling (called from handler threads) --------------------

    def _respond(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> _Response:
        body: Any = None
        parse_error = False
        try:
            body = parse_request_body(raw) if raw else None
        except ValueError:
            parse_error = True
        route = self._routes.get((method, path))
        auth = headers.get("authorization", "")
        if auth != f"Bearer {self.api_key}":
            message = "Incorrect API key provided." if auth else "You didn't provide an API key."
            response = _error_response(401, message, code="invalid_api_key")
        elif route is None:
            response = _error_response(404, f"Invalid URL ({method} {path})")
        elif parse_error:
            response = _error_response(400, "We could not parse the JSON body of your request.")
        else:
            response = route(body)
        self._record(RecordedRequest(method, path, headers, body), response)
        return response

    def _record(self, record: RecordedRequest, response: _Response) -> None:
        record.status = response.status if response.body is not None else 0
        if response.hang:
            record.error = "no answer (hang)"
        elif response.body is None:
            record.error = "connection dropped"
        elif "error" in response.body:
            record.error = response.body["error"]["message"]
        with self._lock:
            self._requests.append(record)
            if response.rejected:
                self._rejections.append(record)
            if response.history is not None:
                response.history.append(record.body)

    def _list_models(self, body: dict[str, Any] | None) -> _Response:
        model = {"id": self.model_id, "object": "model", "created": 0, "owned_by": "memgpt-lite"}
        return _Response(200, {"object": "list", "data": [model]})

    def _chat_completions(self, body: dict[str, Any] | None) -> _Response:
        try:
            body = validate_chat_request(body, self.reject_required_tool_choice)
            counter = self._counter(body["model"])
            prompt_tokens = check_context(counter, body, self.context_window)
        except Rejected as exc:
            return _error_response(400, exc.message, param=exc.param, code=exc.code)
        try:
            item = self._next_scripted(body)
        except ValueError as exc:  # the responder returned garbage: say so, do not crash
            return _error_response(400, f"fake server: bad responder output: {exc}")
        except Exception as exc:  # noqa: BLE001 - a test's responder has a bug: say which
            return _error_response(400, f"fake server: the responder raised {exc!r}")
        if item is None:
            return _error_response(400, "fake server: no scripted reply left")
        answer = item.item if isinstance(item, Drip) else item
        completion = None
        if isinstance(answer, Reply):
            completion = self._completion(body["model"], answer, prompt_tokens)
        response = _scripted_response(item, completion)
        response.history = self._chat_requests
        return response

    def _embeddings(self, body: dict[str, Any] | None) -> _Response:
        try:
            body = validate_embedding_request(body, self.embedding_dimension)
            encoding = self._counter(body["model"]).encoding
            texts, prompt_tokens = input_texts(body["input"], encoding)
        except Rejected as exc:
            return _error_response(400, exc.message, param=exc.param, code=exc.code)
        with self._lock:
            item = self._embedding_queue.popleft() if self._embedding_queue else None
            if item is None:
                self._embedding_inputs_seen += len(texts)
        if item is None:
            answer = embedding_response(body, texts, prompt_tokens, self.embedding_dimension)
            response = _Response(200, answer)
        else:
            response = _scripted_response(item)
        response.history = self._embedding_requests
        return response

    def _next_scripted(self, body: dict[str, Any]) -> Scripted | None:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            if self.responder is None:
                return None
            item = self.responder(body)
        check_scripted(item, strict=False)
        return item

    def _counter(self, model: str) -> TokenCounter:
        # Building a counter loads a vocabulary: do it once per model.
        with self._lock:
            if model not in self._counters:
                self._counters[model] = TokenCounter(model)
            return self._counters[model]

    def _completion(self, model: str, item: Reply, prompt_tokens: int) -> dict[str, Any]:
        """A chat.completion object in the real API's shape."""
        counter = self._counter(model)
        message: dict[str, Any] = {"role": "assistant", "content": item.content, "refusal": None}
        completion_tokens = counter.count_text(item.content or "")
        if item.tool_calls:
            message["tool_calls"] = [
                {
                    "id": tc.id,
                    "type": "function",
                    "function": {"name": tc.name, "arguments": tc.arguments},
                }
                for tc in item.tool_calls
            ]
            completion_tokens += sum(
                counter.count_text(tc.name) + counter.count_text(tc.arguments)
                for tc in item.tool_calls
            )
        finish = item.finish_reason or ("tool_calls" if item.tool_calls else "stop")
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
