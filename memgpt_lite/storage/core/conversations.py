"""An agent's conversations, for every backend.

A conversation is a message history of its own over the agent's one
memory: its messages carry its id (`messages.conversation_id`), and its
row holds what the agent's row holds for the default conversation, the
window's start, its recursive summary and whether the memory-pressure
alert was given. A copy of the agent running in a conversation
(`AgentState.conversation_id`) has those fields from the conversation's
row: `get_agent`, `update_agent`, `save_agent` and the step's reads
(core/agents.py, core/store.py) read and write them there, and the rest
of the agent's row as ever. The default conversation has no row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memgpt_lite.conversations import Conversation, no_conversation
from memgpt_lite.models import AgentState, utcnow
from memgpt_lite.storage.core.errors import unknown_agent
from memgpt_lite.storage.core.sql import stored_datetime
from memgpt_lite.storage.core.transactions import Transactions, guarded
from memgpt_lite.text import clean_text

_COLUMNS = (
    "id, agent_id, summary, context_start, window_summary, pressure_warned, created_at, updated_at"
)
# The conversation's row (`conversation_from_row`), by id.
CONVERSATION_READ = f"SELECT {_COLUMNS} FROM conversations WHERE id = ?"
# A conversation's row and when its newest message was stored (an index
# probe: the conversations' messages index, backwards), for `c`.
_WITH_LAST_MESSAGE = (
    f"SELECT {', '.join(f'c.{column}' for column in _COLUMNS.split(', '))}, "
    "(SELECT m.created_at FROM messages m WHERE m.conversation_id = c.id "
    "ORDER BY m.seq DESC LIMIT 1) FROM conversations c"
)
# What a copy of the agent in the conversation has of it (`as_in_conversation`).
_WRITE_WINDOW = (
    "UPDATE conversations SET context_start = ?, window_summary = ?, pressure_warned = ?, "
    "updated_at = ? WHERE id = ? AND agent_id = ?"
)


def conversation_from_row(row: Sequence[Any]) -> Conversation:
    """From a row of `_COLUMNS`, and when its newest message was stored
    (`_WITH_LAST_MESSAGE`'s last column), if read."""
    id_, agent_id, summary, start, window_summary, warned, created, updated = row[:8]
    return Conversation(
        id=id_,
        agent_id=agent_id,
        summary=summary,
        context_start=start,
        window_summary=window_summary,
        pressure_warned=bool(warned),
        created_at=stored_datetime(created),
        updated_at=stored_datetime(updated),
        last_message_at=stored_datetime(row[8]) if len(row) > 8 else None,
    )


def as_in_conversation(state: AgentState, rows: list[Any], conversation: str | None) -> AgentState:
    """`state` as a copy of the agent in `conversation`, from the rows of
    its `CONVERSATION_READ` (itself for the default conversation);
    NotFoundError for a conversation the agent does not have."""
    if conversation is None:
        return state
    if not rows or rows[0][1] != state.id:
        raise no_conversation(conversation)
    found = conversation_from_row(rows[0])
    state.conversation_id = found.id
    state.context_start = found.context_start
    state.summary = found.window_summary
    state.pressure_warned = found.pressure_warned
    return state


class Conversations(Transactions):
    """An agent's conversations (see `ConversationStorage`); their messages
    are deleted by the backend's `_delete_messages_from` (core/messages.py)."""

    def _delete_messages_from(
        self, agent_id: str, start_seq: int, conversation: str | None = None
    ) -> int:
        raise NotImplementedError

    def _write_conversation_window(self, state: AgentState) -> None:
        """Store the window fields of a copy of the agent in a conversation
        in the conversation's row. Inside a transaction."""
        conversation = state.conversation_id or ""
        written = self._execute(
            _WRITE_WINDOW,
            [
                state.context_start,
                state.summary,
                state.pressure_warned,
                self.dialect.time(utcnow()),
                conversation,
                state.id,
            ],
        )
        if written.rowcount == 0:
            raise no_conversation(conversation)

    @guarded
    def create_conversation(self, conversation: Conversation) -> Conversation:
        """Store a new conversation of its agent (NotFoundError for an unknown agent)."""
        with self.transaction():
            written = self._execute(
                f"INSERT INTO conversations ({_COLUMNS}) "
                "SELECT ?, id, ?, ?, ?, ?, ?, ? FROM agents WHERE id = ?",
                [
                    conversation.id,
                    conversation.summary,
                    conversation.context_start,
                    conversation.window_summary,
                    conversation.pressure_warned,
                    self.dialect.time(conversation.created_at),
                    self.dialect.time(conversation.updated_at),
                    conversation.agent_id,
                ],
            )
            if written.rowcount == 0:
                raise unknown_agent(conversation.agent_id)
        return conversation

    @guarded
    def get_conversation(self, conversation_id: str) -> Conversation:
        row = self._one(f"{_WITH_LAST_MESSAGE} WHERE c.id = ?", [clean_text(conversation_id)])
        if row is None:
            raise no_conversation(conversation_id)
        return conversation_from_row(row)

    @guarded
    def list_conversations(
        self, agent_id: str | None = None, owner: str | None = None
    ) -> list[Conversation]:
        """The conversations of the agent, or of every agent of `owner` (or
        both: the agent's if it is the owner's), oldest first (the default
        one has no row)."""
        where, params = [], []
        if agent_id is not None:
            where.append("c.agent_id = ?")
            params.append(agent_id)
        if owner is not None:
            where.append("c.agent_id IN (SELECT a.id FROM agents a WHERE a.owner = ?)")
            params.append(owner)
        condition = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._all(f"{_WITH_LAST_MESSAGE}{condition} ORDER BY c.created_at, c.id", params)
        return [conversation_from_row(r) for r in rows]

    @guarded
    def update_conversation_summary(
        self, conversation_id: str, summary: str | None
    ) -> Conversation:
        """Set what the conversation is about (Letta's `summary`)."""
        with self.transaction():
            written = self._execute(
                "UPDATE conversations SET summary = ?, updated_at = ? WHERE id = ?",
                [summary, self.dialect.time(utcnow()), conversation_id],
            )
            if written.rowcount == 0:
                raise no_conversation(conversation_id)
            return self.get_conversation(conversation_id)

    @guarded
    def delete_conversation(self, conversation_id: str) -> None:
        """Delete the conversation and its messages (its step lock goes with it)."""
        with self.transaction():
            found = self.get_conversation(conversation_id)
            self._delete_messages_from(found.agent_id, 0, found.id)
            self._execute("DELETE FROM conversations WHERE id = ?", [found.id])
