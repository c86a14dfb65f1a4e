"""FTS5 queries for budgeted BM25 ranking (a part of `Store`), shared by
archival passages and recall messages; the arithmetic is in memory/ranking.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from sqlite_utils import Database

from memgpt_lite.memory.ranking import ScoreBound, common_words_bound, split_by_rarity

Indexed = Literal["passages", "messages"]
# BM25 column weights: a passage's text counts twice its context.
_BM25 = {"passages": "bm25(passages_fts, 1.0, 0.5)", "messages": "bm25(messages_fts)"}
_COUNTER = {"passages": "passage_count", "messages": "message_count"}  # kept by triggers
_ALIAS = {"passages": "p", "messages": "m"}  # as the stores' column lists name them


def fts_any(words: Sequence[str]) -> str:
    """An FTS5 expression matching any of `words` (each quoted: plain text)."""
    return " OR ".join(f'"{w}"' for w in words)


class Candidates(NamedTuple):
    """The rows a budgeted query scores: `source` is SQL yielding (seq, score),
    higher better, with its `args`, and what is known of the rows left out."""

    source: str
    args: list[Any]
    left_out: ScoreBound


class BudgetedSearch:
    """Mixed into `Store`, which provides `db`."""

    db: Database

    def candidates(self, table: Indexed, words: Sequence[str], budget: int) -> Candidates:
        """The SQL scoring the matches of `words` (non-empty) in `table`'s
        full-text index within `budget` (see memory/ranking.py)."""
        rows, hits = self._word_hits(table, words, cap=budget + 1)
        rare, common, over_budget = split_by_rarity(words, hits, budget)
        floor = 0
        if over_budget:  # even the rarest word is common: its newest matches
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
            return Candidates(score, [fts_any(rare), floor], ScoreBound(None, floor == 0))
        both = f"({fts_any(rare)}) AND ({fts_any(common)})"
        return Candidates(
            f"SELECT seq, max(score) AS score FROM ({score} UNION ALL {score}) GROUP BY seq",
            [fts_any(rare), floor, both, floor],
            ScoreBound(common_words_bound(rows, hits, common), floor == 0),
        )

    def within_budget(self, table: Indexed, words: Sequence[str], budget: int) -> list[str]:
        """The `words` found in at most `budget` rows of `table`'s index. A
        word found in more tells little (a low IDF), and FTS5's bm25() reads
        every row holding a query word to count them: at 1M passages, about
        10 ms for a word in half of them."""
        if not words:
            return []
        hits = self._word_hits(table, words, cap=budget + 1)[1]
        return [w for w in words if hits[w] <= budget]

    def top_rows(
        self, table: Indexed, columns: str, source: str, args: list[Any], limit: int
    ) -> tuple[list[tuple[Any, ...]], int]:
        """The best `limit` rows of `source` (seq, score), best first, each as
        `columns` of `table` followed by its score, and how many rows `source`
        yields. Only seqs and scores are sorted; rows are read for the top.
        `source` is materialized and counted apart: a window's COUNT(*) OVER
        () cost about 2 ms more at 1M passages (same rows)."""
        alias = _ALIAS[table]
        rows = self.db.execute(
            f"WITH b AS MATERIALIZED ({source}) "
            f"SELECT {columns}, t.score, t.total FROM ("
            "SELECT b.seq, b.score, (SELECT count(*) FROM b) AS total FROM b "
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
