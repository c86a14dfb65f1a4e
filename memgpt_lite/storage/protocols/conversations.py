"""An agent's conversations: message histories of their own over its memory."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from memgpt_lite.conversations import Conversation


@runtime_checkable
class ConversationStorage(Protocol):
    """An agent's conversations (`Conversation`). A conversation's messages
    carry its id; the other methods that take one (`window`,
    `agent_and_newest_message`, `take_step_lock`, ...) read and write its
    messages, its window and its step lock. `get_agent` and `update_agent`
    with a conversation give the copy of the agent in it: its
    `context_start`, `summary` and `pressure_warned` are the conversation's,
    and writing that copy (`update_agent`, `save_agent`) writes them there,
    the rest to the agent's row. The default conversation, the agent's own
    history, has no row (None, or `DEFAULT_CONVERSATION`, where an id is asked)."""

    def create_conversation(self, conversation: Conversation) -> Conversation:
        """Store a new conversation (NotFoundError for an unknown agent)."""
        ...

    def get_conversation(self, conversation_id: str) -> Conversation:
        """With when its newest message was stored; NotFoundError if there is none."""
        ...

    def list_conversations(
        self, agent_id: str | None = None, owner: str | None = None
    ) -> list[Conversation]:
        """The conversations of the agent, or of every agent of `owner` (both
        given: the agent's, if it is the owner's), oldest first, with when
        each one's newest message was stored."""
        ...

    def update_conversation_summary(
        self, conversation_id: str, summary: str | None
    ) -> Conversation:
        """Set what the conversation is about (Letta's `summary`); the new row."""
        ...

    def delete_conversation(self, conversation_id: str) -> None:
        """Delete the conversation with its messages (NotFoundError if there is none)."""
        ...
