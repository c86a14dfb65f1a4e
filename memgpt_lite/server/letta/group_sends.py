"""Letta's group messages: POST /v1/groups/{id}/messages (a LettaResponse,
or with `streaming` server-sent events) and /messages/stream, GET
/v1/groups/{id}/messages, PATCH /v1/groups/{id}/messages/{message_id} and
PATCH /v1/groups/{id}/reset-messages.

A send to a round-robin or dynamic group is a round (agent/group_rounds.py):
each turn a step of one of its agents (or of a dynamic group's main agent,
picking who speaks next), in its conversation of the group, on what it has
not heard yet; each step a run of its own (run_life.py), as an agent's
send is. A send to a supervisor group is a send to its main agent,
in its conversation of the group (approvals and background streams alike);
its tool messages the other agents. A send to a sleep-time group is a send
to its main agent, as in Letta. Every message of a group's send says which
agent said it: `sender_id` (its id) and `name` (its name), as Letta marks
them; a response's usage is the whole send's, naming every run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.concurrency import run_in_threadpool

from memgpt_lite.agent.group_rounds import Round, Turn
from memgpt_lite.agent.groups import TURN_TYPES
from memgpt_lite.agent.workspace import SLEEPTIME_TYPES, AgentGroup
from memgpt_lite.errors import ConfigError, LLMError, MemGPTError, NotFoundError
from memgpt_lite.events import StepFailed, StepFinished
from memgpt_lite.models import AgentState, StepResult
from memgpt_lite.server.api_agents import step_event_batches, step_result
from memgpt_lite.server.context import Context, ServerContext, User
from memgpt_lite.server.letta.bodies import SendRequest, UpdateMessage
from memgpt_lite.server.letta.messages import LettaMessage, MessagePage, letta_page
from memgpt_lite.server.letta.paging import Order
from memgpt_lite.server.letta.run_life import STOP_REASONS, begin_run
from memgpt_lite.server.letta.run_stream import RunChunks, pinged
from memgpt_lite.server.letta.send import (
    LettaStream,
    data,
    json_response,
    letta_answer,
    letta_response,
    letta_stream,
    marked,
    stop_reason,
)
from memgpt_lite.server.letta.user_messages import modify_message
from memgpt_lite.server.sse import sse_response

router = APIRouter(prefix="/v1/groups", tags=["letta"])

# How a step's end ends a round: a step waiting for approval, or cancelled.
ENDS_ROUND = frozenset({"approval_required", "cancelled"})
# The chunks of a step's stream that the round's end sends once, for all its steps.
ROUND_END_CHUNKS = frozenset({"stop_reason", "usage_statistics"})


def marks(state: AgentState) -> dict[str, Any]:
    """What a group's send sets on each message of one of its agents."""
    return {"sender_id": state.id, "name": state.shown_name}


@dataclass
class RoundTotals:
    """A round's steps, added up: what its response's usage and stop reason say."""

    run_ids: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    steps: int = 0
    context_tokens: int | None = None
    stop_reason: str = "end_turn"
    round_over: bool = False  # a step ended the round (see ENDS_ROUND), or failed

    def add(self, result: StepResult, run_id: str, reason: str | None = None) -> None:
        self.run_ids.append(run_id)
        self.prompt_tokens += result.usage.prompt_tokens
        self.completion_tokens += result.usage.completion_tokens
        self.steps += result.usage.requests
        self.context_tokens = result.prompt_tokens_estimate or self.context_tokens
        self.stop_reason = reason or STOP_REASONS[result.stop_reason]

    def usage(self) -> dict[str, Any]:
        return {
            "message_type": "usage_statistics",
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "step_count": self.steps,
            "context_tokens": self.context_tokens,
            "run_ids": self.run_ids,
        }


def _round_start(ctx: ServerContext, user: str, group: AgentGroup, text: str) -> Round:
    """The round a send to the group starts: its agents as they are, each
    with its conversation of the group; none of them may wait for approval."""
    groups = ctx.workspace.talking_groups
    group = groups.with_conversations(group.id, user)
    groups.check_not_waiting(group)
    agents = [ctx.agent_state(user, agent_id) for agent_id in group.agent_ids]
    manager = group.manager_agent_id
    return Round(group, agents, text, ctx.agent_state(user, manager) if manager else None)


def _round_text(ctx: ServerContext, body: SendRequest) -> str:
    """The user's message a round starts with; what a round cannot take, a 422."""
    if body.client_tools:
        raise ConfigError("client_tools: the agents of a round run the server's tools only")
    if body.background:
        raise ConfigError("background: a round streams on its connection")
    step_input = body.step_input()
    if not isinstance(step_input, str):
        raise ConfigError(
            "messages: an agent of the group that waits for approval is answered in its "
            "conversation of the group (conversations.messages.create)"
        )
    ctx.limits.check_message(step_input)
    return step_input


async def round_answer(
    ctx: ServerContext, user: str, group: AgentGroup, body: SendRequest
) -> dict[str, Any]:
    """A round's LettaResponse: every step's messages, in turn."""
    text = _round_text(ctx, body)
    chat = await run_in_threadpool(_round_start, ctx, user, group, text)
    messages: list[LettaMessage] = []
    totals = RoundTotals()
    try:
        for turn in chat.turns():
            speaker, conversation = turn.speaker, turn.conversation
            live = await run_in_threadpool(begin_run, ctx, user, speaker.id, conversation)
            result = await step_result(
                ctx, user, speaker.id, turn.said, None, live.watch, conversation=conversation
            )
            chat.replied(turn, result.replies)
            answered = letta_response(result, body, live.run.id)["messages"]
            messages += [marked(m, marks(speaker)) for m in answered]
            totals.add(result, live.run.id)
            if result.stop_reason in ENDS_ROUND:
                break
    finally:
        await run_in_threadpool(ctx.workspace.talking_groups.tell, chat.left_unheard())
    return {
        "messages": messages,
        "stop_reason": stop_reason(totals.stop_reason),
        "usage": totals.usage(),
    }


async def round_frames(
    ctx: ServerContext, user: str, body: SendRequest, chat: Round
) -> AsyncIterator[str]:
    """A round as one stream: each step's chunks as it goes (each naming its
    run), then the round's stop reason and usage, then `[DONE]`. A step that
    cannot begin after the first is an error_message, and ends the round."""
    totals, began, turns = RoundTotals(), False, chat.turns()
    try:
        while not totals.round_over:
            try:
                # The next turn (a dynamic group's main agent may name nobody: an error).
                turn = next(turns)
                async for frame in _turn_frames(ctx, user, body, turn, chat, totals):
                    began = True
                    yield frame
            except StopIteration:
                break
            except MemGPTError as exc:
                if not began:
                    raise  # nothing sent yet: answered as an error, by its status
                yield data(_error(exc))
                totals.stop_reason = "llm_api_error" if isinstance(exc, LLMError) else "error"
                break
    finally:
        await run_in_threadpool(ctx.workspace.talking_groups.tell, chat.left_unheard())
    yield data(stop_reason(totals.stop_reason)) + data(totals.usage()) + data("[DONE]")


async def _turn_frames(
    ctx: ServerContext,
    user: str,
    body: SendRequest,
    turn: Turn,
    chat: Round,
    totals: RoundTotals,
) -> AsyncIterator[str]:
    """One turn's step as Letta's chunks of its run, less its stop reason
    and usage (the round's end sends those); what the speaker said is told
    to the round, and the step to `totals`."""
    speaker, conversation = turn.speaker, turn.conversation
    live = await run_in_threadpool(begin_run, ctx, user, speaker.id, conversation)
    stream = LettaStream(ctx, speaker.id, body, conversation, marks(speaker))
    chunks = RunChunks(live.run.id)
    batches = step_event_batches(
        ctx, user, speaker.id, turn.said, None, live.watch, conversation=conversation
    )
    every = ctx.runs.ping_seconds if body.include_pings else None
    async for batch in pinged(batches, every):
        if batch is None:
            yield data(chunks.ping())
            continue
        frames = []
        for event in batch:
            for item in await stream.on(event):
                if item["message_type"] not in ROUND_END_CHUNKS:
                    frames.append(data(chunks.stamp(item)))
            if isinstance(event, StepFinished):
                totals.add(event.result, live.run.id)
                chat.replied(turn, event.result.replies)
                totals.round_over = event.result.stop_reason in ENDS_ROUND
            elif isinstance(event, StepFailed):
                failed = "llm_api_error" if isinstance(event.error, LLMError) else "error"
                totals.add(event.result, live.run.id, failed)
                totals.round_over = True
        if frames:
            yield "".join(frames)


def _error(exc: MemGPTError) -> dict[str, Any]:
    return {
        "message_type": "error_message",
        "error_type": type(exc).__name__,
        "message": str(exc),
        "detail": None,
    }


async def group_send(
    ctx: ServerContext, user: str, group_id: str, body: SendRequest, stream: bool
) -> Any:
    """A send to the user's group, as its kind sends (see the module's doc)."""
    group = await run_in_threadpool(ctx.workspace.group, group_id, user)
    if group.manager_type in TURN_TYPES:
        if not stream:
            return json_response(await round_answer(ctx, user, group, body))
        text = _round_text(ctx, body)
        chat = await run_in_threadpool(_round_start, ctx, user, group, text)
        return await sse_response(round_frames(ctx, user, body, chat))
    manager, conversation = group.manager_agent_id, None
    if manager is None:
        raise ConfigError(f"group {group.id!r} has no main agent to message")
    if group.manager_type not in SLEEPTIME_TYPES:
        group = await run_in_threadpool(
            ctx.workspace.talking_groups.with_conversations, group.id, user
        )
        conversation = group.conversation_id
    state = await run_in_threadpool(ctx.agent_state, user, manager)
    if stream:
        return await letta_stream(ctx, user, manager, body, None, conversation, marks=marks(state))
    answer = await letta_answer(ctx, user, manager, body, None, conversation)
    answer["messages"] = [marked(m, marks(state)) for m in answer["messages"]]
    return json_response(answer)


@router.post("/{group_id}/messages", response_model=None)
async def send_group_message(group_id: str, body: SendRequest, ctx: Context, user: User) -> Any:
    """Letta's send_group_message: a LettaResponse, or events with `streaming`."""
    return await group_send(ctx, user, group_id, body, body.streaming)


@router.post("/{group_id}/messages/stream", response_model=None)
async def send_group_message_streaming(
    group_id: str, body: SendRequest, ctx: Context, user: User
) -> Any:
    """Letta's send_group_message_streaming: always server-sent events."""
    return await group_send(ctx, user, group_id, body, True)


@router.get("/{group_id}/messages")
def list_group_messages(
    group_id: str,
    ctx: Context,
    user: User,
    after: str | None = None,
    before: str | None = None,
    limit: Annotated[int | None, Query(ge=1)] = 10,
    order: Order = "desc",
    use_assistant_message: bool = True,
    include_return_message_types: Annotated[list[str] | None, Query()] = None,
) -> list[LettaMessage]:
    """Letta's list_group_messages: the group's messages, newest first by
    default, each said once, each of an agent marked with it. A sleep-time
    group's are its main agent's."""
    group = ctx.workspace.group(group_id, user)
    page = MessagePage(after, before, limit, order, use_assistant_message)
    if group.manager_type in SLEEPTIME_TYPES and group.manager_agent_id is not None:
        stored = ctx.workspace.all_messages(group.manager_agent_id)
    else:
        stored = ctx.workspace.talking_groups.messages(group)
    if order == "desc":
        stored.reverse()
    listed = letta_page(stored, page, include_return_message_types, ())
    agent_of = {m.id: m.agent_id for m in stored}
    states = {a: ctx.agent_state(user, a) for a in set(agent_of.values())}
    return [
        m if m["message_type"] == "user_message" else marked(m, marks(states[agent_of[m["id"]]]))
        for m in listed
    ]


@router.patch("/{group_id}/messages/{message_id}")
def modify_group_message(
    group_id: str, message_id: str, body: UpdateMessage, ctx: Context, user: User
) -> LettaMessage:
    """Letta's modify_group_message: as modify_message, for a message of
    one of the group's conversations."""
    group = ctx.workspace.group(group_id, user)
    message = ctx.workspace.store.get_message(message_id, user)  # the owner's, checked there
    where = (message.agent_id, message.conversation_id)
    if where not in ctx.workspace.talking_groups.conversations(group):
        raise NotFoundError(f"no message with id {message_id!r} in group {group_id!r}")
    return modify_message(message.agent_id, message_id, body, ctx, user)


@router.patch("/{group_id}/reset-messages")
def reset_group_messages(group_id: str, ctx: Context, user: User) -> None:
    """Letta's reset_group_messages: the group's messages deleted (its
    conversations; the agents' other histories and memory stay)."""
    group = ctx.workspace.group(group_id, user)
    if group.manager_type in SLEEPTIME_TYPES:
        raise ConfigError(
            "a sleep-time group's messages are its main agent's: reset them with "
            "agents.messages.reset"
        )
    ctx.workspace.talking_groups.reset(group)
