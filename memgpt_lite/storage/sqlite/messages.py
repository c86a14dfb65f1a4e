"""The store's SQL for recall memory: messages (a part of `Store`).

Triggers keep the full-text index and the agent's counters in step with every
insert, update and delete, and drop a deleted message's vector (migrations.py);
`update_message` drops an edited message's vector itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import date, datetime
from typing import Any

from sqlite_utils import Database

from memgpt_lite.errors import NotFoundError
from memgpt_lite.memory.ranking import RANK_BUDGET, fts_words
from memgpt_lite.models import Message
from memgpt_lite.storage.core.rows import tool_calls_json
from memgpt_lite.storage.protocol import Ranking
from memgpt_lite.storage.sqlite.fulltext import BudgetedSearch, Part
from memgpt_lite.storage.sqlite.primitives import guarded
from memgpt_lite.storage.sqlite.rows import day_bounds, require_agents, seq_chunks, stored_time
from memgpt_lite.storage.sqlite.window_cache import (
    MESSAGE_COLUMNS,
    WindowCache,
    message_from_row,
)

# Leaves out the searching step's own messages; a NULL parameter leaves out none.
_NOT_IN_STEP = " AND (? IS NULL OR m.step_id IS NOT ?)"


class MessageStore(BudgetedSearch):
    """Messages. Mixed into `Store`, which provides `db`, `lock`,
    `transaction`, `snapshot` and `window_cache`."""

    db: Database
    transaction: Callable[[], AbstractContextManager[None]]  # provided by Store
    snapshot: Callable[[], AbstractContextManager[None]]
    window_cache: WindowCache

    @guarded
    def add_messages(self, messages: Sequence[Message]) -> None:
        """Append messages to recall memory, in order, setting their `seq`."""
        with self.transaction():
            require_agents(self.db, (m.agent_id for m in messages))
            for message in messages:
                cursor = self.db.execute(
                    "INSERT INTO messages (id, agent_id, role, content, tool_calls, tool_call_id,"
                    " name, step_id, created_at, search_text) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    [
                        message.id,
                        message.agent_id,
                        message.role,
                        message.content,
                        tool_calls_json(message),
                        message.tool_call_id,
                        message.name,
                        message.step_id,
                        stored_time(message.created_at),
                        message.search_text(),
                    ],
                )
                message.seq = cursor.lastrowid

    @guarded
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
                    tool_calls_json(message),
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

    @guarded
    def delete_messages_from(self, agent_id: str, start_seq: int) -> int:
        """Delete the agent's messages with `seq >= start_seq`; returns how many.
        Triggers keep the full-text index, counters and vectors in step."""
        with self.transaction():
            cursor = self.db.execute(
                "DELETE FROM messages WHERE agent_id = ? AND seq >= ?", [agent_id, start_seq]
            )
            return cursor.rowcount

    @guarded
    def last_messages(self, agent_id: str, limit: int) -> list[Message]:
        """The agent's newest `limit` messages, oldest first."""
        rows = self.db.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.agent_id = ? "
            "ORDER BY m.seq DESC LIMIT ?",
            [agent_id, limit],
        )
        return [message_from_row(r) for r in reversed(rows.fetchall())]

    @guarded
    def first_messages(self, agent_id: str, start_seq: int, limit: int) -> list[Message]:
        """The agent's oldest `limit` messages from `start_seq`, oldest first
        (not through the window cache: a page of history is no window)."""
        rows = self.db.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.agent_id = ? AND m.seq >= ? "
            "ORDER BY m.seq LIMIT ?",
            [agent_id, start_seq, limit],
        )
        return [message_from_row(r) for r in rows.fetchall()]

    @guarded
    def recent_messages(
        self, agent_id: str, limit: int, offset: int = 0, since: datetime | None = None
    ) -> tuple[list[Message], int]:
        """One page of the agent's messages counted from the newest, oldest
        first, and how many there are (from `since`, compared as stored: UTC)."""
        where, params = "m.agent_id = ?", [agent_id]
        if since is not None:
            where += " AND m.created_at >= ?"
            params.append(stored_time(since))
        with self.snapshot():  # the page and the count from the same moment
            total = self.db.execute(f"SELECT COUNT(*) FROM messages m WHERE {where}", params)
            rows = self.db.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE {where} "
                "ORDER BY m.seq DESC LIMIT ? OFFSET ?",
                [*params, limit, offset],
            )
            page = [message_from_row(r) for r in reversed(rows.fetchall())]
            return page, total.fetchone()[0]

    @guarded
    def messages_from(self, agent_id: str, start_seq: int) -> list[Message]:
        """The agent's messages with `seq >= start_seq`, oldest first: the
        window, read through `window_cache` (only new rows are fetched)."""
        committed = not self.db.conn.in_transaction  # else it may see uncommitted rows
        with self.snapshot():
            return self.window_cache.read(self.db, agent_id, start_seq, keep=committed)

    @guarded
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
        ranking = self.rank_messages(agent_id, query, offset + limit, exclude_step_id)
        return [message for message, _ in ranking.scored[offset:]], ranking.total

    @guarded
    def rank_messages(
        self,
        agent_id: str,
        query: str,
        limit: int,
        exclude_step_id: str | None = None,
        *,
        budget: int = RANK_BUDGET,
    ) -> Ranking[Message]:
        """The best `limit` user and assistant messages holding any word of
        `query` (see `fts_words`), with their BM25 scores (higher is better),
        and how many match; budgeted like `rank_passages` when the words are
        common."""
        words = fts_words(query)
        if not words:
            return Ranking([], 0, proven=True)
        # CROSS JOIN makes SQLite start from the full-text match; left to
        # itself it scans every message of the agent and probes the index.
        candidates = self.candidates("messages", words, budget).filtered(
            lambda part: Part(
                f"SELECT b.seq, b.score FROM ({part.sql}) b "
                f"CROSS JOIN messages m ON m.seq = b.seq WHERE m.agent_id = ?{_NOT_IN_STEP}",
                [*part.args, agent_id, exclude_step_id, exclude_step_id],
            )
        )
        rows, total = self.top_rows("messages", MESSAGE_COLUMNS, candidates.parts, limit)
        scored = [(message_from_row(r[:10]), r[10]) for r in rows]
        return Ranking(scored, total, candidates.left_out.proves([s for _, s in scored], limit))

    @guarded
    def messages_by_seq(
        self, agent_id: str, seqs: Sequence[int], exclude_step_id: str | None = None
    ) -> dict[int, Message]:
        found: dict[int, Message] = {}
        for chunk, marks in seq_chunks(seqs):
            rows = self.db.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.agent_id = ? "
                f"AND m.seq IN ({marks}){_NOT_IN_STEP}",
                [agent_id, *chunk, exclude_step_id, exclude_step_id],
            )
            found.update((r[0], message_from_row(r)) for r in rows)
        return found

    @guarded
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
            f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE {where} "
            "ORDER BY m.seq LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        return [message_from_row(r) for r in rows], total.fetchone()[0]
