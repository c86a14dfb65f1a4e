"""The store's SQL for archival passages and stored vectors (a part of `Store`).

Vectors are float32 blobs in one table for passages and messages; a vector's
rowid is the cursor of `load_vectors`. An agent's `vector_inserts` /
`vector_deletes` counters, kept by triggers, let an in-memory index tell in
O(1) whether another process changed them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import date, datetime
from typing import Any

import numpy as np
from sqlite_utils import Database

from memgpt_lite.errors import NotFoundError
from memgpt_lite.memory.ranking import RANK_BUDGET, fts_words
from memgpt_lite.models import Passage
from memgpt_lite.storage.core.rows import check_supersession, text_hash
from memgpt_lite.storage.protocol import Owner, Ranking, StoredVectors, VectorCounters
from memgpt_lite.storage.sqlite.fulltext import BudgetedSearch, Candidates, Part, best_rows
from memgpt_lite.storage.sqlite.period_depth import PeriodDepth
from memgpt_lite.storage.sqlite.primitives import guarded
from memgpt_lite.storage.sqlite.rows import day_bounds, require_agents, seq_chunks, stored_time


def passage_filters(
    tags: Sequence[str] | None,
    start: date | None,
    end: date | None,
    superseded: bool | None = None,
) -> tuple[str, list[Any]]:
    """SQL conditions on `p` for tag (any of them), date and supersession
    filters (None: every passage; False: current ones; True: replaced ones)."""
    where, params = "", []
    if superseded is not None:
        where += f" AND p.superseded_by IS {'NOT ' if superseded else ''}NULL"
    if tags:
        marks = ",".join("?" * len(tags))
        where += f" AND EXISTS (SELECT 1 FROM json_each(p.tags) WHERE value IN ({marks}))"
        params += list(tags)
    low, high = day_bounds(start, end)
    if low:
        where += " AND p.created_at >= ?"
        params.append(low)
    if high:
        where += " AND p.created_at < ?"
        params.append(high)
    return where, params


_PASSAGE_COLUMNS = (
    "p.seq, p.id, p.agent_id, p.text, p.tags, p.created_at, p.context,"
    " p.superseded_by, p.superseded_at"
)


def _passage(row: Sequence[Any]) -> Passage:
    seq, id_, agent_id, text, tags, created_at, context, superseded_by, superseded_at = row[:9]
    return Passage(
        seq=seq,
        id=id_,
        agent_id=agent_id,
        text=text,
        tags=json.loads(tags),
        created_at=created_at,
        context=context,
        superseded_by=superseded_by,
        superseded_at=superseded_at,
    )


# Among the best `depth` rows of one part of a ranking (seq, score:
# `source`), with the count of all its rows: the best `limit` (part 0), and
# the best `period_limit` of those stored within a period (part 1, `where`
# on `p`). Merged over the ranking's parts, each is the ranking's own: a row
# among its best has one of its parts' best scores, and ranks there too.
# Only the best `depth` are sorted and read (their stored time): reading it
# for every match cost 40% more than the ranking at 1M passages.
_TOP_AND_PERIOD = """
WITH b AS MATERIALIZED ({source}), top AS MATERIALIZED (
    SELECT seq, score, (SELECT count(*) FROM b) AS total FROM b
    ORDER BY score DESC, seq DESC LIMIT ?
)
SELECT {columns}, t.score, t.total, t.part FROM (
    SELECT * FROM (
        SELECT seq, score, total, 0 AS part FROM top ORDER BY score DESC, seq DESC LIMIT ?
    )
    UNION ALL
    SELECT * FROM (
        SELECT top.seq, top.score, top.total, 1 FROM top CROSS JOIN passages p
        ON p.seq = top.seq WHERE 1{where} ORDER BY top.score DESC, top.seq DESC LIMIT ?
    )
) t CROSS JOIN passages p ON p.seq = t.seq
ORDER BY t.part, t.score DESC, t.seq DESC
"""


class ArchivalStore(BudgetedSearch, PeriodDepth):
    """Passages and vectors. Mixed into `Store`, which provides `db`, `lock`,
    `transaction` and `snapshot`."""

    db: Database
    transaction: Callable[[], AbstractContextManager[None]]  # provided by Store
    snapshot: Callable[[], AbstractContextManager[None]]
    in_transaction: Callable[[], bool]

    @guarded
    def add_passages(self, passages: Sequence[Passage]) -> list[bool]:
        """Store passages, skipping exact duplicates of a passage the agent
        already has. Returns, per passage, whether it was stored; sets `seq`."""
        stored = []
        with self.transaction():
            require_agents(self.db, (p.agent_id for p in passages))
            for passage in passages:
                cursor = self.db.execute(
                    "INSERT OR IGNORE INTO passages (id, agent_id, text, tags, created_at,"
                    " text_hash, context, superseded_by, superseded_at)"
                    " VALUES (?,?,?,?,?,?,?,?,?)",
                    [
                        passage.id,
                        passage.agent_id,
                        passage.text,
                        json.dumps(passage.tags),
                        stored_time(passage.created_at),
                        text_hash(passage.text),
                        passage.context,
                        passage.superseded_by,
                        stored_time(passage.superseded_at) if passage.superseded_at else None,
                    ],
                )
                stored.append(cursor.rowcount == 1)
                if cursor.rowcount == 1:
                    passage.seq = cursor.lastrowid
        return stored

    @guarded
    def add_passage(self, passage: Passage) -> bool:
        return self.add_passages([passage])[0]

    @guarded
    def passage_id_for_text(self, agent_id: str, text: str) -> str | None:
        """The id of the agent's passage with exactly this text, if any."""
        row = self.db.execute(
            "SELECT id FROM passages WHERE agent_id = ? AND text_hash = ?",
            [agent_id, text_hash(text)],
        ).fetchone()
        return row[0] if row else None

    @guarded
    def get_passage(self, agent_id: str, passage_id: str) -> Passage:
        row = self.db.execute(
            f"SELECT {_PASSAGE_COLUMNS} FROM passages p WHERE p.agent_id = ? AND p.id = ?",
            [agent_id, passage_id],
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no passage {passage_id!r} in this agent's archival memory")
        return _passage(row)

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
        """Passages newest first, with the total that match the filters."""
        where, params = passage_filters(tags, start, end, superseded)
        total = self.db.execute(
            f"SELECT COUNT(*) FROM passages p WHERE p.agent_id = ?{where}", [agent_id, *params]
        ).fetchone()[0]
        rows = self.db.execute(
            f"SELECT {_PASSAGE_COLUMNS} FROM passages p WHERE p.agent_id = ?{where} "
            "ORDER BY p.seq DESC LIMIT ? OFFSET ?",
            [agent_id, *params, limit, offset],
        )
        return [_passage(r) for r in rows], total

    @guarded
    def supersede_passages(
        self, agent_id: str, old_ids: Sequence[str], new_id: str, at: datetime
    ) -> None:
        """Mark `old_ids` replaced by `new_id` at `at` (see the protocol)."""
        old_ids = list(dict.fromkeys(old_ids))
        check_supersession(old_ids, new_id)
        with self.transaction():
            states = dict(
                self.db.execute(
                    "SELECT id, superseded_by FROM passages WHERE agent_id = ? AND id IN "
                    f"({','.join('?' * (len(old_ids) + 1))})",
                    [agent_id, new_id, *old_ids],
                ).fetchall()
            )
            check_supersession(old_ids, new_id, states)
            self.db.conn.executemany(
                "UPDATE passages SET superseded_by = ?, superseded_at = ? "
                "WHERE agent_id = ? AND id = ?",
                [(new_id, stored_time(at), agent_id, old) for old in old_ids],
            )

    @guarded
    def passages_replaced_by(self, agent_id: str, passage_id: str) -> list[Passage]:
        """The agent's passages that `passage_id` replaced, oldest first."""
        rows = self.db.execute(
            f"SELECT {_PASSAGE_COLUMNS} FROM passages p "
            "WHERE p.agent_id = ? AND p.superseded_by = ? ORDER BY p.seq",
            [agent_id, passage_id],
        )
        return [_passage(r) for r in rows]

    @guarded
    def delete_passage(self, agent_id: str, passage_id: str) -> None:
        with self.transaction():
            row = self.db.execute(
                "SELECT superseded_by FROM passages WHERE agent_id = ? AND id = ?",
                [agent_id, passage_id],
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no passage {passage_id!r} in this agent's archival memory")
            self.db.execute(
                "DELETE FROM passages WHERE agent_id = ? AND id = ?", [agent_id, passage_id]
            )
            # What it replaced passes to what replaced it, or is current again.
            self.db.execute(
                "UPDATE passages SET superseded_by = ?, superseded_at = "
                "CASE WHEN ? IS NULL THEN NULL ELSE superseded_at END "
                "WHERE agent_id = ? AND superseded_by = ?",
                [row[0], row[0], agent_id, passage_id],
            )

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
        budget: int = RANK_BUDGET,
        drop_over_budget: bool = False,
    ) -> Ranking[Passage]:
        """The best `limit` passages matching any word of `query` (see
        `fts_words`), with their BM25 scores (higher is better), and how many
        match.

        When the query's words match more than `budget` passages, only those
        holding its rarer words are scored (see RANK_BUDGET), and the count
        covers those; `Ranking.proven` says whether the first `exact` (default:
        all) are still FTS5's exact ranking. With `drop_over_budget`, a word
        found in more than `budget` passages is left out of the query."""
        words = fts_words(query)
        if drop_over_budget:
            words = self.within_budget("passages", words, budget)
        if not words:
            return Ranking([], 0, proven=True)
        exact = limit if exact is None else min(exact, limit)
        filters = passage_filters(tags, start, end, superseded)
        candidates = self._scored(agent_id, words, budget, filters)
        rows, total = self.top_rows("passages", _PASSAGE_COLUMNS, candidates.parts, limit)
        ranked = [(_passage(r), r[-1]) for r in rows]
        return Ranking(ranked, total, candidates.left_out.proves([s for _, s in ranked], exact))

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
        """`rank_passages`, and the best `period_limit` of the passages it
        ranks that were stored within `period`, if found among its best (how
        many: period_depth.py; see the protocol). One evaluation of the
        full-text query serves both: ranking again within the period cost as
        much as the first ranking (the candidates, chosen by the words alone,
        are the same)."""
        words = fts_words(query)
        if not words:
            return Ranking([], 0, proven=True), []
        filters = passage_filters(tags, start, end, superseded)
        candidates = self._scored(agent_id, words, RANK_BUDGET, filters)
        where, params = passage_filters(None, *period)
        depth = self.period_depth(agent_id, period, limit, period_limit)
        results = self.run_parts(
            [
                Part(
                    _TOP_AND_PERIOD.format(source=sql, columns=_PASSAGE_COLUMNS, where=where),
                    [*args, depth, limit, *params, period_limit],
                )
                for sql, args in candidates.parts
            ]
        )
        top = best_rows([[r for r in rows if r[-1] == 0] for rows in results], -3, limit)
        within = best_rows([[r for r in rows if r[-1] == 1] for rows in results], -3, period_limit)
        ranked = [(_passage(r), r[-3]) for r in top]
        total = results[0][0][-2] if results[0] else 0  # the first part holds every row
        proven = candidates.left_out.proves([s for _, s in ranked], limit)
        # Those left out of a part's best `depth` score below each of them
        # there: with fewer than `period_limit` found in a part, one of them
        # may be next.
        known = all(
            sum(r[-1] for r in rows) >= period_limit or not rows or rows[0][-2] <= depth
            for rows in results
        )
        within_period = [(_passage(r), r[-3]) for r in within]
        return Ranking(ranked, total, proven), within_period if known else None

    def _scored(
        self, agent_id: str, words: Sequence[str], budget: int, filters: tuple[str, list[Any]]
    ) -> Candidates:
        """The budgeted candidates of `words`, each part keeping the rows
        that are the agent's and pass `filters` (`passage_filters`)."""
        candidates = self.candidates("passages", words, budget)
        where, params = filters
        # The covering index (agent_id, seq) tells whose a passage is without
        # reading it, unless a tag or date filter needs the row. Even so that
        # costs about 2 µs a match, so it is skipped when no other agent has
        # a passage (the full-text index then holds only this agent's).
        if not where and self._sole_archivist(agent_id):
            return candidates
        owner = "passages p INDEXED BY passages_agent_seq" if not where else "passages p"

        def agents_own(part: Part) -> Part:
            return Part(
                f"SELECT b.seq, b.score FROM ({part.sql}) b CROSS JOIN {owner} "
                f"ON p.seq = b.seq WHERE p.agent_id = ?{where}",
                [*part.args, agent_id, *params],
            )

        return candidates.filtered(agents_own)

    def _sole_archivist(self, agent_id: str) -> bool:
        """Whether no other agent has a passage (counts kept by triggers)."""
        return not self.db.execute(
            "SELECT EXISTS (SELECT 1 FROM agents WHERE id != ? AND passage_count > 0)",
            [agent_id],
        ).fetchone()[0]

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
        seqs = list(seqs)
        if not seqs:
            return {}
        where, params = passage_filters(tags, start, end, superseded)
        found: dict[int, Passage] = {}
        for chunk, marks in seq_chunks(seqs):
            rows = self.db.execute(
                f"SELECT {_PASSAGE_COLUMNS} FROM passages p WHERE p.agent_id = ? "
                f"AND p.seq IN ({marks}){where}",
                [agent_id, *chunk, *params],
            )
            found.update((r[0], _passage(r)) for r in rows)
        return found

    # Vectors

    @guarded
    def add_vectors(
        self, agent_id: str, owner: Owner, seqs: Sequence[int], vectors: np.ndarray
    ) -> None:
        rows = [
            (agent_id, owner, int(seq), np.asarray(v, dtype=np.float32).tobytes())
            for seq, v in zip(seqs, vectors, strict=True)
        ]
        with self.transaction():
            self.db.conn.executemany(
                "INSERT OR REPLACE INTO vectors (agent_id, owner, item_seq, vector) "
                "VALUES (?,?,?,?)",
                rows,
            )

    @guarded
    def vector_counters(self, agent_id: str) -> VectorCounters:
        row = self.db.execute(
            "SELECT vector_inserts, vector_deletes FROM agents WHERE id = ?", [agent_id]
        ).fetchone()
        return VectorCounters(row[0], row[1]) if row else VectorCounters(0, 0)

    @guarded
    def load_vectors(
        self, agent_id: str, owner: Owner, after: int, dimension: int
    ) -> StoredVectors:
        """Vectors stored after cursor `after` (a vector's rowid), oldest first.

        Read a chunk at a time into arrays sized by a count first: holding every
        blob, then their join, then the matrix (1.5 GB each for 1M vectors of
        384 dimensions) took three times the memory and twice the time. The
        count and the rows are read in one snapshot, so they agree."""
        where = "WHERE agent_id = ? AND owner = ? AND rowid > ?"
        args = [agent_id, owner, after]
        with self.snapshot():
            count = self.db.execute(f"SELECT COUNT(*) FROM vectors {where}", args).fetchone()[0]
            rowids = np.empty(count, dtype=np.int64)
            seqs = np.empty(count, dtype=np.int64)
            matrix = np.empty((count, dimension), dtype=np.float32)
            cursor = self.db.conn.execute(
                f"SELECT rowid, item_seq, vector FROM vectors {where} ORDER BY rowid", args
            )
            size = 0
            while rows := cursor.fetchmany(4096):
                end = size + len(rows)
                batch_rowids, batch_seqs, blobs = zip(*rows, strict=True)
                rowids[size:end] = batch_rowids
                seqs[size:end] = batch_seqs
                matrix[size:end] = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(
                    len(rows), dimension
                )
                size = end
        return StoredVectors(seqs, matrix, int(rowids[-1]) if count else after)

    @guarded
    def delete_vectors(self, agent_id: str) -> None:
        with self.transaction():
            self.db.execute("DELETE FROM vectors WHERE agent_id = ?", [agent_id])

    @guarded
    def unembedded_passages(self, agent_id: str, limit: int) -> list[Passage]:
        rows = self._unembedded(
            agent_id,
            "passage",
            f"SELECT {_PASSAGE_COLUMNS} FROM passages p WHERE p.agent_id = ? AND p.seq > ? "
            "AND NOT EXISTS "
            "(SELECT 1 FROM vectors v WHERE v.owner = 'passage' AND v.item_seq = p.seq) "
            "ORDER BY p.seq LIMIT ?",
            "SELECT seq FROM passages WHERE agent_id = ? AND seq < ? ORDER BY seq DESC LIMIT 1",
            limit,
        )
        return [_passage(r) for r in rows]

    @guarded
    def unembedded_messages(self, agent_id: str, limit: int) -> list[tuple[int, str]]:
        """(seq, search text) of searchable messages that have no vector yet."""
        rows = self._unembedded(
            agent_id,
            "message",
            "SELECT m.seq, m.search_text FROM messages m WHERE m.agent_id = ? AND m.seq > ? "
            "AND m.search_text IS NOT NULL AND NOT EXISTS "
            "(SELECT 1 FROM vectors v WHERE v.owner = 'message' AND v.item_seq = m.seq) "
            "ORDER BY m.seq LIMIT ?",
            "SELECT seq FROM messages WHERE agent_id = ? AND seq < ? "
            "AND search_text IS NOT NULL ORDER BY seq DESC LIMIT 1",
            limit,
        )
        return [(r[0], r[1]) for r in rows]

    def _unembedded(
        self, agent_id: str, owner: Owner, pending_sql: str, last_sql: str, limit: int
    ) -> list[Any]:
        """Rows of `pending_sql`: the agent's items (of one kind) that have no
        vector, by seq, from the first one past a remembered seq.

        Proving that no item lacks a vector means visiting every item, on every
        hybrid search. So each `Store` remembers, per agent and kind, a seq up
        to which every item had a vector, and the agent's `vector_deletes`
        counter then: until the counter moves, no vector was removed, and an
        item stored since has a higher seq (SQLite gives a new row the largest
        rowid + 1, and the remembered item still exists, or deleting it would
        have deleted its vector). `last_sql` finds the seq to remember: the
        agent's last item that needs a vector below the first one found without.
        """
        marks = self._embedded_marks()
        outer = self.in_transaction()
        with self.snapshot():  # the counter and both queries agree
            deletes = self.vector_counters(agent_id).deletes
            seen = self._embedded_marks(pending=True).get((agent_id, owner))
            known, after = seen or marks.get((agent_id, owner), (deletes, 0))
            if known != deletes:
                after = 0
            rows = self.db.execute(pending_sql, [agent_id, after, limit]).fetchall()
            last = self.db.execute(
                last_sql, [agent_id, rows[0][0] if rows else 2**63 - 1]
            ).fetchone()
        mark = (deletes, max(after, last[0] if last else 0))
        if outer:  # seen inside a write that may still roll back: kept if it commits
            self._embedded_marks(pending=True)[(agent_id, owner)] = mark
        else:
            marks[(agent_id, owner)] = mark
        return rows

    def _embedded_marks(self, pending: bool = False) -> dict[tuple[str, str], tuple[int, int]]:
        """What `_unembedded` remembers, and what it saw inside the open write."""
        key = "_embedded_pending" if pending else "_embedded_through"
        return self.__dict__.setdefault(key, {})

    def transaction_ended(self, committed: bool) -> None:
        """Called when a transaction (or snapshot) ends, and when a nested
        write rolls back to its savepoint: marks seen inside a write that rolled back are
        forgotten (the rows they vouched for may be gone, and their seqs given
        again to rows with no vector)."""
        pending = self._embedded_marks(pending=True)
        if committed:
            self._embedded_marks().update(pending)
        pending.clear()
