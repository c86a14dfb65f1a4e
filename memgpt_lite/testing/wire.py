"""How the fake server's answers go out: their bytes, whole or streamed.

A scripted item becomes a `Response`; its bytes are the status line, headers
and either a JSON body with a Content-Length, or, for a streamed reply, a
chunked body of server-sent events shaped like OpenAI's: a first chunk with
the role, the text in small pieces, each tool call's id and name and then its
arguments in pieces, a chunk with the finish_reason, a usage chunk with no
choices (when `stream_options.include_usage` asked for it) and `data: [DONE]`.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from memgpt_lite.testing.script import Cut, Drip, Drop, Hang, RawReply, Reply, Scripted

if TYPE_CHECKING:
    from memgpt_lite.llm.tokens import TokenCounter


@dataclass(frozen=True)
class StreamPiece:
    """A piece of a streamed answer's text as the server wrote it: `index` is
    None for the message's content, else the tool call whose arguments it is
    part of; `at` is `time.perf_counter()` just before the write."""

    at: float
    index: int | None
    text: str


@dataclass(frozen=True)
class Event:
    """One server-sent event as an HTTP chunk, and the text piece it carries."""

    data: bytes
    index: int | None = None
    text: str = ""


@dataclass
class Response:
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
    cut: Cut | None = None
    # A streamed answer: its events, sent after the headers instead of `body`,
    # and where the handler notes each piece of text it writes.
    events: list[Event] | None = None
    pieces: list[StreamPiece] | None = None
    # Answered from the end of a prompt longer than the context (Ollama).
    prompt_truncated: bool = False


def error_response(
    status: int,
    message: str,
    *,
    error_type: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
    rejected: bool = True,
) -> Response:
    body = {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    return Response(status, body, rejected=rejected)


def scripted_response(item: Scripted, completion: dict[str, Any] | None = None) -> Response:
    """The answer for a scripted item; `completion` is the body for a reply."""
    if isinstance(item, Drip | Cut):
        response = scripted_response(item.item, completion)
        response.delay += item.delay
        if isinstance(item, Drip):
            response.drip = item
        else:
            response.cut = item
        return response
    if isinstance(item, Reply):
        return Response(200, completion, delay=item.delay)
    if isinstance(item, Drop | Hang):
        return Response(0, None, delay=item.delay, hang=isinstance(item, Hang))
    if isinstance(item, RawReply):
        response = Response(item.status, {}, dict(item.headers), item.delay, raw=item.body)
        response.content_type = item.content_type
        return response
    response = error_response(
        item.status,
        item.message,
        error_type=item.error_type,
        param=item.param,
        code=item.code,
        rejected=False,
    )
    response.headers, response.delay = dict(item.headers), item.delay
    return response


def completion_body(
    model: str, item: Reply, prompt_tokens: int, counter: TokenCounter
) -> dict[str, Any]:
    """A chat.completion object in the real API's shape, for a scripted reply."""
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
            counter.count_text(tc.name) + counter.count_text(tc.arguments) for tc in item.tool_calls
        )
    finish = item.finish_reason or ("tool_calls" if item.tool_calls else "stop")
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def encode_head(response: Response, length: int | None) -> bytes:
    """The status line and headers; `length` None for a chunked (streamed) body."""
    try:
        reason = HTTPStatus(response.status).phrase
    except ValueError:
        reason = ""
    framing = ["Transfer-Encoding: chunked", "Cache-Control: no-cache"]
    if length is not None:
        framing = [f"Content-Length: {length}"]
    lines = [
        f"HTTP/1.1 {response.status} {reason}",
        f"Content-Type: {response.content_type}",
        *framing,
        f"x-request-id: req_{uuid.uuid4().hex}",
        *(f"{name}: {value}" for name, value in response.headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def encode_body(response: Response) -> bytes:
    return response.raw if response.raw is not None else json.dumps(response.body).encode()


def _frame(payload: bytes) -> bytes:
    """`payload` as one chunk of a chunked HTTP body."""
    return f"{len(payload):x}\r\n".encode() + payload + b"\r\n"


def _event(value: dict[str, Any], index: int | None = None, text: str = "") -> Event:
    return Event(_frame(b"data: " + json.dumps(value).encode() + b"\n\n"), index, text)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def stream_events(completion: dict[str, Any], piece_chars: int, include_usage: bool) -> list[Event]:
    """The events of `completion` (a chat.completion object) streamed as
    OpenAI streams it, text and arguments cut into `piece_chars` characters;
    the body's closing chunk last."""
    base = {
        "id": completion["id"],
        "object": "chat.completion.chunk",
        "created": completion["created"],
        "model": completion["model"],
        "system_fingerprint": None,
    }
    if include_usage:  # OpenAI then sends "usage": null in every other chunk
        base["usage"] = None

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return {**base, "choices": [choice]}

    choice = completion["choices"][0]
    message = choice["message"]
    content = message["content"]
    role = {"role": "assistant", "content": "" if content else None, "refusal": None}
    events = [_event(chunk(role))]
    events += [_event(chunk({"content": p}), None, p) for p in _pieces(content or "", piece_chars)]
    for i, tool_call in enumerate(message.get("tool_calls") or ()):
        function = tool_call["function"]
        opening = {"index": i, "id": tool_call["id"], "type": "function"}
        opening["function"] = {"name": function["name"], "arguments": ""}
        events.append(_event(chunk({"tool_calls": [opening]})))
        for piece in _pieces(function["arguments"], piece_chars):
            delta = {"tool_calls": [{"index": i, "function": {"arguments": piece}}]}
            events.append(_event(chunk(delta), i, piece))
    events.append(_event(chunk({}, choice["finish_reason"])))
    if include_usage:
        events.append(_event({**base, "choices": [], "usage": completion["usage"]}))
    events.append(Event(_frame(b"data: [DONE]\n\n")))
    events.append(Event(b"0\r\n\r\n"))  # the end of the chunked body
    return events
