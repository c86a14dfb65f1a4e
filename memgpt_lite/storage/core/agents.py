"""Agents and their settings, for every backend.

The agents row is written whole, so a write from a copy read before another
process changed the row would undo that change. `update_agent` changes the
row as it is at the time of the write (read inside the write, locked where
writers run at once), `save_agent` refuses a stale copy. `updated_at` is
the row's version: every write moves it strictly forward. An agent's block
ids come with its row, in one statement (the dialect's `block_ids`).

Counts (`message_count`, `passage_count`, ...) are kept by the backend's
writes of messages and passages (SQLite's triggers, PostgreSQL's writes).
A backend provides nothing more than what the core runs on (core/sql.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from memgpt_lite.errors import AlreadyExistsError, ConfigError, ConflictError, NotFoundError
from memgpt_lite.models import (
    DEFAULT_USER,
    AgentSettings,
    AgentState,
    AgentStats,
    Block,
    utcnow,
)
from memgpt_lite.storage.core.blocks import Blocks
from memgpt_lite.storage.core.conversations import (
    CONVERSATION_READ,
    Conversations,
    as_in_conversation,
)
from memgpt_lite.storage.core.errors import unknown_agent
from memgpt_lite.storage.core.sealed_keys import KeySealer
from memgpt_lite.storage.core.sql import stored_datetime
from memgpt_lite.storage.core.transactions import guarded
from memgpt_lite.storage.protocols.archives import ARCHIVE_PREFIX
from memgpt_lite.text import clean_text

_COLUMNS = (
    "id",
    "name",
    "owner",
    "llm",
    "system",
    "tool_names",
    "context_start",
    "summary",
    "pressure_warned",
    "reflected_seq",
    "embedding_model",
    "embedding_dimension",
    "settings",
    "created_at",
    "updated_at",
    "display_name",
)
_WRITTEN = [c for c in _COLUMNS if c not in ("id", "owner", "created_at")]  # kept as created
# The passages of the archive attached to the agent, last (`stats_from_row`).
ATTACHED_PASSAGES = (
    "COALESCE((SELECT s.passage_count FROM agent_archives l JOIN agents s "
    "ON s.id = l.archive_id WHERE l.agent_id = agents.id), 0)"
)
_STATS = f"message_count, passage_count, last_active, memory_updated_at, {ATTACHED_PASSAGES}"
AGENT_STATS = f"SELECT {_STATS} FROM agents WHERE id = ?"  # `stats_from_row` reads it
# The archive attached to the agent (the row holding its passages), read
# with the agent's row after its block ids (`_agent_from_row`).
ATTACHED_ARCHIVE = "(SELECT archive_id FROM agent_archives WHERE agent_id = agents.id)"
# The rows of `agents` that are agents: not those holding a named archive's
# passages (storage/protocols/archives.py).
AGENTS_ONLY = f"id NOT LIKE '{ARCHIVE_PREFIX}%'"
_INSERT = f"INSERT INTO agents ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"
_UPDATE = f"UPDATE agents SET {', '.join(f'{c} = ?' for c in _WRITTEN)} WHERE id = ?"
# A copy of the agent in a conversation has these of the conversation's row.
_WINDOW_FIELDS = ("context_start", "summary", "pressure_warned")
_SHARED = [c for c in _WRITTEN if c not in _WINDOW_FIELDS]
_UPDATE_SHARED = f"UPDATE agents SET {', '.join(f'{c} = ?' for c in _SHARED)} WHERE id = ?"


def stats_from_row(row: Sequence[Any]) -> AgentStats:
    messages, passages, last_active, memory_updated_at, attached = row
    return AgentStats(
        message_count=messages,
        passage_count=passages,
        attached_passage_count=attached,
        last_active=stored_datetime(last_active),
        memory_updated_at=stored_datetime(memory_updated_at),
    )


class Agents(Conversations, Blocks):
    """Agents with their blocks (see `AgentStorage`). An agent's own API key
    is sealed in its row (`key_sealer`, set by the backend: sealed_keys.py)."""

    key_sealer: KeySealer

    def _agent_values(self, state: AgentState) -> dict[str, Any]:
        return {
            "id": state.id,
            "name": state.name,
            "owner": state.owner,
            "llm": self.key_sealer.stored_llm(state.llm),  # the agent's key sealed
            "system": state.system,
            "tool_names": json.dumps(state.tool_names),
            "context_start": state.context_start,
            "summary": state.summary,
            "pressure_warned": state.pressure_warned,
            "reflected_seq": state.reflected_seq,
            "embedding_model": state.embedding_model,
            "embedding_dimension": state.embedding_dimension,
            "settings": state.settings.model_dump_json(),
            "created_at": self.dialect.time(state.created_at),
            "updated_at": self.dialect.time(state.updated_at),
            "display_name": state.display_name,
        }

    def _agent_from_row(self, row: Sequence[Any]) -> AgentState:
        """An agent from a row of its `_COLUMNS` and its block ids."""
        values = dict(zip(_COLUMNS, row, strict=False))
        return AgentState(
            id=values["id"],
            name=values["name"],
            owner=values["owner"],
            llm=self.key_sealer.read_llm(values["llm"]),
            system=values["system"],
            block_ids=self.dialect.block_id_list(row[len(_COLUMNS)]),
            attached_archive=row[len(_COLUMNS) + 1],
            tool_names=json.loads(values["tool_names"]),
            context_start=values["context_start"],
            summary=values["summary"],
            pressure_warned=bool(values["pressure_warned"]),
            reflected_seq=values["reflected_seq"],
            embedding_model=values["embedding_model"],
            embedding_dimension=values["embedding_dimension"],
            settings=AgentSettings.model_validate_json(values["settings"]),
            created_at=values["created_at"],
            updated_at=values["updated_at"],
            display_name=values["display_name"],
        )

    def _with_blocks(self) -> str:
        """The columns `_agent_from_row` reads, on `agents`."""
        return f"{', '.join(_COLUMNS)}, {self.dialect.block_ids}, {ATTACHED_ARCHIVE}"

    @guarded
    def create_agent(
        self, state: AgentState, blocks: Sequence[Block], author: str = "create"
    ) -> None:
        """Store a new agent with its blocks (new blocks are created, with
        their first version by `author`; existing ones, such as a block shared
        with another agent, are linked)."""
        with self.transaction():
            # The owner is written here only: later writes of the row keep it.
            # Only the name is unique within the owner (display names repeat).
            taken = f"an agent named {state.name!r} already exists"
            with self.refusing_duplicates(taken):
                self._execute(_INSERT, list(self._agent_values(state).values()))
            for position, block in enumerate(blocks):
                self._store_new_block(block, author)
                self._execute(
                    "INSERT INTO agent_blocks (agent_id, block_id, position) VALUES (?, ?, ?)",
                    [state.id, block.id, position],
                )
            state.block_ids = [b.id for b in blocks]

    def _write_agent(self, state: AgentState) -> None:
        """Write the whole row from `state`, moving its version (`updated_at`)
        strictly forward, even if the clock went back. Inside a transaction."""
        state.updated_at = max(utcnow(), state.updated_at + timedelta(microseconds=1))
        values = self._agent_values(state)
        if state.conversation_id is None:
            self._execute(_UPDATE, [*(values[c] for c in _WRITTEN), state.id])
            return
        self._execute(_UPDATE_SHARED, [*(values[c] for c in _SHARED), state.id])
        self._write_conversation_window(state)

    @guarded
    def save_agent(self, state: AgentState) -> None:
        """Store `state` as the agent's row, if the row is still as it was when
        `state` was read (or last saved). Raises ConflictError, changing
        nothing, if another process or object changed it since: writing the
        stale copy would undo that change. Use `update_agent` to change a field."""
        with self.transaction():
            stored = self._one(
                f"SELECT updated_at FROM agents WHERE id = ?{self.dialect.for_update}", [state.id]
            )
            if stored is None:
                raise NotFoundError(f"agent {state.name!r} no longer exists")
            if stored_datetime(stored[0]) != state.updated_at:
                raise ConflictError(
                    f"agent {state.name!r} was changed by another process (or another Agent "
                    "object) since this copy was read; nothing was saved. Load it again and "
                    "repeat the change"
                )
            with self.refusing_duplicates(f"an agent named {state.name!r} already exists"):
                self._write_agent(state)

    @guarded
    def update_agent(
        self,
        agent_id: str,
        change: Callable[[AgentState], object],
        conversation: str | None = None,
    ) -> AgentState:
        """Apply `change` to the agent as it is stored now, read inside the
        write transaction so that nothing can change it in between, and store
        the result. Returns the new state (to replace a stale copy); with
        `conversation`, the copy of the agent in that conversation."""
        with self.transaction():
            row = self._one(
                f"SELECT {self._with_blocks()} FROM agents WHERE id = ?{self.dialect.for_update}",
                [agent_id],
            )
            if row is None:
                raise unknown_agent(agent_id)
            state = self._agent_from_row(row)
            if conversation is not None:
                found = self._all(CONVERSATION_READ + self.dialect.for_update, [conversation])
                state = as_in_conversation(state, found, conversation)
            change(state)
            self._write_agent(state)
        return state

    def _agent_read(self, name_or_id: str, owner: str | None = None) -> tuple[str, list[Any]]:
        """`get_agent`'s read (`_agent_named` makes the agent): the agent with
        this id first, else the one with this name; with `owner`, among that
        user's agents only, else every user's agent of that name, the default
        user's first (names are unique within an owner only)."""
        ref = clean_text(name_or_id)  # from a caller: SQLite cannot bind a lone surrogate
        columns = self._with_blocks()
        if owner is not None:
            return (
                f"SELECT {columns} FROM agents WHERE owner = ? AND (id = ? OR name = ?) "
                f"AND {AGENTS_ONLY} ORDER BY id = ? DESC LIMIT 1",
                [clean_text(owner), ref, ref, ref],
            )
        return (
            f"SELECT {columns} FROM agents WHERE (id = ? OR name = ?) AND {AGENTS_ONLY} "
            "ORDER BY id = ? DESC, owner = ? DESC, owner",
            [ref, ref, ref, DEFAULT_USER],
        )

    def _agent_named(self, name_or_id: str, rows: list[Any]) -> AgentState:
        """The agent `_agent_read` found, or NotFoundError; a ConfigError for
        a name several users hold, none of them the default user."""
        if not rows:
            raise NotFoundError(f"no agent named {clean_text(name_or_id)!r}")
        first = self._agent_from_row(rows[0])
        if len(rows) == 1 or first.id == name_or_id or first.owner == DEFAULT_USER:
            return first
        found = ", ".join(f"{row[2]}'s {row[0]}" for row in rows)  # owner, id
        raise ConfigError(
            f"several users have an agent named {first.name!r}: give the id of one ({found})"
        )

    @guarded
    def get_agent(
        self, name_or_id: str, owner: str | None = None, conversation: str | None = None
    ) -> AgentState:
        state = self._agent_named(name_or_id, self._all(*self._agent_read(name_or_id, owner)))
        if conversation is None:
            return state
        return as_in_conversation(state, self._all(CONVERSATION_READ, [conversation]), conversation)

    @guarded
    def list_agents(self, owner: str | None = None) -> list[tuple[AgentState, AgentStats]]:
        where, params = ("", []) if owner is None else ("owner = ? AND ", [clean_text(owner)])
        rows = self._all(
            f"SELECT {self._with_blocks()}, {_STATS} FROM agents "
            f"WHERE {where}{AGENTS_ONLY} ORDER BY name",
            params,
        )
        width = len(_COLUMNS) + 2
        return [(self._agent_from_row(r[:width]), stats_from_row(r[width:])) for r in rows]

    @guarded
    def agent_stats(self, agent_id: str) -> AgentStats:
        row = self._one(AGENT_STATS, [agent_id])
        if row is None:
            raise unknown_agent(agent_id)
        return stats_from_row(row)

    @guarded
    def delete_agent(self, agent_id: str) -> None:
        """Delete an agent, its messages and passages, and the blocks no other
        agent shares (their links and history go with them); a standalone
        block (one with an owner) is kept."""
        with self.transaction():
            self._execute(
                "DELETE FROM blocks AS b WHERE b.owner IS NULL AND b.id IN "
                "(SELECT block_id FROM agent_blocks WHERE agent_id = ?) AND NOT EXISTS "
                "(SELECT 1 FROM agent_blocks ab WHERE ab.block_id = b.id AND ab.agent_id != ?)",
                [agent_id, agent_id],
            )
            self._execute("DELETE FROM agents WHERE id = ?", [agent_id])

    @guarded
    def rename_agent(
        self, agent_id: str, new_name: str, display_name: str | None = None
    ) -> AgentState:
        """Change an agent's name, unique within its owner's names, and its
        display name (None: none), which another of the owner's agents may
        have too (everything else refers to it by id). Returns the renamed
        state."""
        taken_message = f"an agent named {new_name!r} already exists"
        with self.transaction():
            taken = self._one(
                "SELECT 1 FROM agents WHERE name = ? AND id != ? "
                "AND owner = (SELECT owner FROM agents WHERE id = ?)",
                [new_name, agent_id, agent_id],
            )
            if taken:
                raise AlreadyExistsError(taken_message)

            def renamed(state: AgentState) -> None:
                state.name = new_name
                state.display_name = display_name

            with self.refusing_duplicates(taken_message):  # taken meanwhile
                return self.update_agent(agent_id, renamed)
