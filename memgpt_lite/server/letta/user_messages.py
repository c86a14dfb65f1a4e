"""The user's messages across their agents: Letta's list_all_messages (GET
/v1/messages), retrieve_message (GET /v1/messages/{id}) and modify_message
(PATCH /v1/agents/{id}/messages/{id}).

A message is found by its id among the user's agents' messages: another
user's message is a 404 worded as an unknown id's. An edit is one of the
history's (memory/recall/history.py): only a message still in the agent's
context window can change, since one folded into the recursive summary
would make the summary lie.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from memgpt_lite.errors import ConfigError, NotFoundError
from memgpt_lite.models import AgentState, Message
from memgpt_lite.server.context import Context, ServerContext, User
from memgpt_lite.server.letta.bodies import UpdateMessage
from memgpt_lite.server.letta.messages import LettaMessage, keep, to_letta, whole_messages
from memgpt_lite.server.letta.paging import Order

router = APIRouter(tags=["letta"])


def owned_message(ctx: ServerContext, user: str, message_id: str) -> tuple[Message, AgentState]:
    """The user's stored message and its agent (in the message's
    conversation); NotFoundError, the same for an unknown id and for
    another user's message."""
    message = ctx.workspace.store.get_message(message_id, user)
    return message, ctx.agent_state(user, message.agent_id, message.conversation_id)


@router.get("/v1/messages/", include_in_schema=False)
@router.get("/v1/messages")
def list_all_messages(
    ctx: Context,
    user: User,
    after: str | None = None,
    before: str | None = None,
    limit: Annotated[int, Query(ge=1)] = 100,
    order: Order = "desc",
    conversation_id: str | None = None,
    include_return_message_types: Annotated[list[str] | None, Query()] = None,
) -> list[LettaMessage]:
    """Letta's list_all_messages: the user's messages across all their
    agents (of one of their conversations, with `conversation_id`), newest
    first by default; `after` and `before` are message ids in that order.
    A page never splits a stored message's Letta messages."""
    if after is not None and before is not None:
        raise ConfigError("give after or before, not both")
    cursor = after or before
    beyond = ctx.workspace.store.get_message(cursor, user) if cursor else None
    # From `before`, the page is walked back from it, then turned around.
    newest_first = (order == "desc") == (before is None)
    wanted = limit
    while True:
        stored = ctx.workspace.store.owner_messages(
            user, wanted, newest_first=newest_first, beyond=beyond, conversation=conversation_id
        )
        waiting = _waiting_calls(ctx, user, {m.agent_id for m in stored})
        groups = [keep(to_letta(m, waiting=waiting), include_return_message_types) for m in stored]
        groups = [g for g in groups if g]
        if len(stored) < wanted or sum(map(len, groups)) >= limit:
            break
        wanted *= 4  # the types kept left too few: read further
    chosen = whole_messages(groups, limit)
    if before is not None:
        chosen.reverse()
    return [m for group in chosen for m in group]


def _waiting_calls(ctx: ServerContext, user: str, agent_ids: set[str]) -> set[str]:
    """The ids of the calls that wait for approval in the user's agents."""
    return {
        call.id
        for agent_id in agent_ids
        for call in ctx.workspace.waiting_calls(ctx.agent_state(user, agent_id))
    }


@router.get("/v1/messages/{message_id}")
def retrieve_message(message_id: str, ctx: Context, user: User) -> list[LettaMessage]:
    """Letta's retrieve_message: the stored message as Letta's messages (an
    answer is its reasoning, then each tool call or reply)."""
    message, state = owned_message(ctx, user, message_id)
    waiting = {call.id for call in ctx.workspace.waiting_calls(state)}
    return to_letta(message, waiting=waiting)


@router.patch("/v1/agents/{agent_id}/messages/{message_id}")
def modify_message(
    agent_id: str, message_id: str, body: UpdateMessage, ctx: Context, user: User
) -> LettaMessage:
    """Letta's modify_message: replace a user's or system message's text, an
    answer's reasoning or its reply (its last, if it sent several), while
    the message is in the context window (else a 409, changing nothing).
    Answers the message as edited, of the kind the body names."""
    state = ctx.agent_state(user, agent_id)
    message = ctx.workspace.store.get_message(message_id, user)  # the owner's, checked there
    if message.agent_id != state.id:
        raise NotFoundError(f"no message with id {message_id!r} in agent {agent_id!r}")
    part, text = body.edit(message.role)
    agent = ctx.agent(user, state.id, message.conversation_id)
    edited = agent.history.edit(message_id, part, text)
    return [m for m in to_letta(edited) if m["message_type"] == body.message_type][-1]
