"""SQLite's stored vectors (a part of `Store`); the reads they share with
PostgreSQL are core/archival.py's.

Vectors are float32 blobs in one table for passages and messages; a vector's
rowid is the cursor of `load_vectors`. An agent's `vector_inserts` /
`vector_deletes` counters, kept by triggers, let an in-memory index tell in
O(1) whether another process changed them (memory/retrieval/vector_index.py searches
them in this process).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
from sqlite_utils import Database

from memgpt_lite.storage.core.archival import UNEMBEDDED
from memgpt_lite.storage.core.sql import Filters
from memgpt_lite.storage.protocol import Owner, VectorCounters

_BATCH = 4096  # rows read at a time by load_vectors


class BlobVectors:
    """Mixed into `Store`, which provides `db` and the core's reads."""

    db: Database
    in_transaction: Callable[[], bool]
    snapshot: Callable[[], AbstractContextManager[None]]
    vector_counters: Callable[[str], VectorCounters]

    def _store_vectors(
        self, agent_id: str, owner: Owner, seqs: list[int], matrix: np.ndarray
    ) -> None:
        """A vector stored before for the same item is replaced."""
        self.db.conn.executemany(
            "INSERT OR REPLACE INTO vectors (agent_id, owner, item_seq, vector) VALUES (?,?,?,?)",
            [(agent_id, owner, seq, row.tobytes()) for seq, row in zip(seqs, matrix, strict=True)],
        )

    def _delete_vectors(self, agent_id: str) -> None:
        self.db.conn.execute("DELETE FROM vectors WHERE agent_id = ?", [agent_id])

    def _vector_filter(self, agent_id: str, owner: Owner, after: int, dimension: int) -> Filters:
        return "agent_id = ? AND owner = ? AND rowid > ?", [agent_id, owner, after]

    def _vector_batches(self, where: str, params: list[Any]) -> Iterator[list[Any]]:
        cursor = self.db.conn.execute(
            f"SELECT rowid, item_seq, vector FROM vectors WHERE {where} ORDER BY rowid", params
        )
        while rows := cursor.fetchmany(_BATCH):
            yield rows

    def _vector_matrix(self, stored: Sequence[Any], dimension: int) -> np.ndarray:
        return np.frombuffer(b"".join(stored), dtype=np.float32).reshape(len(stored), dimension)

    def _unembedded(self, agent_id: str, owner: Owner, limit: int) -> list[Any]:
        """Rows of UNEMBEDDED[owner]: the agent's items (of one kind) that
        have no vector, by seq, from the first one past a remembered seq.

        Proving that no item lacks a vector means visiting every item, on every
        hybrid search. So each `Store` remembers, per agent and kind, a seq up
        to which every item had a vector, and the agent's `vector_deletes`
        counter then: until the counter moves, no vector was removed, and an
        item stored since has a higher seq (SQLite gives a new row the largest
        rowid + 1, and the remembered item still exists, or deleting it would
        have deleted its vector). The second statement finds the seq to
        remember: the agent's last item that needs a vector below the first
        one found without.
        """
        pending_sql, last_sql = UNEMBEDDED[owner]
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
        write rolls back to its savepoint: marks seen inside a write that
        rolled back are forgotten (the rows they vouched for may be gone, and
        their seqs given again to rows with no vector)."""
        pending = self._embedded_marks(pending=True)
        if committed:
            self._embedded_marks().update(pending)
        pending.clear()
