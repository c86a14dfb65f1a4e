"""Fusion of the words' ranking with the vectors' (memory/retrieval/search.py
`fused`): an item the vectors found past the words' depth counts the lowest
word score returned, not 0."""

from __future__ import annotations

import pytest

from memgpt_lite.memory.retrieval.search import VECTOR_WEIGHT, fused, unranked_words


def test_a_vector_hit_the_words_did_not_return_counts_their_lowest_score():
    lexical = {1: 4.0, 2: 1.0}  # the words' best and their last returned
    similarity = {1: 0.2, 2: 0.2, 3: 0.9}  # 3: the vectors' best, past the words' depth
    ranked = fused(lexical, similarity)
    assert ranked == [
        (1, pytest.approx(1.0)),
        (3, pytest.approx(1.0 / 4.0 + VECTOR_WEIGHT)),
        (2, pytest.approx(1.0 / 4.0)),
    ]


def test_the_bound_is_the_lowest_word_score_or_nothing():
    assert unranked_words({5: 3.0, 6: 0.5, 7: 1.5}) == 0.5
    assert unranked_words({}) == 0.0
    # Without word hits, the vectors alone rank (nearness min-max: 1 and 0).
    assert fused({}, {1: 0.3, 2: 0.8}) == [(2, pytest.approx(VECTOR_WEIGHT)), (1, 0.0)]
