"""Letta's send_message: POST /v1/agents/{id}/messages (a LettaResponse, or
with `streaming` server-sent events) and /messages/stream (always events).

A stream sends, as Letta does, each message as `data: {json}` once the
model's answer that holds it is stored (so its id is the stored one, as
list_messages shows it), then a stop_reason and a usage_statistics message,
then `data: [DONE]`. With `stream_tokens`, the model's text also comes as it
is written: reasoning_message and assistant_message pieces that share one id
per answer (not the stored id: the message is stored once it is whole).

Each send is a run (run_life.py): every chunk carries its `run_id` and a
`seq_id`, and a LettaResponse names it (`run_id` on each message, `usage.
run_ids`); `background` runs the step apart from the connection, its chunks
kept to be read again (run_stream.py).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterable
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Header
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response, StreamingResponse

from memgpt_lite.errors import ApprovalError, LLMError
from memgpt_lite.events import (
    MessageDelta,
    RequestSent,
    StepEvent,
    StepFailed,
    StepFinished,
    StepStarted,
    ThoughtDelta,
    ToolCallStarted,
)
from memgpt_lite.models import AgentState, Message, StepInput, StepResult, utcnow
from memgpt_lite.server.api_agents import step_event_batches, step_result
from memgpt_lite.server.context import Context, ServerContext, User
from memgpt_lite.server.letta.bodies import SendRequest
from memgpt_lite.server.letta.messages import LettaMessage, keep, otid, to_letta
from memgpt_lite.server.letta.run_life import STOP_REASONS, LiveRun, begin_run
from memgpt_lite.server.letta.run_stream import (
    RunChunks,
    follow_response,
    pinged,
    run_in_background,
)
from memgpt_lite.server.sendonce import SendOnce, send_once
from memgpt_lite.server.sse import sse_response
from memgpt_lite.step_input import StepWithClientTools
from memgpt_lite.tools.client import check_client_tool_names
from memgpt_lite.tools.sets import TOOL_SETS

router = APIRouter(prefix="/v1/agents", tags=["letta"])

IdempotencyKey = Annotated[str | None, Header()]

# How a background send's own stream follows its kept chunks (Letta's defaults).
FOLLOW_BATCH = 100
FOLLOW_POLL_SECONDS = 0.1


def stop_reason(reason: str) -> dict[str, Any]:
    return {"message_type": "stop_reason", "stop_reason": reason}


def usage_statistics(result: StepResult) -> dict[str, Any]:
    usage = result.usage
    return {
        "message_type": "usage_statistics",
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
        "step_count": usage.requests,
        "context_tokens": result.prompt_tokens_estimate or None,
        "run_ids": None,
    }


def letta_messages(
    stored: Iterable[Message], result: StepResult, body: SendRequest
) -> list[LettaMessage]:
    """A step's stored messages (the user's left out) as Letta's; an answer
    whose calls wait for approval as an approval request."""
    ok_by_call = {r.call.id: r.ok for r in result.tool_results}
    waiting = {call.id for call in result.pending_approvals}
    out = []
    for message in stored:
        if message.role != "user":
            out += to_letta(
                message,
                use_assistant_message=body.use_assistant_message,
                ok_by_call=ok_by_call,
                waiting=waiting,
            )
    return keep(out, body.include_return_message_types)


def letta_response(result: StepResult, body: SendRequest, run_id: str) -> dict[str, Any]:
    """A LettaResponse: its messages and usage name the send's run."""
    messages = letta_messages(result.messages, result, body)
    for message in messages:
        message["run_id"] = run_id
    usage = {**usage_statistics(result), "run_ids": [run_id]}
    return {
        "messages": messages,
        "stop_reason": stop_reason(STOP_REASONS[result.stop_reason]),
        "usage": usage,
    }


def marked(message: LettaMessage, marks: dict[str, Any]) -> LettaMessage:
    """`message` with `marks` set on it (a group's send: which agent said
    it), but for a tool return's `name`, which is its tool's."""
    if message["message_type"] == "tool_return_message":
        marks = {k: v for k, v in marks.items() if k != "name"}
    return {**message, **marks} if marks else message


def json_response(content: dict[str, Any]) -> Response:
    """`content` as FastAPI would answer it (datetimes in ISO 8601), but
    encoded in one pass: FastAPI first walks every value of a returned dict
    (jsonable_encoder), which costs a send as much as its own storing."""
    text = json.dumps(
        content, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_iso_date
    )
    return Response(text, media_type="application/json")


def _iso_date(value: object) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def data(item: dict[str, Any] | str) -> str:
    text = item if isinstance(item, str) else json.dumps(item, default=str, ensure_ascii=False)
    return f"data: {text}\n\n"


class LettaStream:
    """Turns one step's events into Letta's streamed messages."""

    def __init__(
        self,
        ctx: ServerContext,
        agent_id: str,
        body: SendRequest,
        conversation: str | None = None,
        marks: dict[str, Any] | None = None,
    ) -> None:
        self.ctx, self.agent_id, self.body = ctx, agent_id, body
        self.conversation = conversation  # the agent's, None: its default one
        # Set on every message (a group's send: which agent said it, group_sends.py).
        self.marks = marks or {}
        self.sent: set[str] = set()  # stored message ids already sent
        self.requests = 0
        self.chunk_id = ""
        self.streamed: set[str] = set()  # kinds of text streamed in this answer
        # The calls of the answer that waited for approval, which this step
        # runs first (see `_after_answered`).
        self.resuming = False
        self.resumed_calls: set[str] = set()

    async def on(self, event: StepEvent) -> list[dict[str, Any]]:
        if isinstance(event, StepStarted) and event.approvals:
            self.resuming = True
            self.requests = 1  # the answer that waited was the step's first request
            return []
        if isinstance(event, ToolCallStarted) and self.resuming:
            self.resumed_calls.add(event.call.id)
            return []
        if isinstance(event, RequestSent):
            out = await self._stored_so_far(event) if self.requests else []
            self.resuming = False
            self.requests += 1
            self.chunk_id, self.streamed = f"msg-{uuid.uuid4().hex}", set()
            return out
        if isinstance(event, ThoughtDelta | MessageDelta):
            return self._piece(event)
        if isinstance(event, StepFinished):
            return [
                *self._new(event.result.messages, event.result),
                stop_reason(STOP_REASONS[event.result.stop_reason]),
                usage_statistics(event.result),
            ]
        if isinstance(event, StepFailed):
            return self._failed(event)
        return []

    def _piece(self, event: ThoughtDelta | MessageDelta) -> list[dict[str, Any]]:
        if not self.body.stream_tokens or not event.text:
            return []
        common = {"id": self.chunk_id, "date": utcnow(), "step_id": event.step_id, **self.marks}
        # The pieces of one kind share an otid, as the pieces of one message.
        common["otid"] = otid(self.chunk_id, int(isinstance(event, MessageDelta)))
        if isinstance(event, ThoughtDelta):
            self.streamed.add("reasoning_message")
            piece = {"message_type": "reasoning_message", "reasoning": event.text}
            return keep([{**common, **piece}], self.body.include_return_message_types)
        if not self.body.use_assistant_message:
            return []
        self.streamed.add("assistant_message")
        piece = {"message_type": "assistant_message", "content": event.text}
        return keep([{**common, **piece}], self.body.include_return_message_types)

    async def _stored_so_far(self, sent: RequestSent) -> list[dict[str, Any]]:
        """The step's answers stored before request `sent` went, since the
        last look (the one before this request is stored once its tools ran;
        the answer to this one, which the step may store while this reads,
        is sent when the next request goes, or at the end)."""
        workspace = self.ctx.workspace
        recent = await run_in_threadpool(
            workspace.newest_messages, self.agent_id, 64, self.conversation
        )
        before = set(sent.stored)
        stored = [m for m in recent if m.step_id == sent.step_id and m.id in before]
        return self._new(self._after_answered(stored), None)

    def _after_answered(self, stored: list[Message]) -> list[Message]:
        """`stored` less, in a step that goes on after an approval, the turn's
        messages up to the answer that waited (an earlier stream sent them,
        that answer as its approval request): the answer whose calls this
        step ran (`resumed_calls`)."""
        if not self.resumed_calls:
            return stored
        answered = [
            i for i, m in enumerate(stored) if {c.id for c in m.tool_calls} & self.resumed_calls
        ]
        self.resumed_calls = set()
        return stored[answered[-1] + 1 :] if answered else stored

    def _new(self, stored: list[Message], result: StepResult | None) -> list[dict[str, Any]]:
        fresh = [m for m in stored if m.id not in self.sent]
        self.sent.update(m.id for m in fresh)
        out = letta_messages(fresh, result or StepResult(), self.body)
        # Text streamed in pieces (this answer's: the step's earlier answers
        # were sent at the next request) is not sent again whole.
        return [marked(m, self.marks) for m in out if m["message_type"] not in self.streamed]

    def _failed(self, event: StepFailed) -> list[dict[str, Any]]:
        reason = "llm_api_error" if isinstance(event.error, LLMError) else "error"
        error = {
            "message_type": "error_message",
            "run_id": "",  # the run's, as on every chunk (run_stream.py)
            "error_type": event.error_type,
            "message": event.message,
            "detail": None,
        }
        return [
            *self._new(event.result.messages, event.result),
            error,
            stop_reason(reason),
            usage_statistics(event.result),
        ]


def prepared_send(
    ctx: ServerContext,
    user: str,
    agent_id: str,
    body: SendRequest,
    conversation: str | None = None,
    background: bool = False,
) -> tuple[AgentState, StepInput, LiveRun]:
    """What a send needs before its step, in one worker thread's call rather
    than one each (each hand-over costs the event loop about as much as a
    read): the user's agent, what the request asks of it (`checked_input`)
    and its run, started (`begin_run`)."""
    state = ctx.agent_state(user, agent_id)
    step_input = checked_input(ctx, state, body, conversation)
    return state, step_input, begin_run(ctx, user, state.id, conversation, background)


def checked_input(
    ctx: ServerContext,
    state: AgentState,
    body: SendRequest,
    conversation: str | None = None,
) -> StepInput:
    """What the request asks the user's agent `state` (in `conversation`;
    None: its default one) to do. An older-style answer names the approval
    request it answers (the waiting answer's id): one that names another is
    refused, as Letta refuses it, rather than taken as the answer to
    whatever waits now."""
    step_input = body.step_input()
    if isinstance(step_input, StepWithClientTools):
        # The step checks them too; here a streamed send is a 422, not an error event.
        own = {*TOOL_SETS.get(state.settings.tool_set, {}), *state.tool_names}
        check_client_tool_names(step_input.client_tools, own)
    named = body.approval_request_ids()
    waiting = ctx.workspace.waiting_answer(state.id, conversation) if named else None
    if waiting is not None and (stale := sorted(named - {waiting.id})):
        raise ApprovalError(
            f"approval request {stale[0]!r} is not waiting; the request waiting is {waiting.id!r}"
        )
    return step_input


async def letta_frames(
    ctx: ServerContext,
    user: str,
    live: LiveRun,
    body: SendRequest,
    step_input: StepInput,
    once: SendOnce | None,
    ping_seconds: float | None = None,
    state: AgentState | None = None,
    marks: dict[str, Any] | None = None,
) -> AsyncIterator[str]:
    """The send's stream: its step's events (in the run's conversation) as
    Letta's chunks, each naming the run (run_stream.py), with a ping every
    `ping_seconds` (None: the server's) the step is silent. `state`: the
    run's agent, when read already; `marks`: as `LettaStream`'s."""
    agent_id, conversation = live.run.agent_id, live.run.conversation_id
    stream = LettaStream(ctx, agent_id, body, conversation, marks)
    chunks = RunChunks(live.run.id)
    batches = step_event_batches(
        ctx, user, agent_id, step_input, once, live.watch, conversation=conversation, state=state
    )
    every = (ping_seconds or ctx.runs.ping_seconds) if body.include_pings else None
    async for batch in pinged(batches, every):
        if batch is None:
            yield data(chunks.ping())
            continue
        # A batch's chunks go out in one write.
        frames = [data(chunks.stamp(item)) for event in batch for item in await stream.on(event)]
        if frames:
            yield "".join(frames)
    yield data("[DONE]")


async def letta_stream(
    ctx: ServerContext,
    user: str,
    agent_id: str,
    body: SendRequest,
    once: SendOnce | None,
    conversation: str | None = None,
    ping_seconds: float | None = None,
    marks: dict[str, Any] | None = None,
) -> StreamingResponse:
    """A streamed send (in the agent's `conversation`; None: its default
    one), as a run: followed as it goes, or, with `background`, run apart
    from the connection with its chunks kept. `marks`: as `LettaStream`'s."""
    state, step_input, live = await run_in_threadpool(
        prepared_send, ctx, user, agent_id, body, conversation, body.background
    )
    if not body.background:
        frames = letta_frames(ctx, user, live, body, step_input, once, ping_seconds, state, marks)
        return await sse_response(frames)
    stream = LettaStream(ctx, state.id, body, conversation, marks)
    batches = step_event_batches(
        ctx, user, state.id, step_input, once, live.watch, conversation=conversation, state=state
    )
    await run_in_background(ctx, live, batches, stream.on)
    return follow_response(
        ctx,
        live.run,
        0,
        batch_size=FOLLOW_BATCH,
        poll_seconds=FOLLOW_POLL_SECONDS,
        pings=body.include_pings,
    )


@router.post("/{agent_id}/messages", response_model=None)
async def send(
    agent_id: str,
    body: SendRequest,
    ctx: Context,
    user: User,
    idempotency_key: IdempotencyKey = None,
) -> Any:
    """Letta's send_message: a LettaResponse, or events with `streaming`.
    Its messages may instead be the user's answer to the tool calls waiting
    for approval (Letta's ApprovalCreate), which goes on with the step.
    Sent again with the same `Idempotency-Key`, or the same `otid` on its
    messages, the first send's answer (server/sendonce.py). Each send is a
    run (run_life.py)."""
    once = send_once(ctx.workspace.store, idempotency_key, "letta.send", body, *body.otids())
    if body.streaming:
        return await letta_stream(ctx, user, agent_id, body, once)
    return json_response(await letta_answer(ctx, user, agent_id, body, once))


async def letta_answer(
    ctx: ServerContext,
    user: str,
    agent_id: str,
    body: SendRequest,
    once: SendOnce | None,
    conversation: str | None = None,
) -> dict[str, Any]:
    """A send's LettaResponse, once its step (a run, in the agent's
    `conversation`) ran."""
    state, step_input, live = await run_in_threadpool(
        prepared_send, ctx, user, agent_id, body, conversation
    )
    result = await step_result(
        ctx, user, state.id, step_input, once, live.watch, conversation=conversation, state=state
    )
    return letta_response(result, body, live.run.id)


@router.post("/{agent_id}/messages/stream", response_model=None)
async def send_stream(
    agent_id: str,
    body: SendRequest,
    ctx: Context,
    user: User,
    idempotency_key: IdempotencyKey = None,
) -> Any:
    """Letta's create_agent_message_stream: always server-sent events."""
    once = send_once(ctx.workspace.store, idempotency_key, "letta.stream", body, *body.otids())
    return await letta_stream(ctx, user, agent_id, body, once)
