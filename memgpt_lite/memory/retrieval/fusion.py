"""Fusion of the words' ranking with the vectors' in a hybrid search
(memory/retrieval/search.py): each item's word score over the best one's,
plus VECTOR_WEIGHT times its similarity to the query min-max normalised over
the items found."""

from __future__ import annotations

from collections.abc import Callable

# Fusion: an item's word score over the best one's, plus VECTOR_WEIGHT times
# its similarity to the query min-max normalised over the items found (by
# words or by vectors): among them, the least similar counts 0 and the most
# similar 1, so the vectors reorder what the words found about equally well
# and bring what the words missed. LoCoMo's development split with the local
# MiniLM (passage vectors then leaning toward their context), recall@5/@10
# on half A, where the weight was set: 0.2: 74.7/80.8, 0.3: 75.3/80.9,
# 0.4: 75.3/81.4, 0.5: 74.8/82.1; on half B with 0.4: 70.0/77.1. Words alone
# 73.2/79.8 and 67.9/75.9. The convex combination this replaced (half
# each, similarity normalised over all the agent's vectors) gave 72.5 and
# 68.4 at 5.
VECTOR_WEIGHT = 0.4


# How near an item is to the query, by the vectors, each item's seq to its
# similarity min-max normalised among the items found (`fused`).
Nearness = dict[int, float]


def fused(
    lexical: dict[int, float],
    similarity: dict[int, float],
    lift: Callable[[Nearness], Nearness] | None = None,
    unranked: float = 0.0,
) -> list[tuple[int, float]]:
    """Items scored BM25 / best BM25 + VECTOR_WEIGHT * similarity min-max
    normalised over the items of both sides (an item missing from the
    vectors' side scores 0 there: the least similar; one missing from the
    words' side scores `unranked` there), that nearness changed by `lift`
    when given; best first (ties: the newer, higher id, first)."""
    best = max(lexical.values(), default=0.0) or 1.0
    items = set(lexical) | set(similarity)
    values = [similarity.get(item, 0.0) for item in items]
    low, high = min(values, default=0.0), max(values, default=0.0)
    span = high - low
    near = {item: (similarity.get(item, 0.0) - low) / span if span > 0 else 0.0 for item in items}
    if lift is not None:
        near = lift(near)
    scored = [
        (item, lexical.get(item, unranked) / best + VECTOR_WEIGHT * near[item]) for item in items
    ]
    return sorted(scored, key=lambda pair: (-pair[1], -pair[0]))


# An item the vectors found and the words' ranking did not return is not an
# item the words score 0: the ranking stopped at its depth, so its words
# score lies between 0 and the lowest returned. It is counted at that
# bound: a vector hit is not ranked below every word hit just for having
# fallen past the words' depth (LoCoMo's development split, hybrid with the
# local MiniLM: the vectors' best hit for "What are Joanna's hobbies?", the
# answer, came 36th). Recall@5/@10, with the answer's nearness
# (search.py VECTOR_ANSWER_SHARE): half A 78.4/83.5 -> 78.5/83.6, half B 73.4/80.2 ->
# 73.8/80.4; counted at half the bound, A 78.6/83.3, B 73.5/80.5.
def unranked_words(lexical: dict[int, float]) -> float:
    """The word score counted for a passage missing from the words' ranking
    `lexical` (`fused`'s `unranked`): the lowest in it (0 when it is
    empty)."""
    return min(lexical.values(), default=0.0)


def combine(lexical: dict[int, float], similarity: dict[int, float]) -> list[int]:
    """The items of `fused`, in its order."""
    return [item for item, _ in fused(lexical, similarity)]
