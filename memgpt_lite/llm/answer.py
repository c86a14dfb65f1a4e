"""What a chat completions endpoint answered, read tolerantly.

Both shapes of an answer end in the same `Completion`, through the same
repairs: a whole JSON chat completion (`completion_from`), and a streamed one,
whose server-sent events (`SSEDecoder`) carry chunks that `StreamedAnswer`
turns into deltas to show at once and, at the end, the whole message.

Small servers send odd things, so text is made valid (lone surrogates
replaced), content may be a list of parts, tool calls with missing or repeated
ids get fresh ids, and tool names the API would refuse in the history are made
safe. What cannot be read at all is one LLMError line naming the endpoint.

No network here, and no `openai`: the in-process fake model uses this too.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from memgpt_lite.errors import LLMError
from memgpt_lite.llm.model import Completion, ContextWindowExceeded, TextDelta, ToolCallDelta
from memgpt_lite.llm.server_window import stated_window
from memgpt_lite.models import ToolCall, Usage
from memgpt_lite.text import JSONProblem, clean_text, loads_strict

_CONTEXT_PHRASES = (
    "maximum context length",
    "context length",
    "context_length_exceeded",
    "context window",
    "context size",  # llama.cpp: "the request exceeds the available context size"
    "maximum model length",  # vLLM: "... is longer than the maximum model length of N"
    "too many tokens",
    "prompt is too long",
)

# ------------------------------------------------------------ words for things


def one_line(text: str, limit: int = 200) -> str:
    """`text` on one line, cut to `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def html_title(text: str) -> str:
    """' titled ...' for an HTML page with a title, else ''."""
    match = re.search(r"<title[^>]*>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
    return f" titled {one_line(match.group(1), 60)!r}" if match and match.group(1).strip() else ""


def looks_like_html(content_type: str, text: str) -> bool:
    return "html" in content_type.lower() or text.lstrip()[:1] == "<"


def body_summary(text: str, content_type: str = "") -> str:
    """What a non-JSON body was, in a few words: an HTML page or its start."""
    if looks_like_html(content_type, text):
        return f"an HTML page{html_title(text)}"
    return repr(one_line(text, 80)) if text.strip() else "an empty body"


def kind_of(value: Any) -> str:
    """What a JSON value is, in words: "an object", "a number"..."""
    return {dict: "an object", list: "a list", str: "a string", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__
    )


def is_context_length_error(code: object, text: str) -> bool:
    """Whether an endpoint's error (its code and message) says the request was too long."""
    text = text.lower()
    return code == "context_length_exceeded" or any(p in text for p in _CONTEXT_PHRASES)


def answered_error(error: Any, name: str) -> LLMError:
    """The LLMError for an error object found where an answer should be."""
    message = error.get("message") if isinstance(error, dict) else error
    code = error.get("code") if isinstance(error, dict) else None
    text = one_line(str(message))
    if is_context_length_error(code, text):
        stated = stated_window(text, error)
        return ContextWindowExceeded(f"{name} refused the request as too long: {text}", stated)
    return LLMError(f"{name} answered an error: {text}")


# ------------------------------------------------------- a whole completion


def completion_from(data: Any, name: str) -> Completion:
    """Our view of a chat completion's JSON, tolerant of what small servers
    send; an LLMError naming `name` (the endpoint) when there is no message."""
    if not isinstance(data, dict):
        raise LLMError(f"{name} answered {kind_of(data)}, not a chat completion")
    error = data.get("error")
    if "choices" not in data and error:
        raise answered_error(error, name)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        shown = body_summary(json.dumps(data, ensure_ascii=False))
        raise LLMError(f"{name} answered a completion with no choices: {shown}")
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        raise LLMError(f"{name} answered a completion whose first choice has no message")
    return completion_from_message(message, data.get("usage"), name)


def completion_from_message(
    message: dict[str, Any], usage: Any, name: str, streamed: bool = False
) -> Completion:
    """The `Completion` of an assistant message (content, tool_calls) and the
    answer's usage, with every repair applied: the one way both shapes of an
    answer, and the fake model's, become a Completion."""
    return Completion(
        content=_content(message.get("content"), name),
        tool_calls=_tool_calls(message.get("tool_calls"), name),
        usage=_usage(usage),
        streamed=streamed,
    )


def safe_tool_name(name: str) -> str:
    """A name the API accepts when the call is sent back in the history. Some
    local models prefix "functions." or invent names with spaces; the loop then
    answers the call as an unknown tool."""
    name = name.removeprefix("functions.")
    cleaned = re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64]
    return cleaned or "missing_tool_name"


def _text_of(content: Any, name: str) -> str | None:
    """Content as text: a string, or the text of a list of content parts."""
    if isinstance(content, list):  # content parts, as some servers send
        texts = [p.get("text") for p in content if isinstance(p, dict)]
        content = "".join(t for t in texts if isinstance(t, str))
    if content is not None and not isinstance(content, str):
        raise LLMError(f"{name} answered a message whose content is {kind_of(content)}, not text")
    return content


def _content(content: Any, name: str) -> str | None:
    text = _text_of(content, name)
    return (clean_text(text) or None) if text is not None else None


def _arguments_text(arguments: Any) -> str:
    if arguments is None:
        return ""
    if not isinstance(arguments, str):  # an object instead of JSON text
        return json.dumps(arguments, ensure_ascii=False)
    return arguments


def _tool_calls(raw_calls: Any, name: str) -> list[ToolCall]:
    if raw_calls is None:
        return []
    if not isinstance(raw_calls, list):
        raise LLMError(f"{name} answered a message whose tool_calls is {kind_of(raw_calls)}")
    calls: list[ToolCall] = []
    seen: set[str] = set()
    for raw in raw_calls:
        if not isinstance(raw, dict):
            raise LLMError(f"{name} answered a tool call that is {kind_of(raw)}, not an object")
        function = raw.get("function") if isinstance(raw.get("function"), dict) else {}
        call_id = raw.get("id") if isinstance(raw.get("id"), str) else None
        call_id = clean_text(call_id) if call_id and call_id not in seen else None
        call_id = call_id or f"call_{uuid.uuid4().hex[:24]}"
        seen.add(call_id)
        tool = function.get("name") if isinstance(function.get("name"), str) else ""
        arguments = _arguments_text(function.get("arguments"))
        calls.append(ToolCall(id=call_id, name=safe_tool_name(tool), arguments=arguments))
    return calls


def _usage(raw: Any) -> Usage:
    usage = Usage(requests=1)
    if isinstance(raw, dict):
        for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
            value = raw.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                setattr(usage, key, value)
    return usage


# ---------------------------------------------------------- a streamed one


class SSEDecoder:
    """The data of each server-sent event, from the body's bytes in whatever
    pieces they arrive.

    Chat servers put each chunk's JSON on one `data:` line, and some leave out
    the blank line that should end an event; so each data line is taken as an
    event as soon as its line ends (nothing waits for the blank line).
    Comments (`:`), `event:`/`id:`/`retry:` fields and blank lines are skipped.
    """

    def __init__(self) -> None:
        self._pending: list[bytes] = []  # the start of a line not ended yet
        self.other_line = ""  # the first line that was none of those: for errors

    def feed(self, data: bytes) -> list[str]:
        """The data of the events whose line `data` completes."""
        if b"\n" not in data and b"\r" not in data:
            self._pending.append(data)  # joined once the line ends: linear time
            return []
        if self._pending:
            data = b"".join([*self._pending, data])
            self._pending = []
        lines = data.splitlines(keepends=True)  # bytes: only \r, \n and \r\n end lines
        if not lines[-1].endswith(b"\n"):  # unfinished, or a \r whose \n may follow
            self._pending.append(lines.pop())
        return [event for line in lines if (event := self._data(line)) is not None]

    def end(self) -> list[str]:
        """The data of a last line that the body ended without ending."""
        rest = b"".join(self._pending)
        self._pending = []
        return [event for line in rest.splitlines() if (event := self._data(line)) is not None]

    def _data(self, raw: bytes) -> str | None:
        line = raw.rstrip(b"\r\n")
        if line.startswith(b"data:"):
            value = line[5:]
            return (value[1:] if value.startswith(b" ") else value).decode("utf-8", "replace")
        if line and not line.startswith((b":", b"event:", b"id:", b"retry:")):
            self.other_line = self.other_line or line.decode("utf-8", "replace")
        return None


Delta = TextDelta | ToolCallDelta


def merge_deltas(deltas: list[Delta]) -> list[Delta]:
    """`deltas` with each run of text pieces, and of argument pieces of one
    call, joined into one: what came in one read of the body is passed on
    once, not piece by piece (a stream read late comes in a few reads)."""
    merged: list[Delta] = []
    run: list[str] = []  # the pieces of the last delta in `merged`, if a run

    def close_run() -> None:
        if len(run) > 1:
            last = merged[-1]
            joined = "".join(run)
            merged[-1] = (
                TextDelta(joined)
                if isinstance(last, TextDelta)
                else ToolCallDelta(last.index, last.name, joined)
            )
        run.clear()

    for delta in deltas:
        last = merged[-1] if merged else None
        if isinstance(delta, TextDelta) and isinstance(last, TextDelta):
            run.append(delta.text)
            continue
        if (
            isinstance(delta, ToolCallDelta)
            and isinstance(last, ToolCallDelta)
            and delta.index == last.index
            and delta.name is None
        ):
            run.append(delta.arguments)
            continue
        close_run()
        merged.append(delta)
        run.append(delta.text if isinstance(delta, TextDelta) else delta.arguments)
    close_run()
    return merged


@dataclass
class _CallPieces:
    id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)

    def as_raw(self) -> dict[str, Any]:
        function = {"name": self.name or "", "arguments": "".join(self.arguments)}
        return {"id": self.id, "type": "function", "function": function}


class StreamedAnswer:
    """The chunks (`chat.completion.chunk` objects) of one streamed answer,
    taken one at a time: `take` gives the deltas each one adds, `completion`
    the whole answer at the end. Tool call pieces are put together by their
    `index` (id and name on the first piece, then pieces of the arguments)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.chunks = 0  # chunks taken, [DONE] not counted
        self.done = False  # [DONE] came
        self.finished = False  # a finish_reason came
        self._text: list[str] = []
        self._calls: list[_CallPieces] = []
        self._positions: dict[int, int] = {}  # the server's index -> ours (0, 1, ...)
        self._usage: Any = None

    def take(self, data: str) -> list[TextDelta | ToolCallDelta]:
        """The deltas in one event's data; an LLMError if it is not a chunk."""
        if data.strip() == "[DONE]":
            self.done = True
            return []
        chunk = self._parse(data)
        self.chunks += 1
        if isinstance(chunk.get("usage"), dict):  # in its own chunk, or the last one
            self._usage = chunk["usage"]
        delta = self._delta(chunk)
        if delta is None:
            return []
        deltas: list[TextDelta | ToolCallDelta] = []
        text = _text_of(delta.get("content"), self.name)
        if text:
            self._text.append(text)
            deltas.append(TextDelta(clean_text(text)))
        pieces = delta.get("tool_calls")
        if pieces is not None and not isinstance(pieces, list):
            raise LLMError(f"{self.name} sent a chunk whose tool_calls is {kind_of(pieces)}")
        for piece in pieces or ():
            if (call_delta := self._tool_piece(piece)) is not None:
                deltas.append(call_delta)
        return deltas

    def completion(self) -> Completion:
        """The whole answer, repaired like a whole completion."""
        message = {
            "content": "".join(self._text) if self._text else None,
            "tool_calls": [call.as_raw() for call in self._calls] or None,
        }
        return completion_from_message(message, self._usage, self.name, streamed=True)

    def _parse(self, data: str) -> dict[str, Any]:
        # Strict, but neither depth-checked nor cleaned as a whole: a chunk is
        # small, and only the strings taken from it are used (and cleaned).
        try:
            chunk = loads_strict(data)
        except JSONProblem as exc:
            reason = re.sub(r"^not valid JSON \((.*)\)$", r"\1", str(exc))
            raise LLMError(
                f"{self.name} sent a chunk that is not valid JSON ({one_line(reason, 100)}): "
                f"{body_summary(data)}"
            ) from None
        if not isinstance(chunk, dict):
            raise LLMError(f"{self.name} sent a chunk that is {kind_of(chunk)}, not an object")
        if chunk.get("error") and not chunk.get("choices"):
            raise answered_error(chunk["error"], self.name)
        return chunk

    def _delta(self, chunk: dict[str, Any]) -> dict[str, Any] | None:
        """The delta of the first choice, if the chunk has one."""
        choices = chunk.get("choices")
        if choices is None:
            return None
        if not isinstance(choices, list):
            raise LLMError(f"{self.name} sent a chunk whose choices is {kind_of(choices)}")
        for choice in choices:
            if not isinstance(choice, dict):
                raise LLMError(f"{self.name} sent a choice that is {kind_of(choice)}")
            if choice.get("index", 0) not in (0, None):
                continue  # another choice (n > 1): only the first is used
            if isinstance(choice.get("finish_reason"), str):
                self.finished = True
            delta = choice.get("delta")
            return delta if isinstance(delta, dict) else None
        return None

    def _tool_piece(self, piece: Any) -> ToolCallDelta | None:
        if not isinstance(piece, dict):
            raise LLMError(f"{self.name} sent a tool call piece that is {kind_of(piece)}")
        call_id = piece.get("id") if isinstance(piece.get("id"), str) and piece["id"] else None
        position = self._position(piece.get("index"), call_id)
        call = self._calls[position]
        call.id = call.id or call_id
        function = piece.get("function") if isinstance(piece.get("function"), dict) else {}
        name = function.get("name") if isinstance(function.get("name"), str) else None
        new_name = None
        if name and call.name is None:  # the name comes once; repeats are not appended
            call.name = name
            new_name = safe_tool_name(name)
        arguments = _arguments_text(function.get("arguments"))
        call.arguments.append(arguments)
        if new_name is None and not arguments:
            return None
        return ToolCallDelta(position, new_name, arguments)

    def _position(self, index: Any, call_id: str | None) -> int:
        """Our number for the call a piece belongs to. Without an index (some
        servers), a piece with a new id starts a call; others continue the last."""
        if isinstance(index, int) and not isinstance(index, bool):
            if index not in self._positions:
                self._positions[index] = len(self._calls)
                self._calls.append(_CallPieces())
            return self._positions[index]
        last = self._calls[-1] if self._calls else None
        if last is None or (call_id is not None and last.id not in (None, call_id)):
            self._calls.append(_CallPieces())
        return len(self._calls) - 1
