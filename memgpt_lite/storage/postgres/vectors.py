"""PostgreSQL's stored vectors (a part of `PostgresStore`); the reads they
share with SQLite are core/archival.py's.

One table for the vectors of passages and messages (migrations.py, m002):
pgvector's `vector` when the server had the extension, else float32 bytes.
A vector's `id` is the cursor of `load_vectors`: every write of an agent's
vectors locks the agent's row first (the UPDATE of its counters), so one
agent's vectors commit in the order of their ids and a reader that saw id N
never later finds a new vector of that agent below N.

With pgvector, `nearest_vectors` searches on the server (the `VectorSearch`
capability of storage/protocol.py): one partial HNSW index per dimension,
made when the first vectors of that dimension arrive (`vectors_hnsw_<dim>`),
on `vector::vector(<dim>)` with cosine distance. Without it, memory/retrieval/vector_index.py
loads the vectors into its in-process index, as for SQLite.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import psycopg
from psycopg.adapt import Buffer, Loader

from memgpt_lite.storage.core.errors import unknown_agent
from memgpt_lite.storage.core.sql import Cursor, Filters
from memgpt_lite.storage.core.transactions import guarded
from memgpt_lite.storage.postgres.batch import Params
from memgpt_lite.storage.postgres.primitives import postgres_statement
from memgpt_lite.storage.protocol import Owner, VectorMatches

# pg_advisory_xact_lock's key for creating a dimension's HNSW index: two
# processes storing the first vectors of a dimension at once create it once.
INDEX_LOCK = 0x6D656D677076  # "memgpv"
# HNSW indexes `vector` of up to 2,000 dimensions; beyond, the search scans
# the agent's vectors exactly (still on the server).
HNSW_MAX_DIMENSION = 2000
# The candidates an HNSW scan keeps (pgvector's default is 40): at least
# twice the results asked for, within what pgvector accepts (1 to 1,000).
EF_SEARCH_MIN, EF_SEARCH_MAX = 100, 1000
_FETCH_ROWS = 8192  # rows read at a time by load_vectors
_indexed: set[tuple[str, int]] = set()  # (url, dimension) known to have its index, per process
_indexed_lock = threading.Lock()


class _RawVector(Loader):
    """pgvector's binary `vector` as its bytes: 2 bytes of dimension, 2 unused,
    then big-endian float32s. `load_vectors` joins a batch of them and reads
    the floats with one numpy call. 100,000 vectors of 384 dimensions, on a
    busy two-core machine: 5.4 s, as fast as pgvector.psycopg's loader (5.3 s,
    which needs the `pgvector` package and a numpy array per row), and four
    times faster than a `vector::real[]` cast (20.3 s); see
    benchmarks/postgres_vectors.py."""

    def load(self, data: Buffer) -> bytes:
        return bytes(data)


def _matrix(blobs: Sequence[bytes], dimension: int, server_vectors: bool) -> np.ndarray:
    """A float32 matrix from vectors as stored: pgvector's binary form (a
    4-byte header, one float32's width, before big-endian floats) or our
    native float32 bytes."""
    joined = b"".join(blobs)
    if not server_vectors:
        return np.frombuffer(joined, dtype=np.float32).reshape(len(blobs), dimension)
    rows = np.frombuffer(joined, dtype=">f4").reshape(len(blobs), dimension + 1)
    return rows[:, 1:].astype(np.float32)


def _vector_text(vector: np.ndarray) -> str:
    """A query vector as pgvector's text input (exact for float32)."""
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32)) + "]"


def delete_vectors_of(conn: psycopg.Connection, agent_id: str, owner: str, seqs: list[int]) -> None:
    """Remove the vectors of deleted or edited items, and count them in the
    agent's `vector_deletes` (as SQLite's triggers do)."""
    if not seqs:
        return
    gone = conn.execute(
        "DELETE FROM vectors WHERE owner = %s AND item_seq = ANY(%s)", [owner, seqs]
    ).rowcount
    if gone:
        conn.execute(
            "UPDATE agents SET vector_deletes = vector_deletes + %s WHERE id = %s",
            [gone, agent_id],
        )


class VectorStore:
    """Stored vectors, and the server's nearest-vector search. Mixed into
    `PostgresStore`, which sets `server_vectors` when it opens."""

    conn: psycopg.Connection
    url: str
    server_vectors: bool
    snapshot: Callable[[], AbstractContextManager[None]]
    _send: Callable[[str, Params], Cursor]  # the primitives' (its search is prepared)

    def _lock_agent_vectors(self, agent_id: str, inserts: int) -> None:
        """Lock the agent's row (first, so its vector writes commit in id
        order) and count `inserts`. NotFoundError for an unknown agent."""
        updated = self.conn.execute(
            "UPDATE agents SET vector_inserts = vector_inserts + %s WHERE id = %s",
            [inserts, agent_id],
        )
        if updated.rowcount == 0:
            raise unknown_agent(agent_id)

    def _count_deletes(self, agent_id: str, deletes: int) -> None:
        if deletes:
            self.conn.execute(
                "UPDATE agents SET vector_deletes = vector_deletes + %s WHERE id = %s",
                [deletes, agent_id],
            )

    def _store_vectors(
        self, agent_id: str, owner: Owner, seqs: list[int], matrix: np.ndarray
    ) -> None:
        """A vector stored before for the same item is replaced by a new row
        (a new id, so `load_vectors` cursors see it), counted as one delete
        and one insert, as SQLite's triggers do."""
        self._lock_agent_vectors(agent_id, len(seqs))
        replaced = self.conn.execute(
            "DELETE FROM vectors WHERE agent_id = %s AND owner = %s AND item_seq = ANY(%s)",
            [agent_id, owner, seqs],
        ).rowcount
        self._count_deletes(agent_id, replaced)
        self._copy_vectors(agent_id, owner, seqs, matrix)
        if self.server_vectors:
            self._ensure_index(int(matrix.shape[1]))

    def _copy_vectors(
        self, agent_id: str, owner: Owner, items: list[int], matrix: np.ndarray
    ) -> None:
        """COPY in binary, each vector as the bytes the column's type receives:
        pgvector's binary input (dimension, 0, big-endian float32s) or our
        float32 bytes. No per-value adapting: 100k vectors take about a second."""
        dimension = int(matrix.shape[1])
        if self.server_vectors:
            header = np.array([dimension, 0], dtype=">u2").tobytes()
            big_endian = matrix.astype(">f4")
            payload = [header + row.tobytes() for row in big_endian]
        else:
            payload = [row.tobytes() for row in matrix]
        copy_sql = (
            "COPY vectors (agent_id, owner, item_seq, dimension, vector) FROM STDIN (FORMAT BINARY)"
        )
        with self.conn.cursor() as cursor, cursor.copy(copy_sql) as copy:
            # "bytea" picks psycopg's dumper (bytes as they are); the server
            # reads them with the column's own type.
            copy.set_types(["text", "text", "int8", "int4", "bytea"])
            for item, blob in zip(items, payload, strict=True):
                copy.write_row([agent_id, owner, item, dimension, blob])

    def _ensure_index(self, dimension: int) -> None:
        """Create the dimension's HNSW index if it is new (under an advisory
        lock, so concurrent writers create it once; inside the caller's
        transaction, so it exists exactly when the vectors commit)."""
        key = (self.url, dimension)
        if key in _indexed or dimension > HNSW_MAX_DIMENSION:
            return
        name = f"vectors_hnsw_{dimension}"
        exists = self.conn.execute("SELECT to_regclass(%s)", [name]).fetchone()[0]
        if exists is None:
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", [INDEX_LOCK])
            self.conn.execute(
                f"CREATE INDEX IF NOT EXISTS {name} ON vectors USING hnsw "
                f"((vector::vector({dimension})) vector_cosine_ops) WHERE dimension = {dimension}"
            )
            return  # remembered once the transaction commits and the next write sees it
        with _indexed_lock:
            _indexed.add(key)

    def _delete_vectors(self, agent_id: str) -> None:
        self._lock_agent_vectors(agent_id, 0)
        deleted = self.conn.execute("DELETE FROM vectors WHERE agent_id = %s", [agent_id])
        self._count_deletes(agent_id, deleted.rowcount)

    def _vector_filter(self, agent_id: str, owner: Owner, after: int, dimension: int) -> Filters:
        return (
            "agent_id = ? AND owner = ? AND id > ? AND dimension = ?",
            [agent_id, owner, after, dimension],
        )

    def _vector_batches(self, where: str, params: list[Any]) -> Iterator[list[Any]]:
        """Through a server-side cursor, pgvector's values as their bytes."""
        with self.conn.cursor(name="memgpt_load_vectors", binary=True) as cursor:
            if self.server_vectors:
                cursor.adapters.register_loader(self._vector_oid(), _RawVector)
            statement = f"SELECT id, item_seq, vector FROM vectors WHERE {where} ORDER BY id"
            cursor.execute(postgres_statement(statement), params)
            while rows := cursor.fetchmany(_FETCH_ROWS):
                yield rows

    def _vector_matrix(self, stored: Sequence[Any], dimension: int) -> np.ndarray:
        return _matrix(stored, dimension, self.server_vectors)

    def _vector_oid(self) -> int:
        """The oid of pgvector's `vector` type in this database."""
        row = self.conn.execute("SELECT 'vector'::regtype::oid").fetchone()
        return int(row[0])

    @guarded
    def nearest_vectors(
        self, agent_id: str, owner: Owner, query: np.ndarray, k: int, also: Sequence[int] = ()
    ) -> VectorMatches:
        """The agent's `k` items of one kind whose vectors are nearest `query`
        by cosine, best first, and the similarities of those and of the
        `also` items that have a vector (see `VectorSearch`)."""
        if not self.server_vectors:
            raise NotImplementedError("no pgvector on this server: use the in-process index")
        dimension = len(query)
        column = f"vector::vector({dimension})"  # the HNSW index's expression, verbatim
        params: dict[str, Any] = {
            "agent": agent_id,
            "owner": owner,
            "query": _vector_text(query),
            "k": k,
            "also": [int(seq) for seq in also],
        }
        distance = f"{column} <=> %(query)s::vector({dimension})"
        mine = f"agent_id = %(agent)s AND owner = %(owner)s AND dimension = {dimension}"
        with self.snapshot():
            self.conn.execute(self._search_settings(k))
            rows = self._send(
                f"(SELECT item_seq, {distance}, true FROM vectors WHERE {mine} "
                f"ORDER BY {distance} LIMIT %(k)s) UNION ALL "
                f"SELECT item_seq, {distance}, false FROM vectors "
                f"WHERE owner = %(owner)s AND item_seq = ANY(%(also)s) AND {mine}",
                params,
            ).fetchall()
        similarity = {int(seq): 1.0 - float(d) for seq, d, _ in rows}
        # Iterative scans in relaxed order may return neighbours slightly out of order.
        near = sorted({int(seq) for seq, _, is_near in rows if is_near}, key=similarity.__getitem__)
        return VectorMatches(near[::-1][:k], similarity)

    def _search_settings(self, k: int) -> str:
        """SET LOCAL for one HNSW search: enough candidates for `k` results,
        and (pgvector 0.8+) a scan that goes on past them while the agent and
        kind filters leave fewer than `k`."""
        ef_search = min(EF_SEARCH_MAX, max(EF_SEARCH_MIN, 2 * k))
        settings = f"SET LOCAL hnsw.ef_search = {ef_search}"
        if self._iterative_scans():
            settings += "; SET LOCAL hnsw.iterative_scan = relaxed_order"
        return settings

    def _iterative_scans(self) -> bool:
        """Whether the server's pgvector has iterative index scans (0.8+)."""
        known = self.__dict__.get("_has_iterative_scans")
        if known is None:
            row = self.conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            ).fetchone()
            version = tuple(int(part) for part in row[0].split(".")[:2]) if row else (0, 0)
            known = self.__dict__["_has_iterative_scans"] = version >= (0, 8)
        return known
