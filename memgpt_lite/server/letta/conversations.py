"""Letta's conversations: /v1/conversations (create, list, retrieve, update,
delete, fork), their messages (list; send, streamed or not), cancel,
compact, recompile and preview a request.

A conversation is one of an agent's message histories over its one memory
(agent/conversations.py); its steps run one at a time, beside those of the
agent's other conversations. The agent's own history is its default
conversation, which has no id of its own: as in Letta, a route's
`conversation_id` is a conversation's id (`conv-...`), or "default" with
the agent's id (`agent_id`, in the query or the body as Letta puts it), or
(Letta's older form) the agent's id itself. A conversation of another
user's agent is not found, word for word as one that does not exist.

Sending goes through Letta's send machinery (send.py), in the conversation:
each send is a run (run_life.py) of the conversation, its chunks carrying
`run_id`, `seq_id` and `otid`. `streaming` is on unless the body turns it
off (Letta's default here); a stream carries Letta's `ping` messages while
the step is quiet (`include_pings`). A `background` send's chunks are kept,
to be read again from a seq_id (the `stream` route, or the run's own); a
cancel cancels the conversation's open runs, whose steps stop cleanly.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Query
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse

from memgpt_lite.agent.workspace import Run
from memgpt_lite.conversations import DEFAULT_CONVERSATION, Conversation, no_conversation
from memgpt_lite.errors import ConfigError, NotFoundError
from memgpt_lite.server.context import Context, ServerContext, User
from memgpt_lite.server.letta.agent_context import compacted
from memgpt_lite.server.letta.bodies import LettaBody, SendRequest
from memgpt_lite.server.letta.messages import LettaMessage, MessagePage, listed_messages
from memgpt_lite.server.letta.paging import Order, page
from memgpt_lite.server.letta.run_life import CANCEL_LOOKS_AT, cancel_conversation_runs
from memgpt_lite.server.letta.runs import RetrieveStreamRequest, resumed
from memgpt_lite.server.letta.send import json_response, letta_answer, letta_stream
from memgpt_lite.server.sendonce import send_once

router = APIRouter(prefix="/v1/conversations", tags=["letta"])

# A stream quiet this long (a long model call, a slow tool) gets a ping, so
# that proxies and clients that drop an idle connection keep it.
PING_SECONDS = 20.0

Where = tuple[str, str | None]  # an agent's id and its conversation's (None: the default one)


class CreateConversation(LettaBody):
    """Letta's CreateConversation; `model` and `model_settings` are taken and
    not honoured (a conversation runs on its agent's model)."""

    summary: str | None = None
    isolated_block_labels: list[str] | None = None


class UpdateConversation(LettaBody):
    summary: str | None = None


class ConversationSend(SendRequest):
    """Letta's ConversationMessageRequest."""

    streaming: bool = True
    include_pings: bool = True
    background: bool = False
    agent_id: str | None = None  # for "default": whose


class ConversationStreamRequest(RetrieveStreamRequest):
    """Letta's RetrieveStreamRequest as the conversation's stream route takes
    it: whose default conversation (`agent_id`), and which run (`run_id`;
    None: the conversation's newest background one)."""

    agent_id: str | None = None
    run_id: str | None = None


class CompactionRequest(LettaBody):
    """Letta's CompactionRequest (its `compaction_settings` are not honoured:
    the agent's own settings are)."""

    agent_id: str | None = None


def conversation_view(found: Conversation, in_context: list[str] | None = None) -> dict[str, Any]:
    """A conversation as Letta's Conversation; `in_context`: the ids of the
    messages in its window, where read."""
    return {
        "id": found.id,
        "agent_id": found.agent_id,
        "summary": found.summary,
        "created_at": found.created_at,
        "updated_at": found.updated_at,
        "last_message_at": found.last_message_at,
        "created_by_id": None,
        "last_updated_by_id": None,
        "in_context_message_ids": in_context or [],
        "isolated_block_ids": [],
        "model": None,
        "model_settings": None,
    }


def resolved(ctx: ServerContext, user: str, conversation_id: str, agent_id: str | None) -> Where:
    """The user's agent and conversation that a route's `conversation_id`
    names (see the module's doc); NotFoundError for one that is not theirs."""
    if conversation_id == DEFAULT_CONVERSATION:
        if agent_id is None:
            raise ConfigError("agent_id: give the agent whose default conversation this is")
        return ctx.agent_state(user, agent_id).id, None
    if not conversation_id.startswith("conv-"):  # Letta's older form: the agent's id
        return ctx.agent_state(user, conversation_id).id, None
    found = ctx.workspace.conversation(conversation_id, user)
    if agent_id is not None and ctx.agent_state(user, agent_id).id != found.agent_id:
        raise no_conversation(conversation_id)
    return found.agent_id, found.id


@router.post("/")
@router.post("", include_in_schema=False)
def create(agent_id: str, body: CreateConversation, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's create_conversation: a new, empty conversation of the agent."""
    if body.isolated_block_labels:
        raise ConfigError(
            "isolated_block_labels: memgpt-lite's conversations share all of their agent's blocks"
        )
    state = ctx.agent_state(user, agent_id)
    return conversation_view(ctx.workspace.create_conversation(state.id, body.summary))


@router.post("/{conversation_id}/fork")
def fork(
    conversation_id: str,
    ctx: Context,
    user: User,
    agent_id: str | None = None,
    message_id: str | None = None,
    hidden: bool = False,
) -> dict[str, Any]:
    """Letta's fork_conversation: a new conversation of the same agent that
    goes on from where this one is now (its window's messages copied, and
    its summary); the two go their own ways from there."""
    if message_id is not None:
        raise ConfigError("message_id: a fork starts where the conversation is now")
    if hidden:
        raise ConfigError("hidden: memgpt-lite lists every conversation")
    agent, conversation = resolved(ctx, user, conversation_id, agent_id)
    return conversation_view(ctx.workspace.fork_conversation(agent, conversation))


@router.get("/")
@router.get("", include_in_schema=False)
def list_conversations(
    ctx: Context,
    user: User,
    agent_id: str | None = None,
    limit: Annotated[int, Query(ge=1)] = 50,
    after: str | None = None,
    summary_search: str | None = None,
    order: Order = "desc",
    order_by: Literal["created_at", "last_run_completion", "last_message_at"] = "created_at",
) -> list[dict[str, Any]]:
    """Letta's list_conversations: the user's conversations (of `agent_id`'s
    agent), newest first unless `order` is "asc"; by `last_message_at` (or
    Letta's `last_run_completion`, the same here), those that never spoke
    as the oldest. `after` is a conversation id. Listed, a conversation does
    not carry its window's message ids (retrieve gives them)."""
    wanted = None if agent_id is None else ctx.agent_state(user, agent_id).id
    found = ctx.workspace.conversations(user, wanted)
    if summary_search:
        needle = summary_search.casefold()
        found = [c for c in found if needle in (c.summary or "").casefold()]
    if order_by != "created_at":
        found.sort(key=lambda c: (c.last_message_at is not None, c.last_message_at or c.created_at))
    if order == "desc":
        found.reverse()
    return [conversation_view(c) for c in page(found, lambda c: c.id, after=after, limit=limit)]


def _with_window(ctx: ServerContext, user: str, found: Conversation) -> dict[str, Any]:
    state = ctx.agent_state(user, found.agent_id, found.id)
    return conversation_view(found, [m.id for m in ctx.workspace.window(state)])


@router.get("/{conversation_id}")
def retrieve(conversation_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's retrieve_conversation, with the ids of the messages in its window."""
    return _with_window(ctx, user, ctx.workspace.conversation(conversation_id, user))


@router.patch("/{conversation_id}")
def update(
    conversation_id: str, body: UpdateConversation, ctx: Context, user: User
) -> dict[str, Any]:
    """Letta's update_conversation: what it is about (its `summary`)."""
    ctx.workspace.conversation(conversation_id, user)
    changed = ctx.workspace.update_conversation(conversation_id, body.summary)
    return _with_window(ctx, user, changed)


@router.delete("/{conversation_id}")
def delete(conversation_id: str, ctx: Context, user: User) -> None:
    """Letta's delete_conversation: the conversation and its messages go
    (the agent's memory stays)."""
    ctx.workspace.conversation(conversation_id, user)
    ctx.workspace.delete_conversation(conversation_id)


@router.get("/{conversation_id}/messages")
def list_messages(
    conversation_id: str,
    ctx: Context,
    user: User,
    agent_id: str | None = None,
    after: str | None = None,
    before: str | None = None,
    limit: Annotated[int | None, Query(ge=1)] = 100,
    order: Order = "desc",
    use_assistant_message: bool = True,
    include_return_message_types: Annotated[list[str] | None, Query()] = None,
) -> list[LettaMessage]:
    """Letta's list_conversation_messages, as the agent's list_messages."""
    where = resolved(ctx, user, conversation_id, agent_id)
    asked = MessagePage(after, before, limit, order, use_assistant_message)
    return listed_messages(ctx, user, where, asked, include_return_message_types)


@router.post("/{conversation_id}/messages", response_model=None)
async def send(
    conversation_id: str,
    body: ConversationSend,
    ctx: Context,
    user: User,
    idempotency_key: Annotated[str | None, Header()] = None,
) -> Any:
    """Letta's send_conversation_message: a step in the conversation, as a
    stream (with pings while it is quiet, unless `include_pings` is off) or,
    `streaming` off, a LettaResponse. Sent again with the same
    `Idempotency-Key`, or the same `otid` on its messages, the first send's
    answer."""
    agent_id, conversation = await run_in_threadpool(
        resolved, ctx, user, conversation_id, body.agent_id
    )
    route = f"letta.conversations.{conversation or DEFAULT_CONVERSATION}"
    once = send_once(ctx.workspace.store, idempotency_key, route, body, *body.otids())
    if not body.streaming:
        return json_response(await letta_answer(ctx, user, agent_id, body, once, conversation))
    return await letta_stream(ctx, user, agent_id, body, once, conversation, PING_SECONDS)


@router.post("/{conversation_id}/stream", response_model=None)
async def retrieve_stream(
    conversation_id: str, ctx: Context, user: User, body: ConversationStreamRequest | None = None
) -> StreamingResponse:
    """Letta's retrieve_conversation_stream: the stream of the conversation's
    newest background run (or of its `run_id`), from the chunk after seq_id
    `starting_after`, as runs.messages.stream reads it."""
    body = body or ConversationStreamRequest()
    where = await run_in_threadpool(resolved, ctx, user, conversation_id, body.agent_id)
    run = await run_in_threadpool(_streamed_run, ctx, user, where, body.run_id)
    return resumed(ctx, run, body)


def _streamed_run(ctx: ServerContext, user: str, where: Where, run_id: str | None) -> Run:
    """The conversation's run `run_id`, or its newest background one."""
    agent_id, conversation = where
    if run_id is not None:
        run = ctx.workspace.run(run_id, user)
        if (run.agent_id, run.conversation_id) != where:
            raise NotFoundError(f"no run with id {run_id!r} in this conversation")
        return run
    for run in ctx.workspace.runs(user, CANCEL_LOOKS_AT, agent_id):
        if run.background and run.conversation_id == conversation:
            return run
    raise NotFoundError("this conversation has no background run to stream")


@router.post("/{conversation_id}/cancel")
def cancel(
    conversation_id: str, ctx: Context, user: User, agent_id: str | None = None
) -> dict[str, str]:
    """Letta's cancel_conversation: the conversation's open runs cancelled,
    each run's status after by its id. Their steps stop at their next safe
    point (loop/stopping.py)."""
    found_agent, conversation = resolved(ctx, user, conversation_id, agent_id)
    return cancel_conversation_runs(ctx, user, found_agent, conversation)


@router.post("/{conversation_id}/compact")
async def compact(
    conversation_id: str, ctx: Context, user: User, body: CompactionRequest | None = None
) -> dict[str, Any]:
    """Letta's compact_conversation: the older messages of its window folded
    into its summary now (they stay in its history)."""
    agent_id = None if body is None else body.agent_id
    where = await run_in_threadpool(resolved, ctx, user, conversation_id, agent_id)
    return await run_in_threadpool(compacted, ctx, user, *where)


@router.post("/{conversation_id}/recompile")
def recompile(
    conversation_id: str,
    ctx: Context,
    user: User,
    dry_run: bool = False,
    body: CompactionRequest | None = None,
) -> str:
    """Letta's recompile_conversation: the system message as the
    conversation's next request sends it. It is compiled for every request
    from the blocks as they are, so there is nothing to store (`dry_run` or
    not)."""
    agent_id = None if body is None else body.agent_id
    return ctx.agent(user, *resolved(ctx, user, conversation_id, agent_id)).system_message()


@router.post("/{conversation_id}/messages/preview-raw-payload")
def preview_request(
    conversation_id: str, body: ConversationSend, ctx: Context, user: User
) -> dict[str, Any]:
    """Letta's preview_conversation_model_request: as the agent's
    preview-raw-payload, for this conversation's next step."""
    where = resolved(ctx, user, conversation_id, body.agent_id)
    return ctx.agent(user, *where).runner.preview_request(body.text())
