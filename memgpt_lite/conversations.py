"""An agent's conversations as stored: `Conversation`, and how the default
one is named (see agent/conversations.py for the API)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import CleanStr, new_id, utcnow
from memgpt_lite.text import clean_text

# The id by which the agent's own history, the conversation every agent has
# from the start, is named where a conversation id is asked for.
DEFAULT_CONVERSATION = "default"


def conversation_ref(conversation: str | None) -> str | None:
    """The id of a conversation as the store takes it: None for the
    default one, however named (`DEFAULT_CONVERSATION`)."""
    return None if conversation in (None, DEFAULT_CONVERSATION) else conversation


def no_conversation(conversation: str) -> NotFoundError:
    """The error for a conversation that is not there (or not the asker's)."""
    return NotFoundError(f"no conversation {clean_text(conversation)!r}")


class Conversation(BaseModel):
    """One of an agent's conversations: a message history of its own, with
    its own in-context window and recursive summary, over the agent's one
    memory (its blocks and archival memory, shared by every conversation).
    The agent's history from before conversations is its default
    conversation, which has no row (`DEFAULT_CONVERSATION`); its window is
    the agent's own (`AgentState.context_start`, `summary`)."""

    id: str = Field(default_factory=lambda: new_id("conv"))
    agent_id: str
    # Letta's `summary`: what the conversation is about, as its user says (a title).
    summary: CleanStr | None = None
    # As the agent's fields of the same names, for this conversation's window.
    context_start: int = 0
    window_summary: CleanStr = ""
    pressure_warned: bool = False
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    # When its newest message was stored (None: it has none), as read: not a
    # column of its own.
    last_message_at: datetime | None = None
