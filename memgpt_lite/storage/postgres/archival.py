"""PostgreSQL's writes and full-text ranking of passages (a part of
`PostgresStore`); the reads are core/archival.py's, vectors vectors.py's.

As in messages.py, each write locks the agent's row first, then writes the
rows and moves the counters SQLite's triggers move (`passage_count`,
`passage_tokens`, `memory_updated_at` on insert; the count and tokens on
delete, with the passage's vector). A passage's tsvector is its text weighted
A and its context weighted D (fulltext.py). A batch is one INSERT, so a load
of thousands of passages is one round trip.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import Passage
from memgpt_lite.storage.core.errors import NO_PASSAGE
from memgpt_lite.storage.core.rows import PASSAGE_COLUMNS, passage_from_row, text_hash
from memgpt_lite.storage.core.sql import Cursor, Search
from memgpt_lite.storage.postgres.fulltext import (
    PG_RANK_BUDGET,
    TextSearch,
    plain_text,
    to_tsvector,
    word_count,
)
from memgpt_lite.storage.postgres.vectors import delete_vectors_of
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
    """Mixed into `PostgresStore` (`_hold` is its primitives')."""

    conn: psycopg.Connection
    _hold: Callable[[str, Sequence[Any]], Cursor]
    rank_budget = PG_RANK_BUDGET

    def _insert_passages(self, passages: Sequence[Passage]) -> list[bool]:
        """Skipping exact duplicates of a passage the agent has (or one
        earlier in the batch), in one statement."""
        seen: set[tuple[str, str]] = set()
        batch = []
        for passage in passages:
            key = (passage.agent_id, text_hash(passage.text))
            if key not in seen:  # a second one would be skipped by the first
                seen.add(key)
                batch.append(passage)
        self._lock_agents([p.agent_id for p in batch])
        rows = self._send(_INSERT, _columns(batch)).fetchall()
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
            self._hold(
                "UPDATE agents SET passage_count = passage_count + %s, "
                "passage_tokens = passage_tokens + %s, memory_updated_at = %s WHERE id = %s",
                [count, tokens, last, agent_id],
            )

    def _delete_passage_row(self, agent_id: str, passage_id: str) -> str | None:
        """The agent's row locked first; its counters moved, the vector dropped."""
        if not self.conn.execute(
            "SELECT 1 FROM agents WHERE id = %s FOR NO KEY UPDATE", [agent_id]
        ).fetchone():
            raise NotFoundError(NO_PASSAGE.format(passage_id))
        row = self.conn.execute(
            "DELETE FROM passages WHERE agent_id = %s AND id = %s "
            "RETURNING seq, search_length, superseded_by",
            [agent_id, passage_id],
        ).fetchone()
        if row is None:
            raise NotFoundError(NO_PASSAGE.format(passage_id))
        self.conn.execute(
            "UPDATE agents SET passage_count = passage_count - 1, "
            "passage_tokens = passage_tokens - %s WHERE id = %s",
            [row[1], agent_id],
        )
        delete_vectors_of(self.conn, agent_id, "passage", [row[0]])
        return row[2]

    def _rank_passages(self, search: Search) -> Ranking[Passage]:
        """By BM25 over the tsvectors, a passage's context counting half its
        text (budgeted: see fulltext.py); with `drop_over_budget`, a word in
        more than `budget` of the agent's passages is left out of the query."""
        found = self.ranked_rows("passages", PASSAGE_COLUMNS, search)
        return Ranking(
            [(passage_from_row(r), r[-1]) for r in found.rows], found.total, found.proven
        )
