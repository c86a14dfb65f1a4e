"""The model seam: what the loop needs from a language model.

A `Model` answers one chat request as a stream of chunks: the text of the
answer (`TextDelta`) and the pieces of its tool calls (`ToolCallDelta`) as the
model writes them, then exactly one `Completion`, the whole answer, last. A
model that cannot stream yields the `Completion` alone. The loop acts on the
`Completion` only; the deltas are there to be shown while they arrive.

`OpenAIChatModel` (openai_chat.py) is the implementation for any
OpenAI-compatible endpoint; `memgpt_lite.testing.model` has in-process fakes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from memgpt_lite.errors import LLMError
from memgpt_lite.llm.server_window import ServerWindow
from memgpt_lite.models import LLMConfig, ToolCall, ToolChoice, Usage


class ContextWindowExceeded(LLMError):
    """The endpoint refused the request as longer than the model's context
    window; `stated` is the window its refusal names, if it names one."""

    def __init__(self, message: str, stated: ServerWindow | None = None) -> None:
        super().__init__(message)
        self.stated = stated


@dataclass
class Completion:
    """A whole answer of the model."""

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    # Which tool_choice worked: "auto" when the endpoint refused "required".
    tool_choice: ToolChoice = "required"
    # Whether the answer came as a stream: False when streaming was asked for
    # and the endpoint could not, so the caller can stop asking.
    streamed: bool = False

    @property
    def is_empty(self) -> bool:
        """No tool call and no text (or only whitespace): nothing to act on or store."""
        return not self.tool_calls and not (self.content and self.content.strip())


@dataclass(frozen=True)
class TextDelta:
    """The next piece of the answer's text (the inner thought, or a plain reply)."""

    text: str


@dataclass(frozen=True)
class ToolCallDelta:
    """The next piece of tool call number `index` (0, 1, ... in the answer):
    its name on the first piece, then its JSON arguments as they are written."""

    index: int
    name: str | None
    arguments: str


ModelChunk = TextDelta | ToolCallDelta | Completion


@runtime_checkable
class Model(Protocol):
    """A language model the loop can call."""

    # Names the model in messages, e.g. "the model endpoint http://localhost:11434/v1".
    name: str
    # Seconds spent waiting for the model, so callers can tell their time from its.
    seconds_in_calls: float

    def stream(
        self, config: LLMConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> AsyncIterator[ModelChunk]:
        """Answer one request with the model and options in `config`. Raises
        LLMError (ContextWindowExceeded for a request too long) on failure.
        The window's messages come as read-only `RequestMessage`s, sent
        again on later turns: a model that must change one changes a copy."""
        ...

    def close(self) -> None:
        """Release connections; the model may not be used afterwards."""
        ...


@runtime_checkable
class WindowReporter(Protocol):
    """A model whose server can be asked what context it runs the model with
    (local servers: see server_window.py). Optional: fakes need not."""

    async def server_window(self, model: str) -> ServerWindow | None:
        """The context the server reports for `model`, or None."""
        ...


async def complete(
    model: Model,
    config: LLMConfig,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
) -> Completion:
    """The model's whole answer, the deltas skipped."""
    completion = None
    async for chunk in model.stream(config, messages, tools):
        if isinstance(chunk, Completion):
            completion = chunk
    if completion is None:
        raise LLMError(f"{model.name} ended its answer without a completion")
    return completion
