"""The store's SQL for agents and their blocks (a part of `PostgresStore`).

As in SQLite's agents.py: the agents row is written whole; `update_agent`
changes the row as it is at the time of the write, `save_agent` refuses a
stale copy, and `updated_at` is the row's version, moved strictly forward by
every write. Here a write that reads first locks the row it read (`FOR
UPDATE`): writers run at once in PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any

import psycopg

from memgpt_lite.errors import AlreadyExistsError, ConflictError, NotFoundError
from memgpt_lite.models import (
    STORED,
    AgentSettings,
    AgentState,
    AgentStats,
    Block,
    BlockVersion,
    LLMConfig,
    utcnow,
)
from memgpt_lite.storage.postgres.primitives import guarded
from memgpt_lite.text import clean_text

_AGENT_COLUMNS = (
    "id, name, owner, llm, system, tool_names, context_start, summary, pressure_warned, "
    "reflected_seq, embedding_model, embedding_dimension, settings, created_at, updated_at"
)
# An agent's block ids ride along with its row: one round trip, not two.
_WITH_BLOCKS = (
    f"{_AGENT_COLUMNS}, ARRAY(SELECT block_id FROM agent_blocks ab "
    "WHERE ab.agent_id = agents.id ORDER BY position)"
)
_STATS_COLUMNS = "message_count, passage_count, last_active, memory_updated_at"
_BLOCK_COLUMNS = "b.id, b.label, b.value, b.char_limit, b.description, b.read_only, b.updated_at"


def _agent_values(state: AgentState) -> dict[str, Any]:
    return {
        "id": state.id,
        "name": state.name,
        "owner": state.owner,
        "llm": state.llm.model_dump_json(context=STORED),
        "system": state.system,
        "tool_names": json.dumps(state.tool_names),
        "context_start": state.context_start,
        "summary": state.summary,
        "pressure_warned": state.pressure_warned,
        "reflected_seq": state.reflected_seq,
        "embedding_model": state.embedding_model,
        "embedding_dimension": state.embedding_dimension,
        "settings": state.settings.model_dump_json(),
        "created_at": state.created_at,
        "updated_at": state.updated_at,
    }


def _block_values(block: Block) -> dict[str, Any]:
    return {
        "id": block.id,
        "label": block.label,
        "value": block.value,
        "char_limit": block.limit,
        "description": block.description,
        "read_only": block.read_only,
        "updated_at": block.updated_at,
    }


def _block(row: Sequence[Any]) -> Block:
    id_, label, value, limit, description, read_only, updated_at = row
    return Block(
        id=id_,
        label=label,
        value=value,
        limit=limit,
        description=description,
        read_only=read_only,
        updated_at=updated_at,
    )


def _stats(row: Sequence[Any]) -> AgentStats:
    messages, passages, last_active, memory_updated_at = row
    return AgentStats(
        message_count=messages,
        passage_count=passages,
        last_active=last_active,
        memory_updated_at=memory_updated_at,
    )


_INSERT_BLOCK = (
    "INSERT INTO blocks (id, label, value, char_limit, description, read_only, updated_at) "
    "VALUES (%(id)s, %(label)s, %(value)s, %(char_limit)s, %(description)s, %(read_only)s, "
    "%(updated_at)s)"
)

# A shared block, stored already, is kept; a row comes back only when stored.
_KEEP_STORED = " ON CONFLICT (id) DO NOTHING RETURNING id"
_INSERT_VERSION = (
    "INSERT INTO block_history (block_id, label, value, author, created_at) "
    "VALUES (%s, %s, %s, %s, %s) RETURNING seq"
)


class AgentStore:
    """Agents and blocks. Mixed into `PostgresStore`."""

    conn: psycopg.Connection
    transaction: Callable[[], AbstractContextManager[None]]

    @guarded
    def create_agent(
        self, state: AgentState, blocks: Sequence[Block], author: str = "create"
    ) -> None:
        with self.transaction():
            try:
                with self.transaction():  # a savepoint: a taken name fails alone
                    self.conn.execute(
                        f"INSERT INTO agents ({_AGENT_COLUMNS}) VALUES ("
                        + ", ".join(f"%({c.strip()})s" for c in _AGENT_COLUMNS.split(","))
                        + ")",
                        _agent_values(state),
                    )
            except psycopg.errors.UniqueViolation:
                raise AlreadyExistsError(f"an agent named {state.name!r} already exists") from None
            for position, block in enumerate(blocks):
                if self.conn.execute(_INSERT_BLOCK + _KEEP_STORED, _block_values(block)).fetchone():
                    self._add_version(block, author)
                self.conn.execute(
                    "INSERT INTO agent_blocks (agent_id, block_id, position) VALUES (%s, %s, %s)",
                    [state.id, block.id, position],
                )
            state.block_ids = [b.id for b in blocks]

    def _write_agent(self, state: AgentState) -> None:
        """Write the whole row from `state`, moving its version strictly forward."""
        state.updated_at = max(utcnow(), state.updated_at + timedelta(microseconds=1))
        values = _agent_values(state)
        del values["created_at"], values["owner"]  # as created
        assignments = ", ".join(f"{key} = %({key})s" for key in values if key != "id")
        self.conn.execute(f"UPDATE agents SET {assignments} WHERE id = %(id)s", values)

    def _locked_version(self, agent_id: str) -> datetime | None:
        row = self.conn.execute(
            "SELECT updated_at FROM agents WHERE id = %s FOR UPDATE", [agent_id]
        ).fetchone()
        return row[0] if row else None

    @guarded
    def save_agent(self, state: AgentState) -> None:
        with self.transaction():
            stored = self._locked_version(state.id)
            if stored is None:
                raise NotFoundError(f"agent {state.name!r} no longer exists")
            if stored != state.updated_at:
                raise ConflictError(
                    f"agent {state.name!r} was changed by another process (or another Agent "
                    "object) since this copy was read; nothing was saved. Load it again and "
                    "repeat the change"
                )
            try:
                with self.transaction():
                    self._write_agent(state)
            except psycopg.errors.UniqueViolation:
                raise AlreadyExistsError(f"an agent named {state.name!r} already exists") from None

    @guarded
    def update_agent(self, agent_id: str, change: Callable[[AgentState], object]) -> AgentState:
        with self.transaction():
            row = self.conn.execute(
                f"SELECT {_WITH_BLOCKS} FROM agents WHERE id = %s FOR UPDATE", [agent_id]
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no agent with id {agent_id!r}")
            state = self._agent_from_row(row)
            change(state)
            self._write_agent(state)
        return state

    @guarded
    def get_agent(self, name_or_id: str) -> AgentState:
        name_or_id = clean_text(name_or_id)  # from a caller: no lone surrogates
        row = self.conn.execute(
            f"SELECT {_WITH_BLOCKS} FROM agents WHERE name = %s OR id = %s "
            "ORDER BY name = %s DESC LIMIT 1",
            [name_or_id, name_or_id, name_or_id],
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no agent named {name_or_id!r}")
        return self._agent_from_row(row)

    @staticmethod
    def _agent_from_row(row: Sequence[Any]) -> AgentState:
        """An agent from a row of `_WITH_BLOCKS`."""
        names = [c.strip() for c in _AGENT_COLUMNS.split(",")]
        values = dict(zip(names, row[: len(names)], strict=True))
        block_ids = row[len(names)]
        return AgentState(
            id=values["id"],
            name=values["name"],
            owner=values["owner"],
            llm=LLMConfig.model_validate_json(values["llm"]),
            system=values["system"],
            block_ids=block_ids,
            tool_names=json.loads(values["tool_names"]),
            context_start=values["context_start"],
            summary=values["summary"],
            pressure_warned=values["pressure_warned"],
            reflected_seq=values["reflected_seq"],
            embedding_model=values["embedding_model"],
            embedding_dimension=values["embedding_dimension"],
            settings=AgentSettings.model_validate_json(values["settings"]),
            created_at=values["created_at"],
            updated_at=values["updated_at"],
        )

    @guarded
    def list_agents(self, owner: str | None = None) -> list[tuple[AgentState, AgentStats]]:
        where, params = ("", []) if owner is None else ("WHERE owner = %s ", [clean_text(owner)])
        with self.snapshot():
            rows = self.conn.execute(
                f"SELECT {_WITH_BLOCKS}, {_STATS_COLUMNS} FROM agents {where}ORDER BY name",
                params,
            ).fetchall()
            width = len(_AGENT_COLUMNS.split(",")) + 1
            return [(self._agent_from_row(r[:width]), _stats(r[width:])) for r in rows]

    @guarded
    def agent_stats(self, agent_id: str) -> AgentStats:
        row = self.conn.execute(
            f"SELECT {_STATS_COLUMNS} FROM agents WHERE id = %s", [agent_id]
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no agent with id {agent_id!r}")
        return _stats(row)

    @guarded
    def delete_agent(self, agent_id: str) -> None:
        with self.transaction():
            blocks = [
                r[0]
                for r in self.conn.execute(
                    "SELECT block_id FROM agent_blocks WHERE agent_id = %s", [agent_id]
                )
            ]
            self.conn.execute("DELETE FROM agents WHERE id = %s", [agent_id])
            self.conn.execute(
                "DELETE FROM blocks b WHERE b.id = ANY(%s) AND NOT EXISTS "
                "(SELECT 1 FROM agent_blocks ab WHERE ab.block_id = b.id)",
                [blocks],
            )

    @guarded
    def rename_agent(self, agent_id: str, new_name: str) -> AgentState:
        with self.transaction():
            taken = self.conn.execute(
                "SELECT 1 FROM agents WHERE name = %s AND id != %s", [new_name, agent_id]
            ).fetchone()
            if taken:
                raise AlreadyExistsError(f"an agent named {new_name!r} already exists")

            def renamed(state: AgentState) -> None:
                state.name = new_name

            try:
                return self.update_agent(agent_id, renamed)
            except AlreadyExistsError:
                raise AlreadyExistsError(f"an agent named {new_name!r} already exists") from None

    # Blocks

    @guarded
    def block_owners(self, block_id: str) -> list[str]:
        rows = self.conn.execute(
            "SELECT a.name FROM agents a JOIN agent_blocks ab ON ab.agent_id = a.id "
            "WHERE ab.block_id = %s ORDER BY a.name",
            [block_id],
        )
        return [row[0] for row in rows]

    @guarded
    def get_blocks(self, agent_id: str) -> list[Block]:
        rows = self.conn.execute(
            f"SELECT {_BLOCK_COLUMNS} FROM blocks b JOIN agent_blocks ab "
            "ON ab.block_id = b.id WHERE ab.agent_id = %s ORDER BY ab.position",
            [agent_id],
        )
        return [_block(r) for r in rows]

    @guarded
    def get_block(self, block_id: str) -> Block:
        row = self.conn.execute(
            f"SELECT {_BLOCK_COLUMNS} FROM blocks b WHERE b.id = %s", [block_id]
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no block with id {block_id!r}")
        return _block(row)

    @guarded
    def save_block(self, block: Block, author: str = "user") -> None:
        block.updated_at = utcnow()
        values = _block_values(block)
        updates = ", ".join(f"{key} = EXCLUDED.{key}" for key in values if key != "id")
        with self.transaction():
            # Locked, so that concurrent edits of one block are kept in the
            # order they commit, each compared with the value before it.
            row = self.conn.execute(
                "SELECT value FROM blocks WHERE id = %s FOR UPDATE", [block.id]
            ).fetchone()
            self.conn.execute(_INSERT_BLOCK + f" ON CONFLICT (id) DO UPDATE SET {updates}", values)
            if row is None or row[0] != block.value:
                self._add_version(block, author)
            self.conn.execute(
                "UPDATE agents SET memory_updated_at = %s WHERE id IN "
                "(SELECT agent_id FROM agent_blocks WHERE block_id = %s)",
                [block.updated_at, block.id],
            )

    @guarded
    def detach_block(self, agent_id: str, block_id: str) -> None:
        with self.transaction():
            self.conn.execute(
                "DELETE FROM agent_blocks WHERE agent_id = %s AND block_id = %s",
                [agent_id, block_id],
            )
            self.conn.execute(
                "DELETE FROM blocks b WHERE b.id = %s AND NOT EXISTS "
                "(SELECT 1 FROM agent_blocks ab WHERE ab.block_id = b.id)",
                [block_id],
            )

    @guarded
    def attach_block(self, agent_id: str, block: Block, author: str = "user") -> None:
        with self.transaction():
            if not self.conn.execute(
                "SELECT 1 FROM agents WHERE id = %s FOR UPDATE", [agent_id]
            ).fetchone():
                raise NotFoundError(f"no agent with id {agent_id!r}")
            labels = {b.label for b in self.get_blocks(agent_id)}
            if block.label in labels:
                raise AlreadyExistsError(f"the agent already has a block labelled {block.label!r}")
            if self.conn.execute(_INSERT_BLOCK + _KEEP_STORED, _block_values(block)).fetchone():
                self._add_version(block, author)
            self.conn.execute(
                "INSERT INTO agent_blocks (agent_id, block_id, position) SELECT %s, %s, "
                "COALESCE(MAX(position) + 1, 0) FROM agent_blocks WHERE agent_id = %s",
                [agent_id, block.id, agent_id],
            )

    # Block history

    def _add_version(self, block: Block, author: str) -> None:
        """Keep the block's value as a new version. Inside a transaction."""
        self.conn.execute(
            _INSERT_VERSION,
            [block.id, block.label, block.value, clean_text(author), block.updated_at],
        )

    @guarded
    def block_history(self, block_id: str, limit: int | None = None) -> list[BlockVersion]:
        rows = self.conn.execute(
            "SELECT seq, block_id, label, value, author, created_at FROM block_history "
            "WHERE block_id = %s ORDER BY seq DESC LIMIT %s",
            [block_id, limit],
        ).fetchall()
        keys = ("seq", "block_id", "label", "value", "author", "created_at")
        return [BlockVersion(**dict(zip(keys, row, strict=True))) for row in reversed(rows)]

    @guarded
    def set_block_history(self, block_id: str, versions: Sequence[BlockVersion]) -> None:
        with self.transaction():
            if not self.conn.execute(
                "SELECT 1 FROM blocks WHERE id = %s FOR UPDATE", [block_id]
            ).fetchone():
                raise NotFoundError(f"no block with id {block_id!r}")
            self.conn.execute("DELETE FROM block_history WHERE block_id = %s", [block_id])
            for version in versions:
                row = self.conn.execute(
                    _INSERT_VERSION,
                    [block_id, version.label, version.value, version.author, version.created_at],
                ).fetchone()
                version.seq = row[0] if row else None
