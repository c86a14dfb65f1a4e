"""The store's SQL for archival passages: a part of `PostgresStore` (their
vectors are vectors.py's).

As in messages.py, each write locks the agent's row first, then writes the
rows and moves the counters SQLite's triggers move (`passage_count`,
`passage_tokens`, `memory_updated_at` on insert; the count and tokens on
delete, with the passage's vector). A passage's tsvector is its text weighted
A and its context weighted D (fulltext.py). A batch is one INSERT, so a load
of thousands of passages is one round trip.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import date, datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import Passage
from memgpt_lite.storage.core.rows import check_supersession, text_hash
from memgpt_lite.storage.postgres.fulltext import (
    PG_RANK_BUDGET,
    TextSearch,
    plain_text,
    to_tsvector,
    word_count,
)
from memgpt_lite.storage.postgres.primitives import guarded
from memgpt_lite.storage.postgres.rows import (
    PASSAGE_COLUMNS,
    day_bounds,
    delete_vectors_of,
    lock_agents,
    passage_from_row,
)
from memgpt_lite.storage.protocol import Ranking

_INSERT = sql.SQL(
    "INSERT INTO passages (id, agent_id, text, context, tags, text_hash, created_at, "
    "search_length, search_vector, superseded_by, superseded_at) "
    "SELECT r.id, r.agent_id, r.text, r.context, "
    "ARRAY(SELECT jsonb_array_elements_text(r.tags)), r.text_hash, r.created_at, "
    "r.search_length, setweight({text}, 'A') || setweight({context}, 'D'), "
    "r.superseded_by, r.superseded_at "
    "FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::jsonb[], %s::text[], "
    "%s::timestamptz[], %s::int[], %s::text[], %s::text[], %s::text[], %s::timestamptz[]) "
    "WITH ORDINALITY AS r(id, agent_id, text, context, tags, text_hash, created_at, "
    "search_length, plain_text, plain_context, superseded_by, superseded_at, n) ORDER BY r.n "
    "ON CONFLICT (agent_id, text_hash) DO NOTHING RETURNING seq, id, search_length"
).format(text=to_tsvector("r.plain_text"), context=to_tsvector("r.plain_context"))


def passage_filters(
    tags: Sequence[str] | None,
    start: date | None,
    end: date | None,
    superseded: bool | None = None,
) -> tuple[str, dict[str, Any]]:
    """SQL conditions on `p` for tag (any of them), date and supersession
    filters (None: every passage; False: current ones; True: replaced ones),
    with their named parameters."""
    where, params = "", {}
    if superseded is not None:
        where += f" AND p.superseded_by IS {'NOT ' if superseded else ''}NULL"
    if tags:
        where += " AND p.tags && %(tags)s::text[]"
        params["tags"] = list(tags)
    low, high = day_bounds(start, end)
    if low:
        where += " AND p.created_at >= %(low)s"
        params["low"] = low
    if high:
        where += " AND p.created_at < %(high)s"
        params["high"] = high
    return where, params


def _columns(passages: Sequence[Passage]) -> list[list[Any]]:
    """The passages as one array per column of `_INSERT`."""
    return [
        [p.id for p in passages],
        [p.agent_id for p in passages],
        [p.text for p in passages],
        [p.context for p in passages],
        [Jsonb(p.tags) for p in passages],
        [text_hash(p.text) for p in passages],
        [p.created_at for p in passages],
        [word_count(p.text) + word_count(p.context) for p in passages],
        [plain_text(p.text) for p in passages],
        [plain_text(p.context) for p in passages],
        [p.superseded_by for p in passages],
        [p.superseded_at for p in passages],
    ]


class ArchivalStore(TextSearch):
    """Passages. Mixed into `PostgresStore`."""

    conn: psycopg.Connection
    transaction: Callable[[], AbstractContextManager[None]]
    snapshot: Callable[[], AbstractContextManager[None]]

    @guarded
    def add_passages(self, passages: Sequence[Passage]) -> list[bool]:
        """Store passages, skipping exact duplicates of a passage the agent
        has (or one earlier in the batch). Returns, per passage, whether it
        was stored; sets `seq` on those."""
        if not passages:
            return []
        seen: set[tuple[str, str]] = set()
        batch = []
        for passage in passages:
            key = (passage.agent_id, text_hash(passage.text))
            if key not in seen:  # a second one would be skipped by the first
                seen.add(key)
                batch.append(passage)
        with self.transaction():
            lock_agents(self.conn, [p.agent_id for p in batch])
            rows = self.conn.execute(_INSERT, _columns(batch)).fetchall()
            stored = {id_: (seq, length) for seq, id_, length in rows}
            self._count_added([p for p in batch if p.id in stored], stored)
        kept = {id(p) for p in batch if p.id in stored}
        for passage in batch:
            if id(passage) in kept:
                passage.seq = stored[passage.id][0]
        return [id(p) in kept for p in passages]

    def _count_added(self, added: Sequence[Passage], stored: dict[str, tuple[int, int]]) -> None:
        """Move the agents' counters for the passages stored, and their
        memory change time to the last one's (as SQLite's trigger does)."""
        totals: dict[str, list[Any]] = {}
        for passage in added:
            count, tokens, _ = totals.get(passage.agent_id, (0, 0, None))
            totals[passage.agent_id] = [
                count + 1,
                tokens + stored[passage.id][1],
                passage.created_at,
            ]
        for agent_id in sorted(totals):
            count, tokens, last = totals[agent_id]
            self.conn.execute(
                "UPDATE agents SET passage_count = passage_count + %s, "
                "passage_tokens = passage_tokens + %s, memory_updated_at = %s WHERE id = %s",
                [count, tokens, last, agent_id],
            )

    @guarded
    def add_passage(self, passage: Passage) -> bool:
        return self.add_passages([passage])[0]

    @guarded
    def passage_id_for_text(self, agent_id: str, text: str) -> str | None:
        row = self.conn.execute(
            "SELECT id FROM passages WHERE agent_id = %s AND text_hash = %s",
            [agent_id, text_hash(text)],
        ).fetchone()
        return row[0] if row else None

    @guarded
    def get_passage(self, agent_id: str, passage_id: str) -> Passage:
        row = self.conn.execute(
            f"SELECT {PASSAGE_COLUMNS} FROM passages p WHERE p.agent_id = %s AND p.id = %s",
            [agent_id, passage_id],
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no passage {passage_id!r} in this agent's archival memory")
        return passage_from_row(row)

    @guarded
    def list_passages(
        self,
        agent_id: str,
        limit: int,
        offset: int = 0,
        tags: Sequence[str] | None = None,
        start: date | None = None,
        end: date | None = None,
        *,
        superseded: bool | None = None,
    ) -> tuple[list[Passage], int]:
        """Passages newest first, with the total that pass the filters."""
        where, params = passage_filters(tags, start, end, superseded)
        with self.snapshot():  # the page and the count from the same moment
            args = {**params, "agent": agent_id, "limit": limit, "offset": offset}
            total = self.conn.execute(
                f"SELECT COUNT(*) FROM passages p WHERE p.agent_id = %(agent)s{where}", args
            ).fetchone()[0]
            rows = self.conn.execute(
                f"SELECT {PASSAGE_COLUMNS} FROM passages p WHERE p.agent_id = %(agent)s{where} "
                "ORDER BY p.seq DESC LIMIT %(limit)s OFFSET %(offset)s",
                args,
            ).fetchall()
        return [passage_from_row(r) for r in rows], total

    @guarded
    def passages_by_seq(
        self,
        agent_id: str,
        seqs: Iterable[int],
        tags: Sequence[str] | None = None,
        start: date | None = None,
        end: date | None = None,
        *,
        superseded: bool | None = None,
    ) -> dict[int, Passage]:
        """The agent's passages among `seqs` that pass the filters."""
        seqs = [int(s) for s in seqs]  # numpy integers from a vector index: psycopg refuses them
        if not seqs:
            return {}
        where, params = passage_filters(tags, start, end, superseded)
        rows = self.conn.execute(
            f"SELECT {PASSAGE_COLUMNS} FROM passages p WHERE p.agent_id = %(agent)s "
            f"AND p.seq = ANY(%(seqs)s){where}",
            {**params, "agent": agent_id, "seqs": seqs},
        ).fetchall()
        return {r[0]: passage_from_row(r) for r in rows}

    @guarded
    def supersede_passages(
        self, agent_id: str, old_ids: Sequence[str], new_id: str, at: datetime
    ) -> None:
        """Mark `old_ids` replaced by `new_id` at `at` (see the protocol)."""
        old_ids = list(dict.fromkeys(old_ids))
        check_supersession(old_ids, new_id)
        with self.transaction():
            # Row locks: a concurrent supersession of the same passages waits,
            # then sees this one's result (no cycle can form between them).
            rows = self.conn.execute(
                "SELECT id, superseded_by FROM passages WHERE agent_id = %s AND id = ANY(%s) "
                "ORDER BY id FOR NO KEY UPDATE",
                [agent_id, [new_id, *old_ids]],
            ).fetchall()
            check_supersession(old_ids, new_id, dict(rows))
            self.conn.execute(
                "UPDATE passages SET superseded_by = %s, superseded_at = %s "
                "WHERE agent_id = %s AND id = ANY(%s)",
                [new_id, at, agent_id, old_ids],
            )

    @guarded
    def passages_replaced_by(self, agent_id: str, passage_id: str) -> list[Passage]:
        """The agent's passages that `passage_id` replaced, oldest first."""
        rows = self.conn.execute(
            f"SELECT {PASSAGE_COLUMNS} FROM passages p "
            "WHERE p.agent_id = %s AND p.superseded_by = %s ORDER BY p.seq",
            [agent_id, passage_id],
        ).fetchall()
        return [passage_from_row(r) for r in rows]

    @guarded
    def delete_passage(self, agent_id: str, passage_id: str) -> None:
        """Delete one passage and its vector."""
        with self.transaction():
            if not self.conn.execute(
                "SELECT 1 FROM agents WHERE id = %s FOR NO KEY UPDATE", [agent_id]
            ).fetchone():
                raise NotFoundError(f"no passage {passage_id!r} in this agent's archival memory")
            row = self.conn.execute(
                "DELETE FROM passages WHERE agent_id = %s AND id = %s "
                "RETURNING seq, search_length, superseded_by",
                [agent_id, passage_id],
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no passage {passage_id!r} in this agent's archival memory")
            # What it replaced passes to what replaced it, or is current again.
            self.conn.execute(
                "UPDATE passages SET superseded_by = %(by)s, superseded_at = "
                "CASE WHEN %(by)s::text IS NULL THEN NULL ELSE superseded_at END "
                "WHERE agent_id = %(agent)s AND superseded_by = %(id)s",
                {"by": row[2], "agent": agent_id, "id": passage_id},
            )
            self.conn.execute(
                "UPDATE agents SET passage_count = passage_count - 1, "
                "passage_tokens = passage_tokens - %s WHERE id = %s",
                [row[1], agent_id],
            )
            delete_vectors_of(self.conn, agent_id, "passage", [row[0]])

    @guarded
    def rank_passages(
        self,
        agent_id: str,
        query: str,
        limit: int,
        tags: Sequence[str] | None = None,
        start: date | None = None,
        end: date | None = None,
        *,
        exact: int | None = None,
        superseded: bool | None = None,
        budget: int = PG_RANK_BUDGET,
        drop_over_budget: bool = False,
    ) -> Ranking[Passage]:
        """The best `limit` passages matching any word of `query`, with their
        BM25 scores (a passage's context counting half its text), and how many
        match; `Ranking.proven` says whether the first `exact` (default: all)
        are the exact ranking (budgeted: see fulltext.py). With
        `drop_over_budget`, a word in more than `budget` of the agent's
        passages is left out of the query."""
        exact = limit if exact is None else min(exact, limit)
        found = self.ranked_rows(
            "passages",
            agent_id,
            query,
            PASSAGE_COLUMNS,
            passage_filters(tags, start, end, superseded),
            limit,
            exact,
            budget,
            drop_over_budget,
        )
        return Ranking(
            [(passage_from_row(r), r[-1]) for r in found.rows], found.total, found.proven
        )

    @guarded
    def rank_passages_in_period(
        self,
        agent_id: str,
        query: str,
        limit: int,
        tags: Sequence[str] | None = None,
        start: date | None = None,
        end: date | None = None,
        *,
        period: tuple[date | None, date | None],
        period_limit: int,
        superseded: bool | None = None,
    ) -> tuple[Ranking[Passage], list[tuple[Passage, float]] | None]:
        """`rank_passages`, and None for the period's best (see the
        protocol): the caller ranks within the period when it needs them."""
        ranking = self.rank_passages(
            agent_id, query, limit, tags, start, end, superseded=superseded
        )
        return ranking, None
