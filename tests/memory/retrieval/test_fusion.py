"""Fusion of the words' ranking with the vectors' in a hybrid search of
passages (memory/retrieval/fusion.py `fused`, `unranked_words`): a passage
the vectors found that the words' ranking did not return counts the lowest
word score returned, not 0."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memgpt_lite import Agent, Passage
from memgpt_lite.memory.retrieval.fusion import VECTOR_WEIGHT, fused, unranked_words


def test_an_item_the_words_did_not_return_counts_the_score_given():
    lexical = {1: 4.0, 2: 2.0}  # the words' best and their last returned
    similarity = {1: 0.2, 2: 0.2, 3: 0.9}  # 3: the vectors' best, past the words' depth
    assert fused(lexical, similarity, unranked=unranked_words(lexical)) == [
        (1, pytest.approx(1.0)),
        (3, pytest.approx(0.5 + VECTOR_WEIGHT)),
        (2, pytest.approx(0.5)),
    ]
    # Counted 0 (0.4 against 0.5), it comes last.
    assert [item for item, _ in fused(lexical, similarity)] == [1, 2, 3]


def test_the_bound_is_the_lowest_word_score_or_nothing():
    assert unranked_words({5: 3.0, 6: 0.5, 7: 1.5}) == 0.5
    assert unranked_words({}) == 0.0


# More passages hold the query's word than the words' ranking returns (50);
# the one the vectors find holds none of it.
QUERY = "apple pie"
OTHER = "Tom: I had an apple again today, number {n}."
FOUND_BY_VECTORS = "Nina: the baker's dessert was wonderful."


class PieEmbedder:
    """The query and the dessert point one way, every other text another."""

    name, dimension = "test:pie", 4

    def embed(self, texts):
        def vector(text: str) -> list[float]:
            near = "pie" in text or "dessert" in text
            return [1.0, 0.0, 0.0, 0.0] if near else [0.0, 1.0, 0.0, 0.0]

        return np.array([vector(t) for t in texts], dtype=np.float32)


def test_hybrid_search_ranks_the_vectors_best_among_a_crowd_of_word_hits(db_location):
    """Sixty passages hold "apple" alike, so the words' ranking returns 50
    of them, all scoring about the same; the dessert, the vectors' best,
    holds none of the query's words. Counted 0 for its words it would come
    after all of them; counted as the last of them, it comes first."""
    agent = Agent.create("sam", "gpt-4o-mini", db=db_location, embedder=PieEmbedder())
    day = datetime(2024, 5, 3, tzinfo=UTC)
    texts = [OTHER.format(n=n) for n in range(60)] + [FOUND_BY_VECTORS]
    agent.archival.insert_many(
        [
            Passage(agent_id=agent.state.id, text=text, created_at=day + timedelta(minutes=i))
            for i, text in enumerate(texts)
        ]
    )
    found, _ = agent.archival.search(QUERY, limit=3)
    assert found[0].text == FOUND_BY_VECTORS
