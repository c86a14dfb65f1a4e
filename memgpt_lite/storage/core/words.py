"""Full-text words and budgeted BM25: what both storage backends' full-text
queries share, and memory's ranking builds on (memory/retrieval/ranking.py
weighs, fuses and dates what they return).

`fts_words` makes a query's words: lower-cased, each once, stop words left
out. A query is only ever these words, each quoted or passed as a parameter,
so no input is taken as query syntax.

Scoring every match of a word found in half of a million rows costs FTS5
about a second. So the rarest query words, together matching at most
RANK_BUDGET rows, choose the candidates, and the other words only add to
their scores. BM25 is a sum over words: a candidate's full score is the larger
of its score for the rare words alone and its score for `rare AND common`
(each word once). A row holding none of the rare words scores at most the sum
of the other words' largest possible BM25 terms (IDF * (k1 + 1), k1 = 1.2 in
FTS5); when the results that must be exact all score above that bound, they
are exactly the ranking of every match (MaxScore). Otherwise they are the best
of the rows holding a rare word. When even the rarest word matches more than
the budget, its newest RANK_BUDGET matches are the candidates. The queries
are each backend's (storage/sqlite/fulltext.py, storage/postgres/fulltext.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

RANK_BUDGET = 10_000
BM25_K1 = 1.2

# English function words: they match nearly everything and only add noise to an
# OR query. A query made only of them is searched as it is.
_STOP_WORDS_TEXT = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is
    it its itself just let me more most my myself no nor not now of off on once only or other
    our ours ourselves out over own same she should so some such than that the their theirs
    them themselves then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your yours yourself
    yourselves s t d ll m re ve
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
WORD = re.compile(r"\w+", re.UNICODE)


def fts_words(text: str) -> list[str]:
    """The words of `text` to search for: lower-cased, each once, stop words
    left out (unless the text holds nothing else)."""
    words = list(dict.fromkeys(w.lower() for w in WORD.findall(text)))
    return [w for w in words if w not in STOP_WORDS] or words


def fts5_idf(rows: int, hits: int) -> float:
    """FTS5's BM25 IDF of a word found in `hits` of `rows` rows (fts5_aux.c)."""
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0 else 1e-6


class WordSplit(NamedTuple):
    """A query's words split by how often they match."""

    rare: list[str]  # they choose the candidates
    common: list[str]  # they only add to the candidates' scores
    over_budget: bool  # even the rarest word matches more rows than the budget


def split_by_rarity(words: Sequence[str], hits: Mapping[str, int], budget: int) -> WordSplit:
    """The rarest of `words` (non-empty) that together match at most
    `budget` rows (at least one), given how many rows hold each word."""
    order = sorted(words, key=lambda w: hits[w])  # rarest first
    chosen, scored = 1, hits[order[0]]
    while chosen < len(order) and scored + hits[order[chosen]] <= budget:
        scored += hits[order[chosen]]
        chosen += 1
    return WordSplit(order[:chosen], order[chosen:], scored > budget)


def common_words_bound(rows: int, hits: Mapping[str, int], common: Sequence[str]) -> float:
    """The best BM25 score a row holding only `common` words can reach."""
    return sum(fts5_idf(rows, hits[w]) * (BM25_K1 + 1) for w in common)


class ScoreBound(NamedTuple):
    """What is known of the rows a budgeted ranking left unscored."""

    bound: float | None  # the best score of a row with no rare word; None: no other words
    complete: bool  # every match of the rare words was scored

    def proves(self, scores: Sequence[float], exact: int) -> bool:
        """Whether the first `exact` of `scores`, best first, are exactly the
        ranking of every match."""
        if not self.complete:
            return False
        if self.bound is None or exact == 0:
            return True
        return len(scores) >= exact and scores[exact - 1] > self.bound
