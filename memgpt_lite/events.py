"""What a step reports while it runs: one pydantic model per kind of event.

The step core (loop/step.py) yields these in order; `agent.stream()` and
`agent.astream()` hand them to the caller as they happen, and `agent.step()`
keeps only the last. Every event has a `type` naming its kind, so a stream
serializes to JSON lines (or server-sent events) and parses back through
`StepEvent`. A step ends with exactly one `StepFinished` or `StepFailed`.

Plain data beside models.py, below every layer that runs a step: the loop
makes these, and the command line, the server and users' code read them
without importing the loop.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from memgpt_lite.errors import MemGPTError
from memgpt_lite.models import StepResult, ToolCall, Usage
from memgpt_lite.step_input import Answer


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    step_id: str


class StepStarted(_Event):
    """The user's message is stored, or, for a step that goes on after an
    approval request, the user's answers (`approvals`: approvals, denials
    and client-side tools' results) are taken; the step has the agent's
    step lock."""

    type: Literal["step_started"] = "step_started"
    agent_id: str
    user_message: str
    approvals: list[Answer] = Field(default_factory=list)


class RequestSent(_Event):
    """A request went to the model: the window as sent, counted by us."""

    type: Literal["request_sent"] = "request_sent"
    prompt_tokens: int
    messages: int
    # The ids of the messages the step stored before this request went: a
    # client showing them as they come reads these, not the answer to this
    # request, which may be stored by the time it looks.
    stored: list[str] = Field(default_factory=list)


class ThoughtDelta(_Event):
    """The next piece of the model's text as it writes it: its inner thought
    when it calls tools, the reply itself when it answers in plain text."""

    type: Literal["thought_delta"] = "thought_delta"
    text: str


class MessageDelta(_Event):
    """The next piece of a `send_message` text, shown while the model still
    writes the call. The whole text follows as a `ReplyDelivered`."""

    type: Literal["message_delta"] = "message_delta"
    text: str
    # Which tool call of the model's answer the text is of: an answer with
    # two send_message calls streams two texts.
    index: int = 0


class ToolCallStarted(_Event):
    """A tool of the model's answer is about to run."""

    type: Literal["tool_call_started"] = "tool_call_started"
    call: ToolCall


class ToolReturned(_Event):
    """A tool call's result, as the model will see it."""

    type: Literal["tool_returned"] = "tool_returned"
    call_id: str
    name: str
    content: str
    ok: bool


class ApprovalRequested(_Event):
    """The model's answer calls tools that need the user's approval: the
    answer is stored, and none of its calls runs before the user approves or
    denies them (`calls`). The step ends with stop reason "approval_required";
    a step that answers them goes on from here."""

    type: Literal["approval_requested"] = "approval_requested"
    message_id: str
    calls: list[ToolCall]


class ReplyDelivered(_Event):
    """A reply reached the user: a `send_message` that ran, or a plain text answer."""

    type: Literal["reply_delivered"] = "reply_delivered"
    text: str


class UsageReported(_Event):
    """Tokens the model endpoint counted for one answer."""

    type: Literal["usage"] = "usage"
    usage: Usage


class Compacted(_Event):
    """Older messages left the window (folded into the summary, or dropped)."""

    type: Literal["compacted"] = "compacted"
    evicted: int
    summarized: bool
    tokens_before: int
    tokens_after: int


class MemoryWarned(_Event):
    """The window passed the warning threshold; the model was told to save what matters."""

    type: Literal["memory_warning"] = "memory_warning"
    prompt_tokens: int


class WindowLearned(_Event):
    """The model server runs a smaller context than the agent's window (it
    refused a request as too long, or answered from a truncated prompt): the
    agent now works within `tokens`, stored as its context_window. `fix` is
    one line naming the server's setting and ours, to get `previous` back."""

    type: Literal["window_learned"] = "window_learned"
    tokens: int
    previous: int
    server: str
    fix: str


class StepFinished(_Event):
    """The step ended; `result` holds all it stored and why it stopped."""

    type: Literal["step_finished"] = "step_finished"
    result: StepResult


class StepFailed(_Event):
    """The step ended with an error. What it stored stays consistent: a user
    message the model never answered is left out of later requests."""

    type: Literal["step_failed"] = "step_failed"
    message: str
    error_type: str
    result: StepResult
    # The exception itself, for the drivers that raise it; not serialized.
    error: MemGPTError | None = Field(default=None, exclude=True, repr=False)


StepEvent = Annotated[
    StepStarted
    | RequestSent
    | ThoughtDelta
    | MessageDelta
    | ToolCallStarted
    | ToolReturned
    | ApprovalRequested
    | ReplyDelivered
    | UsageReported
    | Compacted
    | MemoryWarned
    | WindowLearned
    | StepFinished
    | StepFailed,
    Field(discriminator="type"),
]
STEP_EVENT = TypeAdapter(StepEvent)
