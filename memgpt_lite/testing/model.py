"""In-process fake models, for unit tests of the loop: no HTTP, no threads.

`ScriptedModel(*replies)` answers each request with the next scripted reply,
`FunctionModel(fn)` with `fn(messages, tools)`. A reply is what the fake
server plays (`reply()`, `say()`, `call()` from script.py), so one script
serves both; `error(...)` or an `LLMError` instance (`ContextWindowExceeded`
included) makes the request fail instead, as the real model would report it
(without retries: there is no transport to retry).

They answer as a streaming endpoint does: the text, then each tool call's
name and its arguments, in pieces of `piece_chars` characters (`TextDelta`,
`ToolCallDelta`), then the `Completion`, built by the code that reads real
answers (llm/answer.py). With `LLMConfig.stream` False, or `streaming=False`
(a server that cannot stream), the `Completion` comes alone, `streamed` False.

Each request is checked as the fake server checks it (validation.py): every
tool call answered by exactly one tool message, valid roles and tools, JSON
the real API would parse. A violation raises `InvalidRequest`, an
AssertionError, so the loop under test cannot take it for an endpoint failure;
it is also kept in `rejections`. `requests` records each valid request.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from memgpt_lite.errors import LLMError
from memgpt_lite.llm.answer import completion_from_message, is_context_length_error, one_line
from memgpt_lite.llm.model import ContextWindowExceeded, ModelChunk, TextDelta, ToolCallDelta
from memgpt_lite.llm.tokens import TokenCounter
from memgpt_lite.models import LLMConfig, ToolChoice
from memgpt_lite.testing.script import ErrorReply, Reply, check_scripted
from memgpt_lite.testing.validation import (
    Rejected,
    check_context,
    parse_request_body,
    validate_chat_request,
)
from memgpt_lite.text import clean_text

# What a fake model can play: a reply, an error status, or an error to raise.
ModelAnswer = Reply | ErrorReply | LLMError


class InvalidRequest(AssertionError):
    """The code under test sent a request the real API would refuse."""


class ScriptExhausted(AssertionError):
    """A ScriptedModel was asked once more than it had replies for."""


@dataclass(frozen=True)
class ModelRequest:
    """One request as the model received it (a copy: later changes to the
    caller's lists do not show here)."""

    config: LLMConfig
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]


def _jsonable(value: Any) -> Any:
    # What the openai client's encoder also accepts in a request body.
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_unset=True, by_alias=True)
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def check_answer(item: object) -> ModelAnswer:
    """`item` if a fake model can play it, else a ValueError saying what can."""
    if isinstance(item, LLMError):
        return item
    if not isinstance(item, Reply | ErrorReply):
        raise ValueError(
            "a fake model plays reply(), say(), error() or an LLMError to raise; "
            f"{item!r} needs the FakeOpenAIServer"
        )
    check_scripted(item)
    return item


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


class _FakeModel:
    """What both fakes share: checking, recording, and answering a reply."""

    def __init__(
        self,
        *,
        name: str = "the fake model",
        piece_chars: int = 4,
        streaming: bool = True,
        reject_required_tool_choice: bool = False,
        context_window: int | None = None,
    ) -> None:
        if not (isinstance(piece_chars, int) and piece_chars >= 1):
            raise ValueError(f"piece_chars must be an int >= 1, not {piece_chars!r}")
        self.name = name
        self.piece_chars = piece_chars
        self.streaming = streaming
        self.reject_required_tool_choice = reject_required_tool_choice
        self.context_window = context_window
        self.seconds_in_calls = 0.0
        self.requests: list[ModelRequest] = []
        self.rejections: list[str] = []
        self.closed = False
        self._counters: dict[str, TokenCounter] = {}

    def close(self) -> None:
        self.closed = True

    def _answer(self, request: ModelRequest) -> object:
        raise NotImplementedError

    async def stream(
        self, config: LLMConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> AsyncIterator[ModelChunk]:
        """The answer to one request: deltas (when streaming), then the Completion."""
        if self.closed:
            raise AssertionError(f"{self.name} was used after close()")
        started = time.perf_counter()
        tool_choice: ToolChoice = config.tool_choice
        if tools and tool_choice == "required" and self.reject_required_tool_choice:
            tool_choice = "auto"  # as OpenAIChatModel falls back
        request, prompt_tokens = self._check(config, messages, tools, tool_choice)
        self.requests.append(request)
        answer = check_answer(self._answer(request))
        self.seconds_in_calls += time.perf_counter() - started
        if isinstance(answer, LLMError):
            raise answer
        if isinstance(answer, ErrorReply):
            raise self._error(answer)
        if answer.delay:
            await asyncio.sleep(answer.delay)
        streamed = config.stream and self.streaming
        for chunk in self._chunks(answer, prompt_tokens, tool_choice, streamed):
            await asyncio.sleep(0)  # a point where the caller may be cancelled, as with HTTP
            yield chunk

    def _check(
        self,
        config: LLMConfig,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        tool_choice: ToolChoice,
    ) -> tuple[ModelRequest, int]:
        """The request as the server would read it, and its prompt tokens (0
        without a context window); InvalidRequest for what the API refuses."""
        body: dict[str, Any] = {"model": config.model, "messages": messages}
        if tools:
            body |= {"tools": tools, "tool_choice": tool_choice}
        try:
            parsed = parse_request_body(json.dumps(body, default=_jsonable).encode())
            validate_chat_request(parsed, False)
            prompt_tokens = 0
            if self.context_window is not None:
                counter = self._counters.get(config.model) or TokenCounter(config.model)
                self._counters[config.model] = counter
                prompt_tokens = check_context(counter, parsed, self.context_window)
        except Rejected as exc:
            if exc.code == "context_length_exceeded":
                raise ContextWindowExceeded(
                    f"{self.name} refused the request as too long: {exc.message}"
                ) from None
            raise self._invalid(f"an invalid request: {exc.message}") from None
        except (TypeError, ValueError) as exc:  # what json.dumps or the strict parse refuse
            raise self._invalid(f"a body that is not valid JSON: {exc}") from None
        request = ModelRequest(config.model_copy(), parsed["messages"], parsed.get("tools") or [])
        return request, prompt_tokens

    def _invalid(self, problem: str) -> InvalidRequest:
        message = f"{self.name} got {problem}"
        self.rejections.append(message)
        return InvalidRequest(message)

    def _error(self, answer: ErrorReply) -> LLMError:
        if is_context_length_error(answer.code, answer.message):
            return ContextWindowExceeded(
                f"{self.name} refused the request as too long: {one_line(answer.message)}"
            )
        return LLMError(f"{self.name} answered {answer.status}: {one_line(answer.message)}")

    def _chunks(
        self, answer: Reply, prompt_tokens: int, tool_choice: ToolChoice, streamed: bool
    ) -> Iterable[ModelChunk]:
        calls = [
            {"id": tc.id, "function": {"name": tc.name, "arguments": tc.arguments}}
            for tc in answer.tool_calls
        ]
        message = {"content": answer.content, "tool_calls": calls or None}
        usage = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens}
        completion = completion_from_message(message, usage, self.name, streamed=streamed)
        completion.tool_choice = tool_choice
        if streamed:  # pieces made valid text, as the endpoint's are when parsed
            for piece in _pieces(answer.content or "", self.piece_chars):
                yield TextDelta(clean_text(piece))
            for index, tool_call in enumerate(completion.tool_calls):
                yield ToolCallDelta(index, tool_call.name, "")  # as OpenAI: the name first
                for piece in _pieces(answer.tool_calls[index].arguments, self.piece_chars):
                    yield ToolCallDelta(index, None, clean_text(piece))
        yield completion


class ScriptedModel(_FakeModel):
    """Answers each request with the next of `replies` (more with `enqueue`);
    a request with none left raises ScriptExhausted."""

    def __init__(self, *replies: ModelAnswer, **options: Any) -> None:
        super().__init__(**options)
        self._queue: deque[ModelAnswer] = deque()
        self.enqueue(*replies)

    def enqueue(self, *replies: ModelAnswer) -> None:
        """Append answers; one a fake model cannot play raises ValueError now."""
        self._queue.extend(check_answer(reply) for reply in replies)

    def pending(self) -> int:
        return len(self._queue)

    def _answer(self, request: ModelRequest) -> object:
        if not self._queue:
            last = request.messages[-1].get("content")
            raise ScriptExhausted(
                f"ScriptedModel has no reply left for request {len(self.requests)} "
                f"(its last message: {one_line(str(last), 80)!r})"
            )
        return self._queue.popleft()


class FunctionModel(_FakeModel):
    """Answers each request with `fn(messages, tools)`."""

    def __init__(
        self,
        fn: Callable[[list[dict[str, Any]], list[dict[str, Any]]], ModelAnswer],
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.fn = fn

    def _answer(self, request: ModelRequest) -> object:
        return self.fn(request.messages, request.tools)
