"""What the fake OpenAI server answers: the script a test writes.

Each builder makes one answer for ``FakeOpenAIServer.enqueue`` (or for a
responder to return):

- ``reply()`` / ``say()``: a chat completion, with ``call()`` / ``call_raw()``
  tool calls. ``reply()`` with neither content nor tool calls is the empty
  reply some local servers send.
- ``error()``: an HTTP error in OpenAI's shape (429 with ``Retry-After``, 5xx...).
- ``drop()``: the connection is closed without an answer.
- ``html()``: a 200 HTML page, as a proxy, the wrong port or a URL without
  ``/v1`` gives.
- ``raw()``: any status, body bytes and content type, such as truncated JSON.
- ``hang()``: the connection is accepted and never answered, until the client
  hangs up or the server stops.
- ``drip(item)``: ``item`` (a reply, error or raw answer) sent a few bytes at a
  time with a pause between them, the status line and headers included.
- ``cut(reply)``: the start of a reply, then the connection closed (or, with
  ``hang=True``, silence): a stream that breaks off partway.

A run of failures is a repeated item, ``enqueue(*[error(503, "busy")] * 5)``;
a failure that never ends is a responder, ``server.responder = lambda body:
error(503, "busy")``.
"""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import count
from typing import Any

# Tool call ids: a counter pushed through a bijection of 48-bit numbers, so ids
# look random (like OpenAI's) yet never repeat within a process.
_ID_BITS = 48
_ID_COUNTER = count(secrets.randbits(_ID_BITS))
_ID_MULTIPLIER = 0x9E3779B97F4B  # odd, hence invertible modulo 2**48


def _new_call_id() -> str:
    n = (next(_ID_COUNTER) * _ID_MULTIPLIER) % (1 << _ID_BITS)
    return f"call_{n:012x}"


@dataclass(frozen=True)
class ToolCall:
    """One tool call in a scripted reply; ``arguments`` is sent verbatim."""

    name: str
    arguments: str
    id: str = field(default_factory=_new_call_id)


@dataclass(frozen=True)
class Reply:
    """A scripted assistant message. ``finish_reason`` None means automatic."""

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    delay: float = 0.0


@dataclass(frozen=True)
class ErrorReply:
    """A scripted HTTP error in OpenAI's error shape."""

    status: int
    message: str
    error_type: str = "invalid_request_error"
    code: str | None = None
    param: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True)
class RawReply:
    """An answer sent exactly as given: status, body bytes and content type."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True)
class Drop:
    """Close the connection without answering."""

    delay: float = 0.0


@dataclass(frozen=True)
class Hang:
    """Accept the request and never answer (until the client or the server gives up)."""

    delay: float = 0.0


@dataclass(frozen=True)
class Drip:
    """Send ``item`` ``chunk`` bytes at a time, ``interval`` seconds apart."""

    item: Reply | ErrorReply | RawReply
    interval: float = 0.05
    chunk: int = 1
    delay: float = 0.0


@dataclass(frozen=True)
class Cut:
    """Send the start of ``item`` and stop: the headers and the first ``after``
    events of a streamed answer (of a plain one, half its body), then close
    the connection, or with ``hang`` say nothing more until the client leaves."""

    item: Reply
    after: int = 2
    hang: bool = False
    delay: float = 0.0


Scripted = Reply | ErrorReply | RawReply | Drop | Hang | Drip | Cut
Responder = Callable[[dict[str, Any]], Scripted]

HTML_PAGE = (
    "<!DOCTYPE html>\n<html>\n<head><title>Welcome</title></head>\n"
    "<body><h1>It works!</h1><p>This is a web page, not an API.</p></body>\n</html>\n"
)


def call(name: str, /, **arguments: Any) -> ToolCall:
    """A tool call whose arguments are ``json.dumps(arguments)``; the id is generated.

    ``name`` is positional-only so a tool may itself take a ``name`` argument.
    """
    return ToolCall(name=name, arguments=json.dumps(arguments))


def call_raw(name: str, arguments: str, *, id: str | None = None) -> ToolCall:  # noqa: A002
    """A tool call whose arguments string is sent as-is, valid JSON or not."""
    return ToolCall(name=name, arguments=arguments, id=id or _new_call_id())


def reply(
    content: str | None = None,
    tool_calls: Iterable[ToolCall] = (),
    *,
    finish_reason: str | None = None,
    delay: float = 0.0,
) -> Reply:
    """An assistant reply with optional text and tool calls."""
    return Reply(content, tuple(tool_calls), finish_reason, delay)


def say(message: str, *, content: str | None = None) -> Reply:
    """A reply that calls ``send_message(message)``: the usual end of a turn."""
    return reply(content, [call("send_message", message=message)])


def error(
    status: int,
    message: str,
    *,
    code: str | None = None,
    error_type: str | None = None,
    param: str | None = None,
    headers: Mapping[str, str] | None = None,
    delay: float = 0.0,
) -> ErrorReply:
    """An HTTP error reply; the error type defaults to what OpenAI uses for the status."""
    if error_type is None:
        error_type = {429: "rate_limit_error"}.get(status, "invalid_request_error")
        if status >= 500:
            error_type = "server_error"
    return ErrorReply(status, message, error_type, code, param, dict(headers or {}), delay)


def drop(*, delay: float = 0.0) -> Drop:
    """Close the connection without answering; the client sees a dropped connection."""
    return Drop(delay)


def raw(
    body: bytes | str,
    *,
    status: int = 200,
    content_type: str = "application/json",
    headers: Mapping[str, str] | None = None,
    delay: float = 0.0,
) -> RawReply:
    """An answer with exactly this body (a str is sent as UTF-8), for example
    truncated JSON: ``raw('{"choices": [')``."""
    data = body.encode("utf-8") if isinstance(body, str) else body
    return RawReply(status, data, content_type, dict(headers or {}), delay)


def html(body: str = HTML_PAGE, *, status: int = 200) -> RawReply:
    """An HTML page, as a web server or proxy answers a URL that is not the API."""
    return raw(body, status=status, content_type="text/html; charset=utf-8")


def hang(*, delay: float = 0.0) -> Hang:
    """Accept the request and never answer, until the client hangs up or the server stops."""
    return Hang(delay)


def drip(
    item: Reply | ErrorReply | RawReply,
    *,
    interval: float = 0.05,
    chunk: int = 1,
    delay: float = 0.0,
) -> Drip:
    """Send ``item`` (status line and headers too) ``chunk`` bytes at a time, with
    ``interval`` seconds between writes: a server that is alive but too slow."""
    return Drip(item, interval, chunk, delay)


def cut(item: Reply, *, after: int = 2, hang: bool = False, delay: float = 0.0) -> Cut:
    """A reply that breaks off: the headers and its first ``after`` stream events
    (the first is the one with the role, the next ones carry text), then the
    connection is closed, or with ``hang=True`` kept open in silence."""
    return Cut(item, after, hang, delay)


_FINISH_REASONS = {None, "stop", "tool_calls", "length", "content_filter"}


def _check_number(name: str, value: object) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


def _check_headers(headers: Mapping[str, str], what: str) -> None:
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise ValueError(f"{what} headers must map str to str")
    for line in (f"{name}: {value}" for name, value in headers.items()):
        if not line.isprintable() or not line.isascii():
            raise ValueError(f"{what} header {line!r} must be printable ASCII on one line")


def _check_reply(item: Reply, strict: bool) -> None:
    if item.content is not None and not isinstance(item.content, str):
        raise ValueError(f"reply content must be a string or None, got {item.content!r}")
    if item.finish_reason not in _FINISH_REASONS:
        raise ValueError(f"unknown finish_reason {item.finish_reason!r}")
    ids = set()
    for tc in item.tool_calls:
        if not isinstance(tc, ToolCall):
            raise ValueError(f"tool calls must be made with call() or call_raw(), got {tc!r}")
        for attr in ("id", "name"):
            if not (isinstance(getattr(tc, attr), str) and getattr(tc, attr)):
                raise ValueError(f"tool call {attr} must be a non-empty string: {tc!r}")
        if not isinstance(tc.arguments, str):
            raise ValueError(f"tool call arguments must be a string: {tc!r}")
        if strict and tc.id in ids:
            raise ValueError(f"duplicate tool call id {tc.id!r} in one reply")
        ids.add(tc.id)


def check_scripted(item: object, strict: bool = True) -> None:
    """Raise ValueError for a malformed scripted item, so test authors hear at
    enqueue time rather than from a confusing client error later.

    ``strict`` also refuses repeated tool call ids. A responder is checked
    without it, so it can imitate servers that do repeat them."""
    if not isinstance(item, Reply | ErrorReply | RawReply | Drop | Hang | Drip | Cut):
        raise ValueError(
            "expected reply(), error(), raw(), html(), drop(), hang(), drip() or cut(), "
            f"got {item!r}"
        )
    _check_number("delay", item.delay)
    if isinstance(item, Cut):
        if not isinstance(item.item, Reply):
            raise ValueError(f"cut() takes reply(), got {item.item!r}")
        after = item.after
        if not (isinstance(after, int) and not isinstance(after, bool) and after >= 0):
            raise ValueError(f"cut after must be an int >= 0, got {after!r}")
        if not isinstance(item.hang, bool):
            raise ValueError(f"cut hang must be a bool, got {item.hang!r}")
        check_scripted(item.item, strict)
    if isinstance(item, Drip):
        if not isinstance(item.item, Reply | ErrorReply | RawReply):
            raise ValueError(f"drip() takes reply(), error() or raw(), got {item.item!r}")
        _check_number("drip interval", item.interval)
        if not (isinstance(item.chunk, int) and item.chunk >= 1):
            raise ValueError(f"drip chunk must be an int >= 1, got {item.chunk!r}")
        check_scripted(item.item, strict)
    elif isinstance(item, ErrorReply):
        if not (isinstance(item.status, int) and 400 <= item.status <= 599):
            raise ValueError(f"error status must be an int in 400..599, got {item.status!r}")
        if not isinstance(item.message, str):
            raise ValueError("error message must be a string")
        _check_headers(item.headers, "error")
    elif isinstance(item, RawReply):
        if not (isinstance(item.status, int) and 200 <= item.status <= 599):
            raise ValueError(f"raw status must be an int in 200..599, got {item.status!r}")
        if not isinstance(item.body, bytes) or not isinstance(item.content_type, str):
            raise ValueError("raw body must be bytes or str, and content_type a str")
        _check_headers(item.headers, "raw")
    elif isinstance(item, Reply):
        _check_reply(item, strict)
