"""The store's SQL for agents and their blocks (a part of `Store`).

The agents row is written whole, so a write from a copy read before another
process changed the row would undo that change. `update_agent` changes the row
as it is at the time of the write; `save_agent` refuses a stale copy.
`updated_at` is the row's version: every write moves it strictly forward.
Blocks are rows of their own, linked to agents in order by `agent_blocks`, so
one block can be shared by several agents.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any

from sqlite_utils import Database

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
from memgpt_lite.storage.sqlite.primitives import guarded
from memgpt_lite.storage.sqlite.rows import stored_datetime, stored_time
from memgpt_lite.text import clean_text


class AgentStore:
    """Agents and blocks. Mixed into `Store`, which provides `db`, `lock` and `transaction`."""

    db: Database
    transaction: Callable[[], AbstractContextManager[None]]  # provided by Store

    @guarded
    def create_agent(
        self, state: AgentState, blocks: Sequence[Block], author: str = "create"
    ) -> None:
        """Store a new agent with its blocks (new blocks are created, with
        their first version by `author`; existing ones, such as a block shared
        with another agent, are linked)."""
        with self.transaction():
            if self.db.execute("SELECT 1 FROM agents WHERE name = ?", [state.name]).fetchone():
                raise AlreadyExistsError(f"an agent named {state.name!r} already exists")
            # The owner is written here only: later writes of the row keep it.
            created = {"created_at": stored_time(state.created_at), "owner": state.owner}
            self.db["agents"].insert(self._agent_row(state) | created)
            for position, block in enumerate(blocks):
                if not self.db.execute("SELECT 1 FROM blocks WHERE id = ?", [block.id]).fetchone():
                    self.db["blocks"].insert(self._block_row(block))
                    self._add_version(block, author)
                self.db["agent_blocks"].insert(
                    {"agent_id": state.id, "block_id": block.id, "position": position}
                )
            state.block_ids = [b.id for b in blocks]

    def _agent_row(self, state: AgentState) -> dict[str, Any]:
        return {
            "id": state.id,
            "name": state.name,
            "llm": state.llm.model_dump_json(context=STORED),
            "system": state.system,
            "tool_names": json.dumps(state.tool_names),
            "context_start": state.context_start,
            "summary": state.summary,
            "pressure_warned": int(state.pressure_warned),
            "reflected_seq": state.reflected_seq,
            "embedding_model": state.embedding_model,
            "embedding_dimension": state.embedding_dimension,
            "settings": state.settings.model_dump_json(),
            "updated_at": stored_time(state.updated_at),
        }

    def _write_agent(self, state: AgentState) -> None:
        """Write the whole row from `state`, moving its version (`updated_at`)
        strictly forward, even if the clock went back. Inside a transaction."""
        state.updated_at = max(utcnow(), state.updated_at + timedelta(microseconds=1))
        self.db.execute(
            "UPDATE agents SET name = :name, llm = :llm, system = :system, "
            "tool_names = :tool_names, context_start = :context_start, summary = :summary, "
            "pressure_warned = :pressure_warned, reflected_seq = :reflected_seq, "
            "settings = :settings, "
            "embedding_model = :embedding_model, embedding_dimension = :embedding_dimension, "
            "updated_at = :updated_at WHERE id = :id",
            self._agent_row(state),
        )

    def _stored_version(self, agent_id: str) -> datetime | None:
        row = self.db.execute("SELECT updated_at FROM agents WHERE id = ?", [agent_id]).fetchone()
        return stored_datetime(row[0]) if row else None

    @guarded
    def save_agent(self, state: AgentState) -> None:
        """Store `state` as the agent's row, if the row is still as it was when
        `state` was read (or last saved). Raises ConflictError, changing
        nothing, if another process or object changed it since: writing the
        stale copy would undo that change. Use `update_agent` to change a field."""
        with self.transaction():
            stored = self._stored_version(state.id)
            if stored is None:
                raise NotFoundError(f"agent {state.name!r} no longer exists")
            if stored != state.updated_at:
                raise ConflictError(
                    f"agent {state.name!r} was changed by another process (or another Agent "
                    "object) since this copy was read; nothing was saved. Load it again and "
                    "repeat the change"
                )
            self._write_agent(state)

    @guarded
    def update_agent(self, agent_id: str, change: Callable[[AgentState], object]) -> AgentState:
        """Apply `change` to the agent as it is stored now, read inside the
        write transaction so that nothing can change it in between, and store
        the result. Returns the new state (to replace a stale copy)."""
        with self.transaction():
            row = next(self.db.query("SELECT * FROM agents WHERE id = ?", [agent_id]), None)
            if row is None:
                raise NotFoundError(f"no agent with id {agent_id!r}")
            state = self._agent_from_row(row)
            change(state)
            self._write_agent(state)
        return state

    @guarded
    def get_agent(self, name_or_id: str) -> AgentState:
        name_or_id = clean_text(name_or_id)  # from a caller: SQLite cannot bind a lone surrogate
        # execute, not db.query: a step reads the agent every time, and
        # query's savepoint around one SELECT was a third of that read.
        cursor = self.db.execute(
            "SELECT * FROM agents WHERE name = ? OR id = ?", [name_or_id, name_or_id]
        )
        row = cursor.fetchone()
        if row is None:
            raise NotFoundError(f"no agent named {name_or_id!r}")
        columns = [d[0] for d in cursor.description]
        return self._agent_from_row(dict(zip(columns, row, strict=True)))

    def _agent_from_row(self, row: dict[str, Any]) -> AgentState:
        block_ids = [
            r[0]
            for r in self.db.execute(
                "SELECT block_id FROM agent_blocks WHERE agent_id = ? ORDER BY position",
                [row["id"]],
            )
        ]
        return AgentState(
            id=row["id"],
            name=row["name"],
            owner=row["owner"],
            llm=LLMConfig.model_validate_json(row["llm"]),
            system=row["system"],
            block_ids=block_ids,
            tool_names=json.loads(row["tool_names"]),
            context_start=row["context_start"],
            summary=row["summary"],
            pressure_warned=bool(row["pressure_warned"]),
            reflected_seq=row["reflected_seq"],
            embedding_model=row["embedding_model"],
            embedding_dimension=row["embedding_dimension"],
            settings=AgentSettings.model_validate_json(row["settings"]),
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )

    @guarded
    def list_agents(self, owner: str | None = None) -> list[tuple[AgentState, AgentStats]]:
        if owner is None:
            rows = list(self.db.query("SELECT * FROM agents ORDER BY name"))
        else:
            rows = list(
                self.db.query(
                    "SELECT * FROM agents WHERE owner = ? ORDER BY name", [clean_text(owner)]
                )
            )
        return [(self._agent_from_row(r), self._stats_from_row(r)) for r in rows]

    @guarded
    def agent_stats(self, agent_id: str) -> AgentStats:
        row = self.db.execute(
            "SELECT message_count, passage_count, last_active, memory_updated_at "
            "FROM agents WHERE id = ?",
            [agent_id],
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no agent with id {agent_id!r}")
        keys = ("message_count", "passage_count", "last_active", "memory_updated_at")
        return self._stats_from_row(dict(zip(keys, row, strict=True)))

    @staticmethod
    def _stats_from_row(row: dict[str, Any]) -> AgentStats:
        return AgentStats(
            message_count=row["message_count"],
            passage_count=row["passage_count"],
            last_active=stored_datetime(row["last_active"]),
            memory_updated_at=stored_datetime(row["memory_updated_at"]),
        )

    @guarded
    def delete_agent(self, agent_id: str) -> None:
        """Delete an agent, its messages and passages, and the blocks no other
        agent shares."""
        with self.transaction():
            self.db.execute("DELETE FROM agents WHERE id = ?", [agent_id])
            self.db.execute(
                "DELETE FROM blocks WHERE id NOT IN (SELECT block_id FROM agent_blocks)"
            )

    @guarded
    def rename_agent(self, agent_id: str, new_name: str) -> AgentState:
        """Change an agent's name (everything else refers to it by id).
        Returns the renamed state."""
        with self.transaction():
            taken = self.db.execute(
                "SELECT 1 FROM agents WHERE name = ? AND id != ?", [new_name, agent_id]
            ).fetchone()
            if taken:
                raise AlreadyExistsError(f"an agent named {new_name!r} already exists")

            def renamed(state: AgentState) -> None:
                state.name = new_name

            return self.update_agent(agent_id, renamed)

    # Blocks

    @guarded
    def detach_block(self, agent_id: str, block_id: str) -> None:
        """Unlink a block from an agent; delete it once no agent holds it."""
        with self.transaction():
            self.db.execute(
                "DELETE FROM agent_blocks WHERE agent_id = ? AND block_id = ?", [agent_id, block_id]
            )
            self.db.execute(
                "DELETE FROM blocks WHERE id = ? AND id NOT IN (SELECT block_id FROM agent_blocks)",
                [block_id],
            )

    @guarded
    def block_owners(self, block_id: str) -> list[str]:
        """The names of the agents a block is attached to, sorted."""
        rows = self.db.execute(
            "SELECT a.name FROM agents a JOIN agent_blocks ab ON ab.agent_id = a.id "
            "WHERE ab.block_id = ? ORDER BY a.name",
            [block_id],
        )
        return [row[0] for row in rows]

    @staticmethod
    def _block_row(block: Block) -> dict[str, Any]:
        return {
            "id": block.id,
            "label": block.label,
            "value": block.value,
            "char_limit": block.limit,
            "description": block.description,
            "read_only": int(block.read_only),
            "updated_at": stored_time(block.updated_at),
        }

    @staticmethod
    def _block_from_row(row: Sequence[Any]) -> Block:
        id_, label, value, limit, description, read_only, updated_at = row
        return Block(
            id=id_,
            label=label,
            value=value,
            limit=limit,
            description=description,
            read_only=bool(read_only),
            updated_at=updated_at,
        )

    _BLOCK_COLUMNS = (
        "b.id, b.label, b.value, b.char_limit, b.description, b.read_only, b.updated_at"
    )

    @guarded
    def get_blocks(self, agent_id: str) -> list[Block]:
        rows = self.db.execute(
            f"SELECT {self._BLOCK_COLUMNS} FROM blocks b JOIN agent_blocks ab "
            "ON ab.block_id = b.id WHERE ab.agent_id = ? ORDER BY ab.position",
            [agent_id],
        )
        return [self._block_from_row(r) for r in rows]

    @guarded
    def get_block(self, block_id: str) -> Block:
        row = self.db.execute(
            f"SELECT {self._BLOCK_COLUMNS} FROM blocks b WHERE b.id = ?", [block_id]
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no block with id {block_id!r}")
        return self._block_from_row(row)

    @guarded
    def save_block(self, block: Block, author: str = "user") -> None:
        """Write a block's new value; every agent that shares it sees the edit.
        A new value (or a new block) is kept in its history, by `author`."""
        block.updated_at = utcnow()
        with self.transaction():
            row = self.db.execute("SELECT value FROM blocks WHERE id = ?", [block.id]).fetchone()
            self.db["blocks"].upsert(self._block_row(block), pk="id")
            if row is None or row[0] != block.value:
                self._add_version(block, author)
            self.db.execute(
                "UPDATE agents SET memory_updated_at = ? WHERE id IN "
                "(SELECT agent_id FROM agent_blocks WHERE block_id = ?)",
                [stored_time(block.updated_at), block.id],
            )

    @guarded
    def attach_block(self, agent_id: str, block: Block, author: str = "user") -> None:
        """Link a block (stored first if new, its first version by `author`)
        to an agent, after its other blocks."""
        with self.transaction():
            if not self.db.execute("SELECT 1 FROM agents WHERE id = ?", [agent_id]).fetchone():
                raise NotFoundError(f"no agent with id {agent_id!r}")
            labels = {b.label for b in self.get_blocks(agent_id)}
            if block.label in labels:
                raise AlreadyExistsError(f"the agent already has a block labelled {block.label!r}")
            if not self.db.execute("SELECT 1 FROM blocks WHERE id = ?", [block.id]).fetchone():
                self.db["blocks"].insert(self._block_row(block))
                self._add_version(block, author)
            position = self.db.execute(
                "SELECT COALESCE(MAX(position) + 1, 0) FROM agent_blocks WHERE agent_id = ?",
                [agent_id],
            ).fetchone()[0]
            self.db["agent_blocks"].insert(
                {"agent_id": agent_id, "block_id": block.id, "position": position}
            )

    # Block history

    def _add_version(self, block: Block, author: str) -> None:
        """Keep the block's value as a new version. Inside a transaction."""
        self.db.execute(
            "INSERT INTO block_history (block_id, label, value, author, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [block.id, block.label, block.value, clean_text(author), stored_time(block.updated_at)],
        )

    @guarded
    def block_history(self, block_id: str, limit: int | None = None) -> list[BlockVersion]:
        rows = self.db.execute(
            "SELECT seq, block_id, label, value, author, created_at FROM block_history "
            "WHERE block_id = ? ORDER BY seq DESC LIMIT ?",
            [block_id, -1 if limit is None else limit],
        ).fetchall()
        keys = ("seq", "block_id", "label", "value", "author", "created_at")
        return [BlockVersion(**dict(zip(keys, row, strict=True))) for row in reversed(rows)]

    @guarded
    def set_block_history(self, block_id: str, versions: Sequence[BlockVersion]) -> None:
        with self.transaction():
            if not self.db.execute("SELECT 1 FROM blocks WHERE id = ?", [block_id]).fetchone():
                raise NotFoundError(f"no block with id {block_id!r}")
            self.db.execute("DELETE FROM block_history WHERE block_id = ?", [block_id])
            for version in versions:
                cursor = self.db.execute(
                    "INSERT INTO block_history (block_id, label, value, author, created_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    [
                        block_id,
                        version.label,
                        version.value,
                        version.author,
                        stored_time(version.created_at),
                    ],
                )
                version.seq = cursor.lastrowid
