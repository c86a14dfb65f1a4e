"""One stored message by its id: Letta's retrieve_message (GET
/v1/messages/{id}) and modify_message (PATCH /v1/agents/{id}/messages/{id}).

A message is found by its id whatever agent holds it, then shown only to the
user whose agent that is: another user's message is a 404 worded as an
unknown id's. An edit is one of the history's (memory/recall/history.py):
only a message still in the agent's context window can change, since one
folded into the recursive summary would make the summary lie.
"""

from __future__ import annotations

from fastapi import APIRouter

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import AgentState, Message
from memgpt_lite.server.context import Context, ServerContext, User
from memgpt_lite.server.letta.bodies import UpdateMessage
from memgpt_lite.server.letta.messages import LettaMessage, to_letta

router = APIRouter(tags=["letta"])


def owned_message(ctx: ServerContext, user: str, message_id: str) -> tuple[Message, AgentState]:
    """The user's stored message and its agent (in the message's
    conversation); NotFoundError, the same for an unknown id and for
    another user's message."""
    message = ctx.workspace.store.get_message(message_id, user)
    return message, ctx.agent_state(user, message.agent_id, message.conversation_id)


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
    message, _ = owned_message(ctx, user, message_id)
    if message.agent_id != state.id:
        raise NotFoundError(f"no message with id {message_id!r} in agent {agent_id!r}")
    part, text = body.edit(message.role)
    agent = ctx.agent(user, state.id, message.conversation_id)
    edited = agent.history.edit(message_id, part, text)
    return [m for m in to_letta(edited) if m["message_type"] == body.message_type][-1]
