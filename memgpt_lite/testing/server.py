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

A request with ``stream: true`` is answered with server-sent events as
OpenAI sends them (see ``wire.py``), text and arguments in pieces of
``stream_piece_chars`` characters; each ``RecordedRequest`` notes when each
piece was written. ``streaming = "refuse"`` or ``"ignore"`` plays a server
that cannot stream (a 400, or a plain completion).

Besides replies and errors, the script (``script.py``) has the ways real
servers misbehave: ``drop()``, ``html()``, ``raw()`` bodies such as truncated
JSON, ``hang()``, ``drip()`` and ``cut()`` (a stream that breaks off).

``GET /v1/models`` lists ``server.models`` (by default the one model
``fake-model``; give entries their own fields, such as ``context_length``, to
play OpenRouter, vLLM or llama.cpp); ``enqueue_models(html())`` scripts its
next answers, failures or pages, apart from the chat script.

``server.play("ollama" | "llama.cpp" | "vllm", context=N)`` plays a local
server running its model with N tokens of context: its native routes
(``/api/ps``, ``/api/show``, ``/props``), its model list, and its way with a
longer prompt (see ``local_servers.py``).

``POST /v1/embeddings`` answers with deterministic bag-of-words vectors that
``fake_embedding(text)`` reproduces, after any failures scripted apart from the
chat script with ``enqueue_embeddings(error(...), drop())``.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from memgpt_lite.llm.tokens import TokenCounter
from memgpt_lite.testing.embeddings import DEFAULT_DIMENSION, embedding_response, input_texts
from memgpt_lite.testing.embeddings import cosine as cosine  # re-exported for tests
from memgpt_lite.testing.embeddings import fake_embedding as fake_embedding  # re-exported for tests
from memgpt_lite.testing.handler import AnswerServer, Hooks
from memgpt_lite.testing.local_servers import LocalKind, LocalServer
from memgpt_lite.testing.script import (
    HTML_PAGE,
    Cut,
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
    cut,
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
from memgpt_lite.testing.wire import (
    Response,
    StreamPiece,
    completion_body,
    error_response,
    scripted_response,
    stream_events,
)

__all__ = [
    "HTML_PAGE",
    "Cut",
    "LocalServer",
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
    "cut",
    "drip",
    "drop",
    "error",
    "fake_embedding",
    "hang",
    "html",
    "raw",
    "reply",
    "say",
    "StreamPiece",
]

Streaming = Literal[True, "refuse", "ignore"]

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
    # A streamed answer: True, and each piece of text with the moment it was written.
    streamed: bool = False
    pieces: list[StreamPiece] = field(default_factory=list)
    # Answered though the prompt was longer than the context: a played
    # Ollama kept only the end of it, and its usage says so.
    prompt_truncated: bool = False

    @property
    def first_content_at(self) -> float | None:
        """`time.perf_counter()` when the first piece of the message's text was
        written (None if there was none): how soon the first words went out."""
        return next((p.at for p in self.pieces if p.index is None), None)


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
        *,
        streaming: Streaming = True,
        stream_piece_chars: int = 4,
        stream_piece_seconds: float = 0.0,
    ) -> None:
        if not (isinstance(embedding_dimension, int) and embedding_dimension >= 1):
            raise ValueError(f"embedding_dimension must be an int >= 1: {embedding_dimension!r}")
        self.embedding_dimension = embedding_dimension
        self.context_window = context_window
        self.reject_required_tool_choice = reject_required_tool_choice
        self.streaming = streaming
        # Streamed text and arguments go out in pieces of this many characters,
        # with this pause before each event after the first.
        self.stream_piece_chars = stream_piece_chars
        self.stream_piece_seconds = stream_piece_seconds
        self.api_key = api_key
        self.responder: Responder | None = None
        self._lock = threading.RLock()  # re-entrant: a responder may read history
        self._queue: deque[Scripted] = deque()
        self._requests: list[RecordedRequest] = []
        self._rejections: list[RecordedRequest] = []
        self._chat_requests: list[dict[str, Any]] = []
        self._embedding_queue: deque[Scripted] = deque()
        self._models_queue: deque[Scripted] = deque()
        # What GET /v1/models lists, each entry as sent.
        self.models: list[dict[str, Any]] = [
            {"id": self.model_id, "object": "model", "created": 0, "owned_by": "memgpt-lite"}
        ]
        self._embedding_requests: list[dict[str, Any]] = []
        self._embedding_inputs_seen = 0
        self._counters: dict[str, TokenCounter] = {}
        self._hanging = 0
        self._stopping = threading.Event()
        self._httpd: AnswerServer | None = None
        self._thread: threading.Thread | None = None
        self.local: LocalServer | None = None  # the local server played, if any
        # A new route is one entry here plus one method.
        self._routes: dict[tuple[str, str], Callable[[dict[str, Any] | None], Response]] = {
            ("GET", "/v1/models"): self._list_models,
            ("POST", "/v1/chat/completions"): self._chat_completions,
            ("POST", "/v1/embeddings"): self._embeddings,
        }

    # -- lifecycle --------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        if self._httpd is None:
            self._stopping.clear()
            hooks = Hooks(self._respond, self._stopping, self._count_hang, self._piece_seconds)
            self._httpd = AnswerServer(hooks)
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

    @property
    def streaming(self) -> Streaming:
        """True: answer `stream: true` with server-sent events. "refuse": answer
        it with a 400, as servers that cannot stream do. "ignore": answer it
        with a plain JSON completion, as servers that do not know the option do."""
        return self._streaming

    @streaming.setter
    def streaming(self, value: Streaming) -> None:
        if value is not True and value not in ("refuse", "ignore"):
            raise ValueError(f'streaming must be True, "refuse" or "ignore", not {value!r}')
        self._streaming = value

    @property
    def stream_piece_chars(self) -> int:
        return self._stream_piece_chars

    @stream_piece_chars.setter
    def stream_piece_chars(self, value: int) -> None:
        if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
            raise ValueError(f"stream_piece_chars must be an int >= 1, not {value!r}")
        self._stream_piece_chars = value

    def play(self, kind: LocalKind, context: int, **options: Any) -> LocalServer:
        """Play a local server (Ollama, llama.cpp, vLLM) that runs the model
        with `context` tokens; `options` go to `LocalServer` (e.g. `trained`,
        `num_ctx_in_modelfile`). Replaces `context_window`'s OpenAI check."""
        local = LocalServer(kind, context, self.model_id, **options)
        with self._lock:
            self.local = local
        return local

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
        self._enqueue_failures(self._embedding_queue, items, "enqueue_embeddings", "error()")

    def enqueue_models(self, *items: Scripted) -> None:
        """Script the next answers to GET /v1/models (failures, pages, raw
        bodies: anything but a reply); once they are used up, it lists `models`."""
        self._enqueue_failures(self._models_queue, items, "enqueue_models", "html()")

    def _enqueue_failures(
        self, queue: deque[Scripted], items: tuple[Scripted, ...], method: str, example: str
    ) -> None:
        """Add scripted failures to `queue`: the side queues play no replies."""
        for item in items:
            answer = item.item if isinstance(item, Drip | Cut) else item
            if isinstance(answer, Reply):
                raise ValueError(f"{method} takes failures such as {example}, not reply()")
            check_scripted(item)
        with self._lock:
            queue.extend(items)

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
            self._models_queue.clear()
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

    def _count_hang(self, change: int) -> None:
        with self._lock:
            self._hanging += change

    def _piece_seconds(self) -> float:
        return self.stream_piece_seconds

    def _respond(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Response:
        body: Any = None
        parse_error = False
        try:
            body = parse_request_body(raw) if raw else None
        except ValueError:
            parse_error = True
        route = self._routes.get((method, path))
        local = self.local
        if route is None and local is not None:
            route = local.routes().get((method, path))
        auth = headers.get("authorization", "")
        if auth != f"Bearer {self.api_key}":
            message = "Incorrect API key provided." if auth else "You didn't provide an API key."
            response = error_response(401, message, code="invalid_api_key")
        elif route is None:
            response = error_response(404, f"Invalid URL ({method} {path})")
        elif parse_error:
            response = error_response(400, "We could not parse the JSON body of your request.")
        else:
            response = route(body)
        self._record(RecordedRequest(method, path, headers, body), response)
        return response

    def _record(self, record: RecordedRequest, response: Response) -> None:
        record.status = response.status if response.body is not None else 0
        if response.hang:
            record.error = "no answer (hang)"
        elif response.body is None:
            record.error = "connection dropped"
        elif "error" in response.body:
            error = response.body["error"]  # Ollama's native routes: a string
            record.error = error["message"] if isinstance(error, dict) else str(error)
        if response.events is not None:
            record.streamed, response.pieces = True, record.pieces
        record.prompt_truncated = response.prompt_truncated
        with self._lock:
            self._requests.append(record)
            if response.rejected:
                self._rejections.append(record)
            if response.history is not None:
                response.history.append(record.body)

    def _list_models(self, body: dict[str, Any] | None) -> Response:
        with self._lock:
            item = self._models_queue.popleft() if self._models_queue else None
            models = [dict(entry) for entry in self.models]
            local = self.local
        if local is not None:
            for entry in models:
                if entry.get("id") == self.model_id:
                    entry.update(local.model_fields())
        if item is not None:
            return scripted_response(item)
        return Response(200, {"object": "list", "data": models})

    def _chat_completions(self, body: dict[str, Any] | None) -> Response:
        try:
            body = validate_chat_request(body, self.reject_required_tool_choice)
            counter = self._counter(body["model"])
            local = self.local
            prompt_tokens = check_context(counter, body, None if local else self.context_window)
        except Rejected as exc:
            return error_response(400, exc.message, param=exc.param, code=exc.code)
        truncated = False
        if local is not None:
            completion_limit = body.get("max_completion_tokens") or body.get("max_tokens") or 0
            kept, refusal = local.meet_prompt(prompt_tokens, completion_limit)
            if refusal is not None:
                return refusal
            truncated, prompt_tokens = kept < prompt_tokens, kept
        stream = body.get("stream") is True and self.streaming != "ignore"
        if stream and self.streaming == "refuse":
            return error_response(400, "Unknown parameter: 'stream'.", param="stream")
        try:
            item = self._next_scripted(body)
        except ValueError as exc:  # the responder returned garbage: say so, do not crash
            return error_response(400, f"fake server: bad responder output: {exc}")
        except Exception as exc:  # noqa: BLE001 - a test's responder has a bug: say which
            return error_response(400, f"fake server: the responder raised {exc!r}")
        if item is None:
            return error_response(400, "fake server: no scripted reply left")
        answer = item.item if isinstance(item, Drip | Cut) else item
        completion = None
        if isinstance(answer, Reply):
            completion = completion_body(body["model"], answer, prompt_tokens, counter)
        response = scripted_response(item, completion)
        response.prompt_truncated = truncated
        if completion is not None and stream:
            usage = (body.get("stream_options") or {}).get("include_usage") is True
            response.events = stream_events(completion, self.stream_piece_chars, usage)
            response.content_type = "text/event-stream; charset=utf-8"
        response.history = self._chat_requests
        return response

    def _embeddings(self, body: dict[str, Any] | None) -> Response:
        try:
            body = validate_embedding_request(body, self.embedding_dimension)
            encoding = self._counter(body["model"]).encoding
            texts, prompt_tokens = input_texts(body["input"], encoding)
        except Rejected as exc:
            return error_response(400, exc.message, param=exc.param, code=exc.code)
        with self._lock:
            item = self._embedding_queue.popleft() if self._embedding_queue else None
            if item is None:
                self._embedding_inputs_seen += len(texts)
        if item is None:
            answer = embedding_response(body, texts, prompt_tokens, self.embedding_dimension)
            response = Response(200, answer)
        else:
            response = scripted_response(item)
        response.history = self._embedding_requests
        return response

    def _next_scripted(self, body: dict[str, Any]) -> Scripted | None:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            responder = self.responder
        if responder is None:
            return None
        # Outside the lock: requests in flight at once are answered at once,
        # as by a real server, even by a responder that takes its time.
        item = responder(body)
        check_scripted(item, strict=False)
        return item

    def _counter(self, model: str) -> TokenCounter:
        # Building a counter loads a vocabulary: do it once per model.
        with self._lock:
            if model not in self._counters:
                self._counters[model] = TokenCounter(model)
            return self._counters[model]
