"""FTS5 queries for budgeted BM25 ranking (a part of `Store`), shared by
archival passages and recall messages; the arithmetic is in storage/core/words.py."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Literal, NamedTuple

from sqlite_utils import Database

from memgpt_lite.storage.core.words import ScoreBound, common_words_bound, split_by_rarity
from memgpt_lite.storage.sqlite.side_reader import Row, SideReader

Indexed = Literal["passages", "messages"]
# BM25 column weights: a passage's text counts twice its context.
_BM25 = {"passages": "bm25(passages_fts, 1.0, 0.5)", "messages": "bm25(messages_fts)"}
_COUNTER = {"passages": "passage_count", "messages": "message_count"}  # kept by triggers
_ALIAS = {"passages": "p", "messages": "m"}  # as the stores' column lists name them


def fts_any(words: Sequence[str]) -> str:
    """An FTS5 expression matching any of `words` (each quoted: plain text)."""
    return " OR ".join(f'"{w}"' for w in words)


class Part(NamedTuple):
    """One full-text query of a ranking: SQL yielding (seq, score), higher
    better, and its args."""

    sql: str
    args: list[Any]


class Candidates(NamedTuple):
    """The rows a budgeted query scores, as one or two queries (`parts`): the
    matches of the rare words, and, when the query has common words too, the
    rows among them that also hold one, scored for all the words. A row's
    score is its best in any part; every row of a later part is one of the
    first's. And what is known of the rows left out."""

    parts: list[Part]
    left_out: ScoreBound

    def filtered(self, wrap: Callable[[Part], Part]) -> Candidates:
        """The same with each part's SQL wrapped (by a filter on its rows)."""
        return self._replace(parts=[wrap(part) for part in self.parts])


def best_rows(results: Sequence[Sequence[Row]], score: int, limit: int) -> list[Row]:
    """The best `limit` of the rows several parts yielded (each row begins
    with its seq; `score` is its score's index), each seq once with its best
    score, in the order of a ranking: score, then the newest first."""
    best: dict[int, Row] = {}
    for rows in results:
        for row in rows:
            kept = best.get(row[0])
            if kept is None or row[score] > kept[score]:
                best[row[0]] = row
    return sorted(best.values(), key=lambda row: (-row[score], -row[0]))[:limit]


# The best `limit` rows of a part (seq, score) as `columns` of the table,
# then the score and how many rows the part yields. Only seqs and scores
# are sorted; rows are read for the top. The part is materialized and
# counted apart: a window's COUNT(*) OVER () cost about 2 ms more at 1M
# passages (same rows).
_TOP = """
WITH b AS MATERIALIZED ({source})
SELECT {columns}, t.score, t.total FROM (
    SELECT b.seq, b.score, (SELECT count(*) FROM b) AS total FROM b
    ORDER BY b.score DESC, b.seq DESC LIMIT ?
) t CROSS JOIN {table} {alias} ON {alias}.seq = t.seq
ORDER BY t.score DESC, t.seq DESC
"""


class BudgetedSearch:
    """Mixed into `Store`, which provides `db`, `side_reader` and
    `in_transaction`."""

    db: Database
    side_reader: SideReader
    in_transaction: Callable[[], bool]

    def candidates(self, table: Indexed, words: Sequence[str], budget: int) -> Candidates:
        """The queries scoring the matches of `words` (non-empty) in
        `table`'s full-text index within `budget` (see storage/core/words.py)."""
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
        rare_part = Part(score, [fts_any(rare), floor])
        if not common:
            return Candidates([rare_part], ScoreBound(None, floor == 0))
        both = Part(score, [f"({fts_any(rare)}) AND ({fts_any(common)})", floor])
        return Candidates(
            [rare_part, both], ScoreBound(common_words_bound(rows, hits, common), floor == 0)
        )

    def run_parts(self, statements: Sequence[Part]) -> list[list[Row]]:
        """The rows of each statement (one per part of a ranking). The first
        runs on the store's connection while the others run on the side
        reader, at the same time; all run here, one after the other, inside
        a transaction or snapshot, whose view the side reader does not share."""
        if len(statements) == 1 or self.in_transaction() or self.db.conn.in_transaction:
            return [self.db.execute(sql, args).fetchall() for sql, args in statements]
        others = [self.side_reader.submit(sql, args) for sql, args in statements[1:]]
        try:
            first = self.db.execute(statements[0].sql, statements[0].args).fetchall()
            return [first, *(future.result() for future in others)]
        except BaseException:  # Ctrl-C or an error: the side query must not run on
            self.side_reader.interrupt()
            raise

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
        self, table: Indexed, columns: str, parts: Sequence[Part], limit: int
    ) -> tuple[list[Row], int]:
        """The best `limit` rows of a ranking's `parts` (each a `Candidates`
        part, maybe filtered), best first, each as `columns` of `table`
        followed by its score, and how many rows the ranking holds."""
        alias = _ALIAS[table]
        top = functools.partial(_TOP.format, columns=columns, table=table, alias=alias)
        results = self.run_parts([Part(top(source=sql), [*args, limit]) for sql, args in parts])
        rows = best_rows(results, -2, limit)
        # The later parts' rows are among the first's: it counts them all.
        return [row[:-1] for row in rows], results[0][0][-1] if results[0] else 0

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
