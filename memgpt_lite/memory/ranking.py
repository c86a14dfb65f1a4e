"""BM25 ranking that stays fast on large full-text indexes (a part of `Store`),
shared by archival passages and recall messages.

Scoring every match of a word found in half of a million rows costs FTS5
about a second. So the rarest query words, together matching at most
RANK_BUDGET rows, choose the candidates, and the other words only add to
their scores. BM25 is a sum over words: a candidate's full score is the larger
of its score for the rare words alone and its score for `rare AND common`
(each word once). A row holding none of the rare words scores at most the sum
of the other words' largest possible BM25 terms (IDF * (k1 + 1), k1 = 1.2 in
FTS5); when the results that must be exact all score above that bound, they
are exactly FTS5's own ranking (MaxScore). Otherwise they are the best of the
rows holding a rare word. When even the rarest word matches more than the
budget, its newest RANK_BUDGET matches are the candidates.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, Generic, Literal, NamedTuple, TypeVar

from sqlite_utils import Database

RANK_BUDGET = 10_000
_BM25_K1 = 1.2

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
_WORD = re.compile(r"\w+", re.UNICODE)


def fts_words(text: str) -> list[str]:
    """The words of `text` to search for: lower-cased, each once, stop words
    left out (unless the text holds nothing else)."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))
    return [w for w in words if w not in STOP_WORDS] or words


Indexed = Literal["passages", "messages"]
# BM25 column weights: a passage's text counts twice its context.
_BM25 = {"passages": "bm25(passages_fts, 1.0, 0.5)", "messages": "bm25(messages_fts)"}
_COUNTER = {"passages": "passage_count", "messages": "message_count"}  # kept by triggers
_ALIAS = {"passages": "p", "messages": "m"}  # as the stores' column lists name them
T = TypeVar("T")


def fts_any(words: Sequence[str]) -> str:
    """An FTS5 expression matching any of `words` (each quoted: plain text)."""
    return " OR ".join(f'"{w}"' for w in words)


def fts5_idf(rows: int, hits: int) -> float:
    """FTS5's BM25 IDF of a word found in `hits` of `rows` rows (fts5_aux.c)."""
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0 else 1e-6


class Ranking(NamedTuple, Generic[T]):
    """Items with their BM25 scores, best first, and how many matched."""

    scored: list[tuple[T, float]]
    total: int
    proven: bool  # the results that had to be exact are FTS5's own ranking


class Candidates(NamedTuple):
    """The rows a budgeted query scores: `source` is SQL yielding (seq, score),
    higher better, with its `args`."""

    source: str
    args: list[Any]
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


class BudgetedSearch:
    """Mixed into `Store`, which provides `db`."""

    db: Database

    def candidates(self, table: Indexed, words: Sequence[str], budget: int) -> Candidates:
        """The SQL scoring the matches of `words` (non-empty) in `table`'s
        full-text index within `budget` (see the module's docstring)."""
        rows, hits = self._word_hits(table, words, cap=budget + 1)
        order = sorted(words, key=lambda w: hits[w])  # rarest first
        chosen, scored = 1, hits[order[0]]
        while chosen < len(order) and scored + hits[order[chosen]] <= budget:
            scored += hits[order[chosen]]
            chosen += 1
        rare, common = order[:chosen], order[chosen:]
        floor = 0
        if scored > budget:  # even the rarest word is common: its newest matches
            floor = self.db.execute(
                f"SELECT rowid FROM {table}_fts WHERE {table}_fts MATCH ? "
                "ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                [fts_any(rare), budget - 1],
            ).fetchone()[0]
        score = (
            f"SELECT rowid AS seq, -{_BM25[table]} AS score FROM {table}_fts "
            f"WHERE {table}_fts MATCH ? AND rowid >= ?"
        )
        if not common:
            return Candidates(score, [fts_any(rare), floor], None, complete=floor == 0)
        both = f"({fts_any(rare)}) AND ({fts_any(common)})"
        return Candidates(
            f"SELECT seq, max(score) AS score FROM ({score} UNION ALL {score}) GROUP BY seq",
            [fts_any(rare), floor, both, floor],
            sum(fts5_idf(rows, hits[w]) * (_BM25_K1 + 1) for w in common),
            complete=floor == 0,
        )

    def top_rows(
        self, table: Indexed, columns: str, source: str, args: list[Any], limit: int
    ) -> tuple[list[tuple[Any, ...]], int]:
        """The best `limit` rows of `source` (seq, score), best first, each as
        `columns` of `table` followed by its score, and how many rows `source`
        yields. Only seqs and scores are sorted; rows are read for the top."""
        alias = _ALIAS[table]
        rows = self.db.execute(
            f"SELECT {columns}, t.score, t.total FROM ("
            f"SELECT b.seq, b.score, COUNT(*) OVER () AS total FROM ({source}) b "
            "ORDER BY b.score DESC, b.seq DESC LIMIT ?"
            f") t CROSS JOIN {table} {alias} ON {alias}.seq = t.seq "
            "ORDER BY t.score DESC, t.seq DESC",
            [*args, limit],
        ).fetchall()
        return [row[:-1] for row in rows], rows[0][-1] if rows else 0

    def _word_hits(
        self, table: Indexed, words: Sequence[str], cap: int
    ) -> tuple[int, dict[str, int]]:
        """The number of rows in `table`'s full-text index (all agents), and
        how many hold each word (FTS5's own counts behind its IDF), counted up
        to `cap`: a word found more often counts as `cap`. That only
        overestimates its IDF, so a bound built from it stays an upper bound,
        and counting stays cheap. Passages never change once stored, so their
        counts are kept until one is added or deleted; messages can be edited,
        so theirs are counted afresh."""
        state = self.db.execute(
            f"SELECT (SELECT coalesce(sum({_COUNTER[table]}), 0) FROM agents),"
            f" (SELECT coalesce(max(seq), 0) FROM {table})"
        ).fetchone()
        cache: dict[str, tuple[int, int]] = {}
        if table == "passages":
            cache = self.__dict__.setdefault("_word_hits_cache", {})
            if self.__dict__.get("_word_hits_state") != state:
                cache.clear()
                self.__dict__["_word_hits_state"] = state
        for word in words:
            known = cache.get(word)
            if known is None or (known[0] >= known[1] and known[1] < cap):
                count = self.db.execute(
                    f"SELECT count(*) FROM (SELECT 1 FROM {table}_fts "
                    f"WHERE {table}_fts MATCH ? LIMIT ?)",
                    [fts_any([word]), cap],
                ).fetchone()[0]
                cache[word] = (count, cap)
        return state[0], {w: cache[w][0] for w in words}
