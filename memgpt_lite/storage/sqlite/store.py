"""All SQL lives here, behind the small `Store` interface.

SQLite through sqlite-utils, in WAL mode so readers never block the writer.
Every write runs in a `BEGIN IMMEDIATE` transaction: a second process waits for
the lock (up to `busy_timeout_seconds`) instead of failing half-way, and a crash
or Ctrl-C mid-transaction rolls back to the last committed state. A write
inside another one is a savepoint: if it fails, it is undone as a whole even
when the outer transaction goes on. Keeping the SQL in the store modules is
what makes another backend (PostgreSQL) possible later.

The agents row is written whole, so a write from a copy read before another
process changed the row would undo that change. `update_agent` changes the row
as it is at the time of the write; `save_agent` refuses a stale copy.
`updated_at` is the row's version: every write moves it strictly forward.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from memgpt_lite.errors import AlreadyExistsError, ConflictError, NotFoundError, ReadOnlyError
from memgpt_lite.memory.ranking import RANK_BUDGET, Ranking, fts_words
from memgpt_lite.models import (
    AgentSettings,
    AgentState,
    AgentStats,
    Block,
    LLMConfig,
    Message,
    ToolCall,
    utcnow,
)
from memgpt_lite.storage.sqlite.archival import ArchivalStore, day_bounds, seq_chunks, stored_time
from memgpt_lite.storage.sqlite.connect import check_schema, connect, file_errors, read_only_reason
from memgpt_lite.storage.sqlite.locks import StepLockStore
from memgpt_lite.storage.sqlite.migrations import migrations
from memgpt_lite.text import clean_text

# Leaves out the searching step's own messages; a NULL parameter leaves out none.
_NOT_IN_STEP = " AND (? IS NULL OR m.step_id IS NOT ?)"


def _tool_calls_json(message: Message) -> str | None:
    return json.dumps([c.model_dump() for c in message.tool_calls]) if message.tool_calls else None


def _dt(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


class Store(ArchivalStore, StepLockStore):
    """The database of agents, blocks, messages and passages."""

    def __init__(self, path: str | Path, busy_timeout_seconds: float = 30.0) -> None:
        self.path = Path(path).expanduser()
        self.busy_timeout_seconds = busy_timeout_seconds
        conn, self.read_only = connect(self.path, busy_timeout_seconds)
        self.db = Database(conn)
        self._savepoints = 0
        try:
            self._prepare()
        except BaseException:
            conn.close()
            raise

    def _prepare(self) -> None:
        """Settings, WAL mode and migrations; without a write when none is due,
        so that a database this process may only read serves its reads."""
        with file_errors(self.path):
            self.db.execute("PRAGMA foreign_keys = ON")
            # NORMAL is durable across application crashes in WAL mode; only a
            # power cut can lose the last commits, never corrupt the file.
            self.db.execute("PRAGMA synchronous = NORMAL")
            # Up to 64 MiB of pages cached per connection, not SQLite's 2 MB:
            # a search of a large archive re-reads the same index pages, and
            # fetching them from the OS again costs 10% of it at 1M passages.
            self.db.execute("PRAGMA cache_size = -65536")
            if self.read_only:
                check_schema(self.db, migrations, self.path, read_only=True)
                return
            if self.db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                self.db.enable_wal()
            if check_schema(self.db, migrations, self.path, read_only=False):
                with self.transaction():
                    migrations.apply(self.db)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic write. A nested call is a savepoint of the outer
        transaction: undone alone if it fails, committed with the outer one."""
        conn = self.db.conn
        if conn.in_transaction:
            with self._savepoint():
                yield
            return
        if self.read_only:
            raise ReadOnlyError(f"{read_only_reason(self.path)}; nothing was changed")
        with file_errors(self.path):
            conn.execute("BEGIN IMMEDIATE")
        with file_errors(self.path):
            try:
                yield
                self.renew_held_leases()
                conn.execute("COMMIT")
            except BaseException:
                # Also when COMMIT itself fails (disk full): never leave a
                # half-open transaction for the next write to join.
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                self.transaction_ended(committed=False)
                raise
        self.transaction_ended(committed=True)

    @contextmanager
    def _savepoint(self) -> Iterator[None]:
        conn = self.db.conn
        self._savepoints += 1
        name = f"nested_{self._savepoints}"
        conn.execute(f"SAVEPOINT {name}")
        with file_errors(self.path):
            try:
                yield
            except BaseException:
                if conn.in_transaction:
                    conn.execute(f"ROLLBACK TO {name}")
                    conn.execute(f"RELEASE {name}")
                self.transaction_ended(committed=False)
                raise
            else:
                conn.execute(f"RELEASE {name}")
            finally:
                self._savepoints -= 1

    @contextmanager
    def busy_timeout(self, seconds: float) -> Iterator[None]:
        """Wait at most `seconds` for another connection's write lock, for a
        while (the store's own timeout is used again after)."""
        self.db.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")
        try:
            yield
        finally:
            self.db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_seconds * 1000)}")

    def rollback_interrupted(self) -> None:
        """Roll back a transaction an interrupt left open (Ctrl-C landing between
        BEGIN and the `try` that guards it), so later writes do not join it and
        never commit. A no-op otherwise; call it only outside our transactions."""
        if self.db.conn.in_transaction:
            self.db.conn.execute("ROLLBACK")
            self.transaction_ended(committed=False)

    # Agents

    def create_agent(self, state: AgentState, blocks: Sequence[Block]) -> None:
        """Store a new agent with its blocks (new blocks are created, existing
        ones, such as a block shared with another agent, are linked)."""
        with self.transaction():
            if self.db.execute("SELECT 1 FROM agents WHERE name = ?", [state.name]).fetchone():
                raise AlreadyExistsError(f"an agent named {state.name!r} already exists")
            created = {"created_at": stored_time(state.created_at)}
            self.db["agents"].insert(self._agent_row(state) | created)
            for position, block in enumerate(blocks):
                if not self.db.execute("SELECT 1 FROM blocks WHERE id = ?", [block.id]).fetchone():
                    self.db["blocks"].insert(self._block_row(block))
                self.db["agent_blocks"].insert(
                    {"agent_id": state.id, "block_id": block.id, "position": position}
                )
            state.block_ids = [b.id for b in blocks]

    def _agent_row(self, state: AgentState) -> dict[str, Any]:
        return {
            "id": state.id,
            "name": state.name,
            "llm": state.llm.model_dump_json(),
            "system": state.system,
            "tool_names": json.dumps(state.tool_names),
            "context_start": state.context_start,
            "summary": state.summary,
            "pressure_warned": int(state.pressure_warned),
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
            "pressure_warned = :pressure_warned, settings = :settings, "
            "embedding_model = :embedding_model, embedding_dimension = :embedding_dimension, "
            "updated_at = :updated_at WHERE id = :id",
            self._agent_row(state),
        )

    def _stored_version(self, agent_id: str) -> datetime | None:
        row = self.db.execute("SELECT updated_at FROM agents WHERE id = ?", [agent_id]).fetchone()
        return _dt(row[0]) if row else None

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

    def get_agent(self, name_or_id: str) -> AgentState:
        name_or_id = clean_text(name_or_id)  # from a caller: SQLite cannot bind a lone surrogate
        rows = self.db.query(
            "SELECT * FROM agents WHERE name = ? OR id = ?", [name_or_id, name_or_id]
        )
        row = next(rows, None)
        if row is None:
            raise NotFoundError(f"no agent named {name_or_id!r}")
        return self._agent_from_row(row)

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
            llm=LLMConfig.model_validate_json(row["llm"]),
            system=row["system"],
            block_ids=block_ids,
            tool_names=json.loads(row["tool_names"]),
            context_start=row["context_start"],
            summary=row["summary"],
            pressure_warned=bool(row["pressure_warned"]),
            embedding_model=row["embedding_model"],
            embedding_dimension=row["embedding_dimension"],
            settings=AgentSettings.model_validate_json(row["settings"]),
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )

    def list_agents(self) -> list[tuple[AgentState, AgentStats]]:
        rows = list(self.db.query("SELECT * FROM agents ORDER BY name"))
        return [(self._agent_from_row(r), self._stats_from_row(r)) for r in rows]

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
            last_active=_dt(row["last_active"]),
            memory_updated_at=_dt(row["memory_updated_at"]),
        )

    def delete_agent(self, agent_id: str) -> None:
        """Delete an agent, its messages and passages, and the blocks no other
        agent shares."""
        with self.transaction():
            self.db.execute("DELETE FROM agents WHERE id = ?", [agent_id])
            self.db.execute(
                "DELETE FROM blocks WHERE id NOT IN (SELECT block_id FROM agent_blocks)"
            )

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
    def _block_from_row(row: sqlite3.Row | tuple[Any, ...]) -> Block:
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

    def get_blocks(self, agent_id: str) -> list[Block]:
        rows = self.db.execute(
            f"SELECT {self._BLOCK_COLUMNS} FROM blocks b JOIN agent_blocks ab "
            "ON ab.block_id = b.id WHERE ab.agent_id = ? ORDER BY ab.position",
            [agent_id],
        )
        return [self._block_from_row(r) for r in rows]

    def get_block(self, block_id: str) -> Block:
        row = self.db.execute(
            f"SELECT {self._BLOCK_COLUMNS} FROM blocks b WHERE b.id = ?", [block_id]
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no block with id {block_id!r}")
        return self._block_from_row(row)

    def save_block(self, block: Block) -> None:
        """Write a block's new value; every agent that shares it sees the edit."""
        block.updated_at = utcnow()
        with self.transaction():
            self.db["blocks"].upsert(self._block_row(block), pk="id")
            self.db.execute(
                "UPDATE agents SET memory_updated_at = ? WHERE id IN "
                "(SELECT agent_id FROM agent_blocks WHERE block_id = ?)",
                [stored_time(block.updated_at), block.id],
            )

    def attach_block(self, agent_id: str, block: Block) -> None:
        """Link a block (stored first if new) to an agent, after its other blocks."""
        with self.transaction():
            labels = {b.label for b in self.get_blocks(agent_id)}
            if block.label in labels:
                raise AlreadyExistsError(f"the agent already has a block labelled {block.label!r}")
            self.db["blocks"].insert(self._block_row(block), ignore=True)
            position = self.db.execute(
                "SELECT COALESCE(MAX(position) + 1, 0) FROM agent_blocks WHERE agent_id = ?",
                [agent_id],
            ).fetchone()[0]
            self.db["agent_blocks"].insert(
                {"agent_id": agent_id, "block_id": block.id, "position": position}
            )

    # Messages

    def add_messages(self, messages: Sequence[Message]) -> None:
        """Append messages to recall memory, in order, setting their `seq`."""
        with self.transaction():
            for message in messages:
                cursor = self.db.execute(
                    "INSERT INTO messages (id, agent_id, role, content, tool_calls, tool_call_id,"
                    " name, step_id, created_at, search_text) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    [
                        message.id,
                        message.agent_id,
                        message.role,
                        message.content,
                        _tool_calls_json(message),
                        message.tool_call_id,
                        message.name,
                        message.step_id,
                        stored_time(message.created_at),
                        message.search_text(),
                    ],
                )
                message.seq = cursor.lastrowid

    _MESSAGE_COLUMNS = (
        "m.seq, m.id, m.agent_id, m.role, m.content, m.tool_calls, m.tool_call_id, m.name,"
        " m.step_id, m.created_at"
    )

    @staticmethod
    def _message_from_row(row: Sequence[Any]) -> Message:
        seq, id_, agent_id, role, content, tool_calls, tool_call_id, name, step_id, created = row
        return Message(
            seq=seq,
            id=id_,
            agent_id=agent_id,
            role=role,
            content=content,
            tool_calls=[ToolCall(**c) for c in json.loads(tool_calls)] if tool_calls else [],
            tool_call_id=tool_call_id,
            name=name,
            step_id=step_id,
            created_at=created,
        )

    def update_message(self, message: Message) -> None:
        """Rewrite a stored message's content and tool calls, and what search
        indexes (the FTS trigger follows). Its vector, now stale, is dropped,
        so the next search embeds the message again."""
        with self.transaction():
            cursor = self.db.execute(
                "UPDATE messages SET content = ?, tool_calls = ?, search_text = ? "
                "WHERE id = ? AND agent_id = ?",
                [
                    message.content,
                    _tool_calls_json(message),
                    message.search_text(),
                    message.id,
                    message.agent_id,
                ],
            )
            if cursor.rowcount == 0:
                raise NotFoundError(f"no message with id {message.id!r}")
            self.db.execute(
                "DELETE FROM vectors WHERE owner = 'message' AND item_seq = "
                "(SELECT seq FROM messages WHERE id = ?)",
                [message.id],
            )

    def delete_messages_from(self, agent_id: str, start_seq: int) -> int:
        """Delete the agent's messages with `seq >= start_seq`; returns how many.
        Triggers keep the full-text index, counters and vectors in step."""
        with self.transaction():
            cursor = self.db.execute(
                "DELETE FROM messages WHERE agent_id = ? AND seq >= ?", [agent_id, start_seq]
            )
            return cursor.rowcount

    def last_messages(self, agent_id: str, limit: int) -> list[Message]:
        """The agent's newest `limit` messages, oldest first."""
        rows = self.db.execute(
            f"SELECT {self._MESSAGE_COLUMNS} FROM messages m WHERE m.agent_id = ? "
            "ORDER BY m.seq DESC LIMIT ?",
            [agent_id, limit],
        )
        return [self._message_from_row(r) for r in reversed(rows.fetchall())]

    def messages_from(self, agent_id: str, start_seq: int) -> list[Message]:
        """The agent's messages with `seq >= start_seq`, oldest first."""
        rows = self.db.execute(
            f"SELECT {self._MESSAGE_COLUMNS} FROM messages m "
            "WHERE m.agent_id = ? AND m.seq >= ? ORDER BY m.seq",
            [agent_id, start_seq],
        )
        return [self._message_from_row(r) for r in rows]

    def search_messages(
        self,
        agent_id: str,
        query: str,
        limit: int,
        offset: int = 0,
        exclude_step_id: str | None = None,
    ) -> tuple[list[Message], int]:
        """Rank the agent's user and assistant messages by BM25 for plain-text
        `query`. Returns one page and how many matched (see `rank_messages`)."""
        ranking = self.rank_messages(agent_id, fts_words(query), offset + limit, exclude_step_id)
        return [message for message, _ in ranking.scored[offset:]], ranking.total

    def rank_messages(
        self,
        agent_id: str,
        words: Sequence[str],
        limit: int,
        exclude_step_id: str | None = None,
        *,
        budget: int = RANK_BUDGET,
    ) -> Ranking[Message]:
        """The best `limit` user and assistant messages holding any of `words`
        (see `fts_words`), with their BM25 scores (higher is better), and how
        many match; budgeted like `rank_passages` when the words are common."""
        if not words:
            return Ranking([], 0, proven=True)
        candidates = self.candidates("messages", words, budget)
        # CROSS JOIN makes SQLite start from the full-text match; left to
        # itself it scans every message of the agent and probes the index.
        source = (
            f"SELECT b.seq, b.score FROM ({candidates.source}) b "
            f"CROSS JOIN messages m ON m.seq = b.seq WHERE m.agent_id = ?{_NOT_IN_STEP}"
        )
        args = [*candidates.args, agent_id, exclude_step_id, exclude_step_id]
        rows, total = self.top_rows("messages", self._MESSAGE_COLUMNS, source, args, limit)
        scored = [(self._message_from_row(r[:10]), r[10]) for r in rows]
        return Ranking(scored, total, candidates.proves([s for _, s in scored], limit))

    def messages_by_seq(
        self, agent_id: str, seqs: Sequence[int], exclude_step_id: str | None = None
    ) -> dict[int, Message]:
        found: dict[int, Message] = {}
        for chunk, marks in seq_chunks(seqs):
            rows = self.db.execute(
                f"SELECT {self._MESSAGE_COLUMNS} FROM messages m WHERE m.agent_id = ? "
                f"AND m.seq IN ({marks}){_NOT_IN_STEP}",
                [agent_id, *chunk, exclude_step_id, exclude_step_id],
            )
            found.update((r[0], self._message_from_row(r)) for r in rows)
        return found

    def messages_between(
        self,
        agent_id: str,
        start: date,
        end: date,
        limit: int,
        offset: int = 0,
        exclude_step_id: str | None = None,
    ) -> tuple[list[Message], int]:
        """The agent's user and assistant messages from `start` to `end`
        inclusive (UTC days), oldest first. Returns one page and the total."""
        low, high = day_bounds(start, end)
        where = (
            "m.agent_id = ? AND m.created_at >= ? AND m.created_at < ? "
            "AND m.search_text IS NOT NULL" + _NOT_IN_STEP
        )
        params: list[Any] = [agent_id, low, high, exclude_step_id, exclude_step_id]
        total = self.db.execute(f"SELECT COUNT(*) FROM messages m WHERE {where}", params)
        rows = self.db.execute(
            f"SELECT {self._MESSAGE_COLUMNS} FROM messages m WHERE {where} "
            "ORDER BY m.seq LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        return [self._message_from_row(r) for r in rows], total.fetchone()[0]
