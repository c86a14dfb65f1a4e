"""Archival memory, passages and vectors, for every backend.

Reads are the core's: a passage by id or by text, pages with filters (any of
some tags, a span of UTC days, replaced or current), passages by seq, what
a passage replaced; supersession, the counters of an agent's vectors, and
the items that have no vector yet. A passage's text is kept once per agent:
`text_hash` (its text, surrounding space trimmed) is unique with its agent.

A backend provides the writes, which keep what it keeps beside the rows
(SQLite's triggers, PostgreSQL's counters, tsvectors and word counts), the
full-text ranking (FTS5 against tsvector ranking), and how vectors are
stored and read (float32 blobs, or pgvector's type searched on the server).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import date, datetime
from typing import Any

import numpy as np

from memgpt_lite.errors import ConfigError, NotFoundError
from memgpt_lite.models import Passage
from memgpt_lite.storage.core.errors import NO_PASSAGE
from memgpt_lite.storage.core.rows import PASSAGE_COLUMNS, passage_from_row, text_hash
from memgpt_lite.storage.core.sql import Filters, Search, stored_datetime
from memgpt_lite.storage.core.transactions import Transactions, guarded
from memgpt_lite.storage.protocol import Owner, Ranking, StoredVectors, VectorCounters

# The agent's items (of one kind) with no vector, oldest first, past a seq;
# and the last one (with a vector, or none would be found) below a seq.
UNEMBEDDED = {
    "passage": (
        f"SELECT {PASSAGE_COLUMNS} FROM passages p WHERE p.agent_id = ? AND p.seq > ? "
        "AND NOT EXISTS "
        "(SELECT 1 FROM vectors v WHERE v.owner = 'passage' AND v.item_seq = p.seq) "
        "ORDER BY p.seq LIMIT ?",
        "SELECT seq FROM passages WHERE agent_id = ? AND seq < ? ORDER BY seq DESC LIMIT 1",
    ),
    "message": (
        "SELECT m.seq, m.search_text FROM messages m WHERE m.agent_id = ? AND m.seq > ? "
        "AND m.search_text IS NOT NULL AND NOT EXISTS "
        "(SELECT 1 FROM vectors v WHERE v.owner = 'message' AND v.item_seq = m.seq) "
        "ORDER BY m.seq LIMIT ?",
        "SELECT seq FROM messages WHERE agent_id = ? AND seq < ? "
        "AND search_text IS NOT NULL ORDER BY seq DESC LIMIT 1",
    ),
}


def check_supersession(
    old_ids: Sequence[str], new_id: str, stored: dict[str, str | None] | None = None
) -> None:
    """Refuse a supersession the protocol refuses: a passage replacing itself,
    before anything is read; then, given `stored` (the `superseded_by` of each
    of the passages found), an unknown id, or a replacement that was itself
    replaced (which could close a cycle: the chain of a fact must end)."""
    if new_id in old_ids:
        raise ConfigError(f"passage {new_id!r} cannot replace itself")
    if stored is None:
        return
    missing = [i for i in [new_id, *old_ids] if i not in stored]
    if missing:
        raise NotFoundError(
            f"no passage {', '.join(map(repr, missing))} in this agent's archival memory"
        )
    if stored[new_id] is not None:
        raise ConfigError(
            f"passage {new_id!r} was itself replaced by {stored[new_id]!r}: "
            "only a current passage can replace others"
        )


class Archival(Transactions):
    """Passages and vectors (see `ArchivalStorage`)."""

    rank_budget: int  # how many matches a ranking scores at most, unless asked otherwise

    # What a backend provides (writes inside a transaction).

    def _insert_passages(self, passages: Sequence[Passage]) -> list[bool]:
        """`add_passages` of at least one passage."""
        raise NotImplementedError

    def _delete_passage_row(self, agent_id: str, passage_id: str) -> str | None:
        """Delete the passage and its vector; the id of the passage that
        replaced it, if one did. NotFoundError if the agent has none such."""
        raise NotImplementedError

    def _rank_passages(self, search: Search) -> Ranking[Passage]:
        """`rank_passages`, by the backend's full-text index."""
        raise NotImplementedError

    def _store_vectors(
        self, agent_id: str, owner: Owner, seqs: list[int], matrix: np.ndarray
    ) -> None:
        """`add_vectors` of at least one (float32 rows)."""
        raise NotImplementedError

    def _delete_vectors(self, agent_id: str) -> None:
        raise NotImplementedError

    def _vector_filter(self, agent_id: str, owner: Owner, after: int, dimension: int) -> Filters:
        """A condition on `vectors` for `load_vectors` (past cursor `after`)."""
        raise NotImplementedError

    def _vector_batches(self, where: str, params: list[Any]) -> Iterator[list[Any]]:
        """The rows (cursor, item seq, stored vector) `where` selects, by
        cursor, a batch at a time."""
        raise NotImplementedError

    def _vector_matrix(self, stored: Sequence[Any], dimension: int) -> np.ndarray:
        """Stored vectors as a float32 matrix."""
        raise NotImplementedError

    def _unembedded(self, agent_id: str, owner: Owner, limit: int) -> list[Any]:
        """Rows of UNEMBEDDED[owner] (a backend may remember where to start)."""
        return self._all(UNEMBEDDED[owner][0], [agent_id, 0, limit])

    # The protocol.

    def passage_filters(
        self,
        tags: Sequence[str] | None,
        start: date | None,
        end: date | None,
        superseded: bool | None = None,
    ) -> Filters:
        """SQL conditions on `p` for tag (any of them), date and supersession
        filters (None: every passage; False: current ones; True: replaced ones)."""
        where, params = "", []
        if superseded is not None:
            where += f" AND p.superseded_by IS {'NOT ' if superseded else ''}NULL"
        if tags:
            condition, args = self.dialect.any_tag(tags)
            where += f" AND {condition}"
            params += args
        low, high = self.dialect.day_bounds(start, end)
        if low is not None:
            where += " AND p.created_at >= ?"
            params.append(low)
        if high is not None:
            where += " AND p.created_at < ?"
            params.append(high)
        return where, params

    @guarded
    def add_passages(self, passages: Sequence[Passage]) -> list[bool]:
        """Store passages, skipping exact duplicates of a passage the agent
        already has. Returns, per passage, whether it was stored; sets `seq`."""
        if not passages:
            return []
        with self.transaction():
            return self._insert_passages(passages)

    @guarded
    def add_passage(self, passage: Passage) -> bool:
        return self.add_passages([passage])[0]

    @guarded
    def passage_id_for_text(self, agent_id: str, text: str) -> str | None:
        """The id of the agent's passage with exactly this text, if any."""
        row = self._one(
            "SELECT id FROM passages WHERE agent_id = ? AND text_hash = ?",
            [agent_id, text_hash(text)],
        )
        return row[0] if row else None

    @guarded
    def get_passage(self, agent_id: str, passage_id: str) -> Passage:
        row = self._one(
            f"SELECT {PASSAGE_COLUMNS} FROM passages p WHERE p.agent_id = ? AND p.id = ?",
            [agent_id, passage_id],
        )
        if row is None:
            raise NotFoundError(NO_PASSAGE.format(passage_id))
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
        where, params = self.passage_filters(tags, start, end, superseded)
        with self.snapshot():  # the page and the count from the same moment
            total = self._one(
                f"SELECT COUNT(*) FROM passages p WHERE p.agent_id = ?{where}", [agent_id, *params]
            )[0]
            rows = self._all(
                f"SELECT {PASSAGE_COLUMNS} FROM passages p WHERE p.agent_id = ?{where} "
                "ORDER BY p.seq DESC LIMIT ? OFFSET ?",
                [agent_id, *params, limit, offset],
            )
        return [passage_from_row(r) for r in rows], total

    @guarded
    def newest_passage_time(self, agent_id: str) -> datetime | None:
        """The time of the agent's last stored passage (by seq: one step down
        the (agent_id, seq) index), None without passages."""
        row = self._one(
            "SELECT created_at FROM passages WHERE agent_id = ? ORDER BY seq DESC LIMIT 1",
            [agent_id],
        )
        return stored_datetime(row[0]) if row else None

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
        seqs = [int(s) for s in seqs]  # numpy integers from a vector index: drivers refuse them
        found: dict[int, Passage] = {}
        if not seqs:
            return found
        where, params = self.passage_filters(tags, start, end, superseded)
        for among, args in self.dialect.among("p.seq", seqs):
            rows = self._all(
                f"SELECT {PASSAGE_COLUMNS} FROM passages p WHERE p.agent_id = ? AND {among}{where}",
                [agent_id, *args, *params],
            )
            found.update((r[0], passage_from_row(r)) for r in rows)
        return found

    @guarded
    def supersede_passages(
        self, agent_id: str, old_ids: Sequence[str], new_id: str, at: datetime
    ) -> None:
        """Mark `old_ids` replaced by `new_id` at `at` (see the protocol)."""
        old_ids = list(dict.fromkeys(old_ids))
        check_supersession(old_ids, new_id)
        with self.transaction():
            # Locked where writers run at once: a concurrent supersession of
            # the same passages waits, then sees this one's result (no cycle
            # can form between them).
            states: dict[str, str | None] = {}
            for among, args in self.dialect.among("id", sorted({new_id, *old_ids})):
                states.update(
                    self._all(
                        f"SELECT id, superseded_by FROM passages WHERE agent_id = ? AND {among} "
                        f"ORDER BY id{self.dialect.for_no_key_update}",
                        [agent_id, *args],
                    )
                )
            check_supersession(old_ids, new_id, states)
            for among, args in self.dialect.among("id", old_ids):
                self._execute(
                    "UPDATE passages SET superseded_by = ?, superseded_at = ? "
                    f"WHERE agent_id = ? AND {among}",
                    [new_id, self.dialect.time(at), agent_id, *args],
                )

    @guarded
    def passages_replaced_by(self, agent_id: str, passage_id: str) -> list[Passage]:
        """The agent's passages that `passage_id` replaced, oldest first."""
        rows = self._all(
            f"SELECT {PASSAGE_COLUMNS} FROM passages p "
            "WHERE p.agent_id = ? AND p.superseded_by = ? ORDER BY p.seq",
            [agent_id, passage_id],
        )
        return [passage_from_row(r) for r in rows]

    @guarded
    def delete_passage(self, agent_id: str, passage_id: str) -> None:
        """Delete one passage and its vector."""
        with self.transaction():
            replaced_by = self._delete_passage_row(agent_id, passage_id)
            # What it replaced passes to what replaced it, or is current again.
            self._execute(
                "UPDATE passages SET superseded_by = ?, superseded_at = "
                "CASE WHEN CAST(? AS TEXT) IS NULL THEN NULL ELSE superseded_at END "
                "WHERE agent_id = ? AND superseded_by = ?",
                [replaced_by, replaced_by, agent_id, passage_id],
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
        budget: int | None = None,
        drop_over_budget: bool = False,
    ) -> Ranking[Passage]:
        """The best `limit` passages matching any word of `query`, with their
        BM25 scores (higher is better; a passage's context counts half its
        text), and how many match. When the query's words match more than
        `budget` passages (the store's `rank_budget` unless given), only
        those holding its rarer words are scored (storage/core/words.py), and the
        count covers those; `Ranking.proven` says whether the first `exact`
        (default: all) are still the exact ranking. With `drop_over_budget`,
        a word found in more than `budget` passages is left out of the query."""
        exact = limit if exact is None else min(exact, limit)
        filters = self.passage_filters(tags, start, end, superseded)
        budget = self.rank_budget if budget is None else budget
        search = Search(agent_id, query, limit, filters, exact, budget, drop_over_budget)
        return self._rank_passages(search)

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
        """`rank_passages`, and the best `period_limit` passages of `period`
        if the store can tell them from the same ranking (see the protocol)."""
        filters = self.passage_filters(tags, start, end, superseded)
        search = Search(agent_id, query, limit, filters, limit, self.rank_budget)
        return self._rank_in_period(search, period, period_limit)

    def _rank_in_period(
        self, search: Search, period: tuple[date | None, date | None], period_limit: int
    ) -> tuple[Ranking[Passage], list[tuple[Passage, float]] | None]:
        """The ranking, and None for the period's best: the caller ranks
        within the period when it needs them (a backend may find both)."""
        return self._rank_passages(search), None

    @guarded
    def add_vectors(
        self, agent_id: str, owner: Owner, seqs: Sequence[int], vectors: np.ndarray
    ) -> None:
        matrix = np.asarray(vectors, dtype=np.float32)
        if len(seqs) != len(matrix):
            raise ValueError(f"{len(seqs)} seqs for {len(matrix)} vectors")
        if len(seqs):
            with self.transaction():
                self._store_vectors(agent_id, owner, [int(seq) for seq in seqs], matrix)

    @guarded
    def vector_counters(self, agent_id: str) -> VectorCounters:
        row = self._one(
            "SELECT vector_inserts, vector_deletes FROM agents WHERE id = ?", [agent_id]
        )
        return VectorCounters(row[0], row[1]) if row else VectorCounters(0, 0)

    @guarded
    def load_vectors(
        self, agent_id: str, owner: Owner, after: int, dimension: int
    ) -> StoredVectors:
        """Vectors stored after cursor `after`, oldest first.

        Counted first, then read a batch at a time into arrays of that size:
        holding every blob, then their join, then the matrix (1.5 GB each
        for 1M vectors of 384 dimensions) took three times the memory and
        twice the time. The count and the rows are read in one snapshot, so
        they agree."""
        where, params = self._vector_filter(agent_id, owner, after, dimension)
        with self.snapshot():
            count = self._one(f"SELECT COUNT(*) FROM vectors WHERE {where}", params)[0]
            cursors = np.empty(count, dtype=np.int64)
            seqs = np.empty(count, dtype=np.int64)
            matrix = np.empty((count, dimension), dtype=np.float32)
            size = 0
            for rows in self._vector_batches(where, params):
                end = size + len(rows)
                batch_cursors, batch_seqs, stored = zip(*rows, strict=True)
                cursors[size:end] = batch_cursors
                seqs[size:end] = batch_seqs
                matrix[size:end] = self._vector_matrix(stored, dimension)
                size = end
        cursor = int(cursors[size - 1]) if size else after
        return StoredVectors(seqs[:size], matrix[:size], cursor)

    @guarded
    def delete_vectors(self, agent_id: str) -> None:
        with self.transaction():
            self._delete_vectors(agent_id)

    @guarded
    def unembedded_passages(self, agent_id: str, limit: int) -> list[Passage]:
        return [passage_from_row(r) for r in self._unembedded(agent_id, "passage", limit)]

    @guarded
    def unembedded_messages(self, agent_id: str, limit: int) -> list[tuple[int, str]]:
        """(seq, search text) of searchable messages that have no vector yet."""
        return [(r[0], r[1]) for r in self._unembedded(agent_id, "message", limit)]
