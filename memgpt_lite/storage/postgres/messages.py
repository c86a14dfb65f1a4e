"""The store's SQL for messages (recall memory): a part of `PostgresStore`.

What SQLite's triggers do, each write does itself: it locks the agent's row
first (so one agent's messages are numbered and committed in the same
order), writes the rows with their tsvector and length (fulltext.py), then
moves the agent's counters; deleting or editing a message drops its vector.
There is no window cache: `messages_from` reads the rows every time.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import date, datetime
from typing import Any

import psycopg
from psycopg import sql

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import Message
from memgpt_lite.storage.core.rows import tool_calls_json
from memgpt_lite.storage.postgres.fulltext import (
    PG_RANK_BUDGET,
    TextSearch,
    plain_text,
    to_tsvector,
    word_count,
)
from memgpt_lite.storage.postgres.primitives import guarded
from memgpt_lite.storage.postgres.rows import (
    MESSAGE_COLUMNS,
    day_bounds,
    delete_vectors_of,
    lock_agents,
    message_from_row,
)
from memgpt_lite.storage.protocol import Ranking

# Leaves out the searching step's own messages; a NULL parameter leaves out none.
_NOT_IN_STEP = " AND (%(step)s::text IS NULL OR m.step_id IS DISTINCT FROM %(step)s)"

_INSERT = sql.SQL(
    "INSERT INTO messages (id, agent_id, role, content, tool_calls, tool_call_id, name, "
    "step_id, created_at, search_text, search_length, search_vector) "
    "SELECT r.id, r.agent_id, r.role, r.content, r.tool_calls, r.tool_call_id, r.name, "
    "r.step_id, r.created_at, r.search_text, r.search_length, {vector} "
    "FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
    "%s::text[], %s::text[], %s::timestamptz[], %s::text[], %s::int[], %s::text[]) "
    "WITH ORDINALITY AS r(id, agent_id, role, content, tool_calls, tool_call_id, name, "
    "step_id, created_at, search_text, search_length, plain, n) ORDER BY r.n "
    "RETURNING seq, id"
).format(vector=to_tsvector("r.plain"))


def _columns(messages: Sequence[Message]) -> list[list[Any]]:
    """The messages as one array per column of `_INSERT`."""
    texts = [m.search_text() for m in messages]
    return [
        [m.id for m in messages],
        [m.agent_id for m in messages],
        [m.role for m in messages],
        [m.content for m in messages],
        [tool_calls_json(m) for m in messages],
        [m.tool_call_id for m in messages],
        [m.name for m in messages],
        [m.step_id for m in messages],
        [m.created_at for m in messages],
        texts,
        [word_count(t) for t in texts],
        [plain_text(t) if t is not None else None for t in texts],
    ]


class MessageStore(TextSearch):
    """Messages. Mixed into `PostgresStore`."""

    conn: psycopg.Connection
    transaction: Callable[[], AbstractContextManager[None]]
    snapshot: Callable[[], AbstractContextManager[None]]

    @guarded
    def add_messages(self, messages: Sequence[Message]) -> None:
        """Append messages, in order, in one statement; sets each `seq`."""
        if not messages:
            return
        columns = _columns(messages)
        with self.transaction():
            lock_agents(self.conn, columns[1])
            added: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            last: dict[str, datetime] = {}
            for message, length in zip(messages, columns[10], strict=True):
                added[message.agent_id][0] += 1
                added[message.agent_id][1] += length
                last[message.agent_id] = message.created_at
            for agent_id in sorted(added):
                count, tokens = added[agent_id]
                self.conn.execute(
                    "UPDATE agents SET message_count = message_count + %s, "
                    "message_tokens = message_tokens + %s, last_active = %s WHERE id = %s",
                    [count, tokens, last[agent_id], agent_id],
                )
            seqs = dict((id_, seq) for seq, id_ in self.conn.execute(_INSERT, columns))
        for message in messages:
            message.seq = seqs[message.id]

    @guarded
    def update_message(self, message: Message) -> None:
        """Rewrite a stored message's content, tool calls and what search
        indexes; its vector, now stale, is dropped."""
        text = message.search_text()
        with self.transaction():
            lock_agents(self.conn, [message.agent_id])  # an unknown agent: NotFoundError
            row = self.conn.execute(
                sql.SQL(
                    "WITH old AS (SELECT seq, search_length FROM messages "
                    "WHERE id = %s AND agent_id = %s FOR UPDATE) "
                    "UPDATE messages m SET content = %s, tool_calls = %s, search_text = %s, "
                    "search_length = %s, search_vector = {} FROM old WHERE m.seq = old.seq "
                    "RETURNING m.seq, old.search_length"
                ).format(to_tsvector("%s")),
                [
                    message.id,
                    message.agent_id,
                    message.content,
                    tool_calls_json(message),
                    text,
                    word_count(text),
                    plain_text(text) if text is not None else None,
                ],
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no message with id {message.id!r}")
            seq, old_length = row
            self.conn.execute(
                "UPDATE agents SET message_tokens = message_tokens + %s WHERE id = %s",
                [word_count(text) - old_length, message.agent_id],
            )
            delete_vectors_of(self.conn, message.agent_id, "message", [seq])

    @guarded
    def delete_messages_from(self, agent_id: str, start_seq: int) -> int:
        """Delete the agent's messages with `seq >= start_seq`; returns how many."""
        with self.transaction():
            if not self.conn.execute(
                "SELECT 1 FROM agents WHERE id = %s FOR NO KEY UPDATE", [agent_id]
            ).fetchone():
                return 0
            gone = self.conn.execute(
                "DELETE FROM messages WHERE agent_id = %s AND seq >= %s "
                "RETURNING seq, search_length",
                [agent_id, start_seq],
            ).fetchall()
            if not gone:
                return 0
            self.conn.execute(
                "UPDATE agents SET message_count = message_count - %s, "
                "message_tokens = message_tokens - %s WHERE id = %s",
                [len(gone), sum(r[1] for r in gone), agent_id],
            )
            delete_vectors_of(self.conn, agent_id, "message", [r[0] for r in gone])
            return len(gone)

    @guarded
    def last_messages(self, agent_id: str, limit: int) -> list[Message]:
        """The agent's newest `limit` messages, oldest first."""
        rows = self.conn.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.agent_id = %s "
            "ORDER BY m.seq DESC LIMIT %s",
            [agent_id, limit],
        ).fetchall()
        return [message_from_row(r) for r in reversed(rows)]

    @guarded
    def first_messages(self, agent_id: str, start_seq: int, limit: int) -> list[Message]:
        """The agent's oldest `limit` messages from `start_seq`, oldest first."""
        rows = self.conn.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.agent_id = %s AND m.seq >= %s "
            "ORDER BY m.seq LIMIT %s",
            [agent_id, start_seq, limit],
        ).fetchall()
        return [message_from_row(r) for r in rows]

    @guarded
    def recent_messages(
        self, agent_id: str, limit: int, offset: int = 0, since: datetime | None = None
    ) -> tuple[list[Message], int]:
        """One page of the agent's messages counted from the newest, oldest
        first, and how many there are (from `since`)."""
        where, params = "m.agent_id = %s", [agent_id]
        if since is not None:
            where += " AND m.created_at >= %s"
            params.append(since)
        with self.snapshot():  # the page and the count from the same moment
            total = self.conn.execute(
                f"SELECT COUNT(*) FROM messages m WHERE {where}", params
            ).fetchone()[0]
            rows = self.conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE {where} "
                "ORDER BY m.seq DESC LIMIT %s OFFSET %s",
                [*params, limit, offset],
            ).fetchall()
        return [message_from_row(r) for r in reversed(rows)], total

    @guarded
    def messages_from(self, agent_id: str, start_seq: int) -> list[Message]:
        """The agent's messages with `seq >= start_seq`, oldest first (new
        objects every time: the contract allows it)."""
        rows = self.conn.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.agent_id = %s AND m.seq >= %s "
            "ORDER BY m.seq",
            [agent_id, start_seq],
        ).fetchall()
        return [message_from_row(r) for r in rows]

    @guarded
    def search_messages(
        self,
        agent_id: str,
        query: str,
        limit: int,
        offset: int = 0,
        exclude_step_id: str | None = None,
    ) -> tuple[list[Message], int]:
        """One page of `rank_messages`, and how many matched."""
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
        budget: int = PG_RANK_BUDGET,
    ) -> Ranking[Message]:
        """The best `limit` user and assistant messages holding any word of
        `query`, with their BM25 scores, and how many match (budgeted: see
        fulltext.py)."""
        filters = (_NOT_IN_STEP, {"step": exclude_step_id})
        found = self.ranked_rows(
            "messages", agent_id, query, MESSAGE_COLUMNS, filters, limit, limit, budget
        )
        scored = [(message_from_row(r), r[10]) for r in found.rows]
        return Ranking(scored, found.total, found.proven)

    @guarded
    def messages_by_seq(
        self, agent_id: str, seqs: Sequence[int], exclude_step_id: str | None = None
    ) -> dict[int, Message]:
        if not seqs:
            return {}
        rows = self.conn.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.agent_id = %(agent)s "
            f"AND m.seq = ANY(%(seqs)s){_NOT_IN_STEP}",
            # int(): seqs from a vector index are numpy integers, which psycopg refuses
            {"agent": agent_id, "seqs": [int(s) for s in seqs], "step": exclude_step_id},
        ).fetchall()
        return {r[0]: message_from_row(r) for r in rows}

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
        inclusive (UTC days), oldest first: one page, and the total."""
        low, high = day_bounds(start, end)
        where = (
            "m.agent_id = %(agent)s AND m.created_at >= %(low)s AND m.created_at < %(high)s "
            "AND m.search_text IS NOT NULL" + _NOT_IN_STEP
        )
        args = {
            "agent": agent_id,
            "low": low,
            "high": high,
            "step": exclude_step_id,
            "limit": limit,
            "offset": offset,
        }
        with self.snapshot():
            total = self.conn.execute(
                f"SELECT COUNT(*) FROM messages m WHERE {where}", args
            ).fetchone()[0]
            rows = self.conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE {where} "
                "ORDER BY m.seq LIMIT %(limit)s OFFSET %(offset)s",
                args,
            ).fetchall()
        return [message_from_row(r) for r in rows], total
