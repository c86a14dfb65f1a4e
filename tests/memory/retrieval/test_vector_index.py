"""The in-memory vector index: exact up to EXACT_VECTOR_LIMIT vectors, binary
codes with exact rescoring beyond, always in step with the database."""

from __future__ import annotations

import numpy as np
import pytest

from memgpt_lite.memory.retrieval import vector_index
from memgpt_lite.memory.retrieval.vector_index import VectorIndex
from memgpt_lite.models import AgentState, Block, LLMConfig
from memgpt_lite.storage.sqlite.store import Store

DIMENSION = 64


def clustered(rng: np.random.Generator, count: int, centres: np.ndarray) -> np.ndarray:
    """Unit vectors near random cluster centres, like sentence embeddings of topics."""
    picks = centres[rng.integers(len(centres), size=count)]
    vectors = picks + 0.6 * rng.standard_normal((count, DIMENSION)) / np.sqrt(DIMENSION)
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def store_and_agent(tmp_path):
    store = Store(tmp_path / "v.db")
    state = AgentState(name="v", llm=LLMConfig(model="gpt-4o-mini"), system="s")
    store.create_agent(state, [Block(label="persona", value="p")])
    return store, state.id


def exact_top(vectors: np.ndarray, seqs: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    scores = vectors @ query
    return [int(seqs[i]) for i in np.argsort(-scores, kind="stable")[:k]]


def test_large_indexes_find_nearly_the_exact_neighbours(store_and_agent, monkeypatch):
    store, agent_id = store_and_agent
    monkeypatch.setattr(vector_index, "EXACT_VECTOR_LIMIT", 1_000)
    monkeypatch.setattr(vector_index, "APPROXIMATE_CANDIDATES", 150)  # 3% of 5,000
    rng = np.random.default_rng(3)
    centres = rng.standard_normal((40, DIMENSION))
    vectors = clustered(rng, 5_000, centres)
    seqs = np.arange(1, 5_001)
    store.add_vectors(agent_id, "passage", seqs.tolist(), vectors)
    index = VectorIndex(store, agent_id, "passage", DIMENSION)
    queries = clustered(rng, 30, centres)
    recalls = []
    for query in queries:
        hits = index.search(query, 10)
        assert len(hits.ranked) == 10
        recalls.append(len(set(hits.ranked) & set(exact_top(vectors, seqs, query, 10))) / 10)
        # Similarities are exact cosines, normalised: the best hit scores highest.
        best = [hits.similarity(seq) for seq in hits.ranked]
        assert best == sorted(best, reverse=True) and 0.0 <= best[-1] <= best[0] <= 1.0
    assert index._codes is not None  # the approximate path ran
    assert np.mean(recalls) >= 0.9


def test_vectors_stored_later_are_found_and_deletes_reload(store_and_agent, monkeypatch):
    store, agent_id = store_and_agent
    monkeypatch.setattr(vector_index, "EXACT_VECTOR_LIMIT", 100)
    monkeypatch.setattr(vector_index, "APPROXIMATE_CANDIDATES", 20)
    rng = np.random.default_rng(4)
    centres = rng.standard_normal((10, DIMENSION))
    first = clustered(rng, 500, centres)
    store.add_vectors(agent_id, "passage", list(range(1, 501)), first)
    index = VectorIndex(store, agent_id, "passage", DIMENSION)
    index.search(first[0], 5)
    # A new vector, far from everything, appended after the codes were built.
    odd = np.zeros(DIMENSION, dtype=np.float32)
    odd[0] = 1.0
    store.add_vectors(agent_id, "passage", [999], odd[np.newaxis])
    assert index.search(odd, 1).ranked == [999]
    store.delete_vectors(agent_id)  # every vector goes, the first 500 come back
    store.add_vectors(agent_id, "passage", list(range(1, 501)), first)
    assert 999 not in index.search(odd, 5).ranked
    assert index.size == 500


def test_small_indexes_are_exact(store_and_agent):
    store, agent_id = store_and_agent
    rng = np.random.default_rng(5)
    vectors = clustered(rng, 300, rng.standard_normal((5, DIMENSION)))
    seqs = np.arange(1, 301)
    store.add_vectors(agent_id, "passage", seqs.tolist(), vectors)
    index = VectorIndex(store, agent_id, "passage", DIMENSION)
    for query in vectors[:10]:
        assert index.search(query, 10).ranked == exact_top(vectors, seqs, query, 10)
    assert index._codes is None


def test_hamming_blocks_and_candidate_count(store_and_agent, monkeypatch):
    """Distances computed a block at a time (the last block partial) equal the
    bit counts of whole codes, and ties at the cut fill exactly `count` rows."""
    store, agent_id = store_and_agent
    monkeypatch.setattr(vector_index, "EXACT_VECTOR_LIMIT", 100)
    monkeypatch.setattr(vector_index, "_HAMMING_BLOCK", 777)
    monkeypatch.setattr(vector_index, "_GATHER_BLOCK", 64)
    rng = np.random.default_rng(6)
    vectors = clustered(rng, 3_000, rng.standard_normal((20, DIMENSION)))
    seqs = np.arange(1, 3_001)
    store.add_vectors(agent_id, "passage", seqs.tolist(), vectors)
    index = VectorIndex(store, agent_id, "passage", DIMENSION)
    query = vectors[42]
    hits = index.search(query, 10)  # builds the codes
    assert index._codes is not None and hits.ranked[0] == 43
    code = index._encode(query[np.newaxis])[0]
    differing = (index._codes[:, : index.size].T ^ code).view(np.uint8)
    whole = np.unpackbits(differing, axis=1).sum(axis=1)
    assert index._hamming(code).tolist() == whole.tolist()
    for count in (1, 150, 1_001):
        rows, _ = index._candidates(query, count)
        assert len(rows) == len(set(rows.tolist())) == count
        # Every row left out is at least as far as every row taken.
        left_out = np.setdiff1d(np.arange(index.size), rows)
        assert whole[rows].max() <= whole[left_out].min()


def test_server_hits_normalise_over_what_the_server_returned():
    """A store's own search (VectorSearch) returns the nearest items and the
    lexical hits' similarities: min-max runs over those, and an item with no
    vector scores 0, as with the in-process index."""
    from memgpt_lite.memory.retrieval.fusion import combine
    from memgpt_lite.memory.retrieval.vector_index import ServerHits
    from memgpt_lite.storage.protocol import VectorMatches

    hits = ServerHits.of(VectorMatches([3, 1], {3: 0.9, 1: 0.5, 7: 0.1}))
    assert hits.ranked == [3, 1]
    assert [hits.similarity(s) for s in (3, 1, 7, 99)] == pytest.approx([1.0, 0.5, 0.0, 0.0])
    # 7: 2.0 / 2.0 + 0.4 * 0.0 = 1.0;  1: 1.5 / 2.0 + 0.4 * 0.5 = 0.95;  3: 0.4 * 1.0
    assert combine({7: 2.0, 1: 1.5}, {s: hits.similarity(s) for s in (1, 3, 7)}) == [7, 1, 3]
    assert ServerHits.of(VectorMatches([4], {4: 0.3})).similarity(4) == 1.0
