"""The in-process vector index: an agent's stored vectors as a numpy matrix,
kept in memory and refreshed from the database only when its counters say
it changed; exact up to EXACT_VECTOR_LIMIT vectors, through binary codes
beyond. And the hits of a vector search, this index's (`VectorHits`) or a
store's own (`ServerHits`), as hybrid search (search.py) reads them."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from memgpt_lite.storage.protocol import Owner, Storage, VectorCounters, VectorMatches

log = logging.getLogger(__name__)


# Up to this many vectors, search compares the query with every one (a float32
# matrix product: about 25 ms per 200,000 vectors of 384 dimensions here).
# Beyond, each vector also has a binary code (the signs of its components less
# the mean vector); the codes nearest the query by Hamming distance, an eighth
# of the matrix's bytes to read, give APPROXIMATE_CANDIDATES candidates that
# are then compared exactly. On real sentence embeddings (2,760 LoCoMo turns,
# all-MiniLM-L6-v2) 1% of the vectors as candidates holds 88% of the exact top
# ten and 2% holds 96%, and the same share holds more as the index grows
# (benchmarks/vector_recall.py); at 1M, 8,192 candidates are 0.8%.
EXACT_VECTOR_LIMIT = 200_000
APPROXIMATE_CANDIDATES = 8_192
_CODE_CHUNK = 65_536  # rows encoded at a time, to bound the temporary arrays
_HAMMING_BLOCK = 131_072  # rows per block of the Hamming pass (about 1 MB of codes a word)
_GATHER_BLOCK = 1_024  # candidate rows compared at a time (1.5 MB at 384 dimensions)


def grown(array: np.ndarray, size: int, capacity: int) -> np.ndarray:
    """A copy of `array`'s first `size` rows with room for `capacity`."""
    grown = np.empty((capacity, *array.shape[1:]), dtype=array.dtype)
    grown[:size] = array[:size]
    return grown


class VectorIndex:
    """One agent's stored vectors of one kind, as a growable matrix in memory."""

    def __init__(self, store: Storage, agent_id: str, owner: Owner, dimension: int) -> None:
        self.store, self.agent_id, self.owner, self.dimension = store, agent_id, owner, dimension
        self._clear()

    def _clear(self) -> None:
        self._matrix = np.zeros((0, self.dimension), dtype=np.float32)
        self._seqs = np.zeros(0, dtype=np.int64)
        self._row_of: dict[int, int] = {}
        self.size = 0
        self._cursor = 0  # where the next load starts (see Storage.load_vectors)
        self._counters = VectorCounters(-1, -1)  # as no store has them
        self._codes: np.ndarray | None = None  # built when size passes EXACT_VECTOR_LIMIT
        self._mean = np.zeros(self.dimension, dtype=np.float32)

    def refresh(self) -> None:
        counters = self.store.vector_counters(self.agent_id)
        if counters == self._counters:
            return
        if counters.deletes != self._counters.deletes:  # something was deleted: reload all
            self._clear()
        stored = self.store.load_vectors(self.agent_id, self.owner, self._cursor, self.dimension)
        self._append(stored.seqs, stored.matrix)
        self._cursor = stored.cursor
        self._counters = counters

    def _append(self, seqs: np.ndarray, matrix: np.ndarray) -> None:
        needed = self.size + len(seqs)
        if self.size == 0 and needed > len(self._matrix) and matrix.flags.writeable:
            # The first load: keep the loaded arrays (a copy is 1.5 GB per 1M vectors).
            self._matrix, self._seqs = matrix, seqs
        else:
            if needed > len(self._matrix):  # grow geometrically: appends stay amortised O(1)
                capacity = max(needed, int(len(self._matrix) * 1.5) + 64)
                self._matrix = grown(self._matrix, self.size, capacity)
                self._seqs = grown(self._seqs, self.size, capacity)
            self._matrix[self.size : needed] = matrix
            self._seqs[self.size : needed] = seqs
        self._row_of.update((int(seq), row) for row, seq in enumerate(seqs, start=self.size))
        if self._codes is not None:
            if needed > self._codes.shape[1]:
                # Word-major, so grown along columns (`grown` copies rows).
                wider = np.zeros((len(self._codes), len(self._matrix)), dtype=np.uint64)
                wider[:, : self.size] = self._codes[:, : self.size]
                self._codes = wider
            self._codes[:, self.size : needed] = self._encode(matrix).T
        self.size = needed

    def _encode(self, vectors: np.ndarray) -> np.ndarray:
        """Binary codes: one bit per dimension, packed into 64-bit words."""
        bits = np.packbits(vectors > self._mean, axis=-1)
        padding = -bits.shape[-1] % 8
        if padding:
            bits = np.pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, padding)])
        return np.ascontiguousarray(bits).view(np.uint64)

    def _build_codes(self) -> None:
        # Word-major (one row per 64-bit word of every code): the Hamming pass
        # then streams through contiguous memory, four times faster here.
        self._mean = self._matrix[: self.size].mean(axis=0)
        codes = np.zeros((-(-self.dimension // 64), len(self._matrix)), dtype=np.uint64)
        for start in range(0, self.size, _CODE_CHUNK):
            end = min(start + _CODE_CHUNK, self.size)
            codes[:, start:end] = self._encode(self._matrix[start:end]).T
        self._codes = codes

    def search(self, query: np.ndarray, k: int) -> VectorHits:
        """The `k` stored vectors most similar to `query` (exactly, up to
        EXACT_VECTOR_LIMIT vectors; nearly, beyond), and a similarity for any
        stored item, min-max normalised to [0, 1]."""
        self.refresh()
        return self.nearest(query, k)

    def nearest(self, query: np.ndarray, k: int) -> VectorHits:
        """`search` without the refresh: numpy only, so it may run on another
        thread while this one queries the store."""
        query = query.astype(np.float32)
        if self.size == 0:
            return VectorHits([], {}, self._matrix, query, 0.0, 0.0)
        k = min(k, self.size)
        if self.size <= EXACT_VECTOR_LIMIT:
            rows = np.arange(self.size)
            scores = self._matrix[: self.size] @ query
            low, high = float(scores.min()), float(scores.max())
        else:
            rows, low = self._candidates(query, max(APPROXIMATE_CANDIDATES, 20 * k))
            scores = np.empty(len(rows), dtype=np.float32)
            for start in range(0, len(rows), _GATHER_BLOCK):  # blocks stay in the cache
                block = rows[start : start + _GATHER_BLOCK]
                scores[start : start + len(block)] = self._matrix[block] @ query
            low, high = min(low, float(scores.min())), float(scores.max())
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        ranked = [int(s) for s in self._seqs[rows[top]]]
        return VectorHits(ranked, self._row_of, self._matrix, query, low, high)

    def _candidates(self, query: np.ndarray, count: int) -> tuple[np.ndarray, float]:
        """The `count` rows whose codes are nearest the query's, and the exact
        similarity of the farthest code: an estimate of the lowest of all."""
        if self._codes is None:
            self._build_codes()
        assert self._codes is not None
        distances = self._hamming(self._encode(query[np.newaxis])[0])
        # Distances are small integers: a histogram finds the cut in one pass.
        # All rows nearer than the cut, then the first of those at it.
        reached = np.cumsum(np.bincount(distances, minlength=self.dimension + 1))
        count = min(count, self.size)
        cut = int(np.searchsorted(reached, count))
        nearer = np.flatnonzero(distances < cut)
        at_cut = np.flatnonzero(distances == cut)[: count - len(nearer)]
        farthest = int(np.argmax(distances))
        return np.concatenate([nearer, at_cut]), float(self._matrix[farthest] @ query)

    def _hamming(self, code: np.ndarray) -> np.ndarray:
        """Each row's Hamming distance to `code`. Done a block of rows at a
        time into reused buffers, so the temporaries stay in the CPU cache:
        twice as fast at 1M rows as whole-array operations."""
        assert self._codes is not None
        distances = np.empty(self.size, dtype=np.uint16)
        xor = np.empty(_HAMMING_BLOCK, dtype=np.uint64)
        bits = np.empty(_HAMMING_BLOCK, dtype=np.uint8)
        for start in range(0, self.size, _HAMMING_BLOCK):
            end = min(start + _HAMMING_BLOCK, self.size)
            n, block = end - start, distances[start:end]
            block[:] = 0
            for word in range(len(code)):
                np.bitwise_xor(self._codes[word, start:end], code[word], out=xor[:n])
                np.bitwise_count(xor[:n], out=bits[:n])
                np.add(block, bits[:n], out=block)
        return distances


@dataclass
class VectorHits:
    ranked: list[int]  # the nearest items' seqs, best first
    row_of: dict[int, int]
    matrix: np.ndarray
    query: np.ndarray
    low: float
    high: float

    def similarity(self, seq: int) -> float:
        """Cosine similarity to the query, min-max normalised over the stored
        items (0 for an item with no vector)."""
        row = self.row_of.get(seq)
        if row is None:
            return 0.0
        return _min_max(float(self.matrix[row] @ self.query), self.low, self.high)


@dataclass
class ServerHits:
    """The store's own vector search (`VectorSearch`), as `VectorHits` are read."""

    ranked: list[int]  # the nearest items' seqs, best first
    scores: dict[int, float]  # cosine similarities of those and of the lexical hits
    low: float
    high: float

    @classmethod
    def of(cls, matches: VectorMatches) -> ServerHits:
        """Min-max over what the server returned: the k nearest and the lexical
        hits with a vector. The in-process index takes its low from all the
        agent's vectors, which a server-side search cannot give without
        reading them all; the least similar of these items is higher, which
        spreads the fused candidates' similarities over [0, 1] a little more.
        On LoCoMo (the first two conversations, 302 questions, MiniLM) on
        PostgreSQL, recall@5/@10 was 67.8/78.3 through pgvector this way and
        68.3/79.0 through the in-process index (MEMGPT_LITE_PG_VECTORS=off).
        (The exact low is within reach too, as the nearest neighbour of the
        negated query, at the cost of a second index search.)"""
        values = matches.similarity.values()
        return cls(
            matches.ranked, matches.similarity, min(values, default=0.0), max(values, default=0.0)
        )

    def similarity(self, seq: int) -> float:
        """Cosine similarity to the query, min-max normalised over the items
        returned (0 for an item with no vector)."""
        score = self.scores.get(seq)
        return 0.0 if score is None else _min_max(score, self.low, self.high)


def _min_max(score: float, low: float, high: float) -> float:
    """`score` scaled from [low, high] to [0, 1] (clipped); 1 when all
    scores are equal."""
    if high <= low:
        return 1.0
    return min(1.0, max(0.0, (score - low) / (high - low)))


Hits = VectorHits | ServerHits
# A vector search started before the lexical one: called with the lexical
# hits' seqs (the server also returns their similarities), it gives the hits.
StartedSearch = Callable[[Sequence[int]], Hits]
