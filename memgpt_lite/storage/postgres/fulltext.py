"""Budgeted BM25 over PostgreSQL's tsvectors (a part of `PostgresStore`),
shared by archival passages and recall messages.

PostgreSQL has no BM25 (`ts_rank` is another formula), so scores are
computed here, in SQL, as FTS5's `bm25()` computes them (fts5_aux.c): for
each query word, IDF * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length /
average length)), k1 = 1.2, b = 0.75. Lengths count words, stop words
included, as FTS5 does: `search_length` per row, the agent's total in
`agents.*_tokens` (migration m003).

A word's tf in a row is read from its tsvector without unnesting it (which
cost 50 µs a row): `ts_rank` with normalization 0 and a one-lexeme query is
sum(1/j², j = 1..n) / 1.6449 (tsrank.c, calc_rank_or), strictly increasing
in n, the lexeme's number of positions; `_LEVELS` holds the midpoints
between its float4 values, computed as the server computes them, so
`width_bucket` turns it back into n exactly (a lexeme keeps at most 255
positions). A passage's text is weighted A, its context D and counted half
(SQLite's bm25(passages_fts, 1.0, 0.5)): ranked with weight A alone, the text's
positions (they come first) give its count.

Unlike SQLite's FTS5 table, which holds every agent's rows, statistics here
are the agent's own: its row count, its words and its matches. The budget
logic (storage/core/words.py) is SQLite's, with a smaller budget
(`PG_RANK_BUDGET`): the rarest words choose at most that many candidates
(over budget, the newest matches), the others only add to their scores, and
`ScoreBound` says when that is the exact ranking. A word's matches are
counted up to the budget + 1, like SQLite's `_word_hits`; above that its IDF
is overestimated (very common words then weigh more than FTS5 would weigh
them).

Text and queries go through `plain_text` (accents removed: the server may
have no `unaccent`) and the configuration `memgpt_lite_search` (migration
m003: the search language without stop words). A query is only ever words
(`fts_words`), each passed as a parameter to `phraseto_tsquery`; the
lexemes the server made of them come back quoted (`tsquery_of`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any, Literal, NamedTuple

import numpy as np
import psycopg
from psycopg import sql

from memgpt_lite.storage.core.sql import Cursor, Search
from memgpt_lite.storage.core.words import (
    BM25_K1,
    ScoreBound,
    common_words_bound,
    fts5_idf,
    fts_words,
    split_by_rarity,
)
from memgpt_lite.storage.postgres.batch import Params

Indexed = Literal["passages", "messages"]
SEARCH_CONFIG = "memgpt_lite_search"  # made by migration m003
BM25_B = 0.75
MAX_POSITIONS = 255  # a tsvector keeps at most this many positions of a lexeme
# SQLite's RANK_BUDGET is 10,000. Here a candidate costs a heap fetch and a
# ts_rank per lexeme (about 5 µs on an idle server, 15 µs on a busy one), not
# FTS5's in-index arithmetic: at 100,000 passages a broad query scored 10,000
# candidates in 170 ms (p50; 280 ms p95), 2,000 in 50 ms (90 ms p95). Only an
# agent whose query words each match thousands of its rows is ranked otherwise.
PG_RANK_BUDGET = 2_000
_COUNTERS = {
    "passages": ("passage_count", "passage_tokens"),
    "messages": ("message_count", "message_tokens"),
}
_ALIAS = {"passages": "p", "messages": "m"}
_WORD = re.compile(r"\w+", re.UNICODE)


def _rank_levels() -> list[float]:
    """Midpoints between ts_rank's values for 0, 1, 2, ... positions of a
    one-lexeme query, in the float4 steps tsrank.c takes."""
    f32 = np.float32
    values, total = [0.0], f32(0)
    for j in range(1, MAX_POSITIONS + 1):
        total = f32(total + f32(f32(1.0) / f32(j * j)))
        values.append(float(f32(float(f32(f32(1.0) + total) - f32(1.0)) / 1.64493406685)))
    assert all(a < b for a, b in zip(values, values[1:], strict=False))
    return [(a + b) / 2 for a, b in zip(values, values[1:], strict=False)]


_LEVELS = _rank_levels()


def _count(query: str, weights: str) -> str:
    """SQL for how many positions of `query`'s lexeme `c.search_vector` has,
    of the weights given 1 (D, C, B, A)."""
    return (
        f"width_bucket(ts_rank('{{{weights}}}', c.search_vector, {query}, 0)::float8, %(levels)s)"
    )


def _tf(table: Indexed, query: str) -> str:
    """SQL for a lexeme's tf: every position (messages), or a text position
    once and a context one half (passages: ranked with A alone, then all)."""
    if table == "messages":
        return _count(query, "1,1,1,1")
    return f"0.5::float8 * ({_count(query, '1,1,1,1')} + {_count(query, '0,0,0,1')})"


def plain_text(text: str) -> str:
    """`text` with accents removed (NFKD, combining marks dropped), as FTS5's
    remove_diacritics does, so "cafe" finds "café"."""
    if text.isascii():  # most text: nothing to remove, and a bulk load stays fast
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def word_count(text: str | None) -> int:
    """How many words BM25 counts in `text` (FTS5's length of a column)."""
    return len(_WORD.findall(text)) if text else 0


def to_tsvector(value: str) -> sql.Composable:
    """SQL for the tsvector of the SQL expression `value` (plain text)."""
    return sql.SQL("to_tsvector({}::regconfig, {})").format(
        sql.Literal(SEARCH_CONFIG), sql.SQL(value)
    )


def any_word(names: Sequence[str]) -> sql.Composable:
    """A tsquery matching any of the words in the parameters `names`."""
    one = "phraseto_tsquery({}::regconfig, %({})s)"
    return (
        sql.SQL("(")
        + sql.SQL(" || ").join(
            sql.SQL(one).format(sql.Literal(SEARCH_CONFIG), sql.SQL(n)) for n in names
        )
        + sql.SQL(")")
    )


def tsquery_of(lexeme: str) -> str:
    """A tsquery's text matching exactly `lexeme` (as the server made it):
    quoted, its quotes and backslashes doubled, so nothing in it is syntax."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def named(where: str, params: Sequence[Any], prefix: str) -> tuple[str, dict[str, Any]]:
    """A condition written for the core (`?` placeholders, core/sql.py) with
    named parameters instead, `prefix` and a number, as the ranking's
    statement takes them."""
    pieces = where.split("?")
    names = [f"{prefix}{i}" for i in range(len(pieces) - 1)]
    text = pieces[0] + "".join(
        f"%({n})s{piece}" for n, piece in zip(names, pieces[1:], strict=True)
    )
    return text, dict(zip(names, params, strict=True))


class Query(NamedTuple):
    """A query's words that have lexemes, with what BM25 needs of them."""

    words: list[str]  # plain text, in the query's order
    lexemes: list[list[str]]  # per word (more than one: a phrase, like "e_mail")
    hits: dict[str, int]  # rows of the agent holding each word, up to the budget + 1
    rows: int  # the agent's rows
    tokens: int  # their words, in all


def within_budget(found: Query, budget: int) -> Query:
    """`found` without the words in more than `budget` rows."""
    kept = [i for i, w in enumerate(found.words) if found.hits[w] <= budget]
    return found._replace(
        words=[found.words[i] for i in kept], lexemes=[found.lexemes[i] for i in kept]
    )


class Scored(NamedTuple):
    rows: list[tuple[Any, ...]]  # the table's columns, then the score
    total: int
    proven: bool


class TextSearch:
    """Mixed into `PostgresStore`, which provides `conn` and `_send` (its
    statements go through `_send`: prepared once per connection, as psycopg
    prepares a statement run often, so their plans are chosen alike)."""

    conn: psycopg.Connection
    _send: Callable[[str | sql.Composable, Params], Cursor]

    def ranked_rows(self, table: Indexed, columns: str, search: Search) -> Scored:
        """The agent's best rows of `table` for the search (see `Search`), as
        `columns` and score, best first; how many candidates passed; whether
        the first `exact` are proven the exact ranking (storage/core/words.py).
        With `drop_over_budget`, the words in more than `budget` rows are
        left out (as SQLite's `within_budget`)."""
        agent_id, budget = search.agent_id, search.budget
        words = [plain_text(w) for w in fts_words(search.query)]
        found = self._query(table, agent_id, list(dict.fromkeys(words)), budget + 1)
        if found is None:
            return Scored([], 0, True)
        found = self._estimate_capped(table, found, budget + 1)
        if search.drop_over_budget:
            found = within_budget(found, budget)
            if not found.words:
                return Scored([], 0, True)
        rare, common, over_budget = split_by_rarity(found.words, found.hits, budget)
        filters = named(*search.filters, "filter")
        newest = budget if over_budget else 0
        rows = self._score(table, agent_id, found, rare, newest, columns, filters, search.limit)
        total = rows[0][-1] if rows else 0
        bound = ScoreBound(
            common_words_bound(found.rows, found.hits, common) if common else None,
            not over_budget,
        )
        scored = [row[:-1] for row in rows]
        return Scored(scored, total, bound.proves([r[-1] for r in scored], search.exact))

    def _query(self, table: Indexed, agent_id: str, words: list[str], cap: int) -> Query | None:
        """The words' lexemes and capped match counts, and the agent's row and
        word counts; None if no word has a lexeme (punctuation, emoji) or the
        agent has no rows. Counting a common word's matches reads `cap` rows,
        so a passage word's count is kept while the agent's passages stay as
        they were (their count, words and last seq: passages are never edited);
        messages can be edited in place, so theirs are counted each time."""
        keep = table == "passages"
        caches: dict[tuple[str, str], tuple[tuple[int, ...], dict[str, tuple[int, int]]]]
        caches = self.__dict__.setdefault("_word_hits", {})
        state, kept = caches.get((table, agent_id), ((), {}))
        # A count kept is good for this cap if it was exact, or counted as far.
        known = {w: min(n, cap) for w, (n, c) in kept.items() if n < c or c >= cap}
        rows = self._count_words(table, agent_id, words, [w for w in words if w not in known], cap)
        if rows and tuple(rows[0][3:]) != state:
            kept, known = {}, {}
            if any(r[2] is None for r in rows):  # the counts kept were stale
                rows = self._count_words(table, agent_id, words, words, cap)
        found = [r for r in rows if r[1]]
        if not found or not found[0][3]:
            return None
        hits = {r[0]: r[2] if r[2] is not None else known[r[0]] for r in found}
        if keep:
            if len(caches) > 64 or len(kept) > 10_000:  # a bound on what a store keeps
                caches.clear()
            counted = {r[0]: (r[2], cap) for r in found if r[2] is not None}
            caches[(table, agent_id)] = (tuple(rows[0][3:]), {**kept, **counted})
        return Query(
            [r[0] for r in found], [list(r[1]) for r in found], hits, found[0][3], found[0][4]
        )

    def _estimate_capped(self, table: Indexed, found: Query, cap: int) -> Query:
        """The words counted only up to `cap` (a common word: counting all its
        matches would read them all), with their share of the table's rows
        from its statistics (ANALYZE's most common lexemes) times the agent's
        rows. BM25's IDF needs the true count: a word in half of an archive,
        taken as in `cap` rows, weighed as if rare. A word the statistics do
        not list keeps `cap`."""
        capped = [
            i
            for i, w in enumerate(found.words)
            if found.hits[w] >= cap and len(found.lexemes[i]) == 1
        ]
        if not capped:
            return found
        stats = self._send(
            "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats "
            "WHERE schemaname = current_schema() AND tablename = %s "
            "AND attname = 'search_vector'",
            [table],
        ).fetchone()
        if stats is None or stats[0] is None:
            return found
        share = dict(zip(stats[0], stats[1], strict=False))  # the freqs end with 3 summary values
        hits = dict(found.hits)
        for i in capped:
            frequency = share.get(found.lexemes[i][0])
            if frequency is not None:
                word = found.words[i]
                hits[word] = max(cap, min(found.rows, round(frequency * found.rows)))
        return found._replace(hits=hits)

    def _count_words(
        self, table: Indexed, agent_id: str, words: list[str], count: list[str], cap: int
    ) -> list[tuple[Any, ...]]:
        """Per word: itself, its lexemes, its matches up to `cap` if in
        `count` (else NULL); then the agent's rows, words and last seq (one
        statement, so they agree). No rows for an unknown agent."""
        rows, tokens = _COUNTERS[table]
        statement = sql.SQL(
            "SELECT w.word, tsvector_to_array({vector}), CASE WHEN w.word = ANY(%(count)s) "
            "THEN (SELECT count(*) FROM (SELECT 1 FROM {table} t WHERE t.agent_id = %(agent)s "
            "AND t.search_vector @@ phraseto_tsquery({config}::regconfig, w.word) "
            "LIMIT %(cap)s) s) END, a.{rows}, a.{tokens}, "
            "(SELECT max(seq) FROM {table} t WHERE t.agent_id = %(agent)s) "
            "FROM unnest(%(words)s::text[]) WITH ORDINALITY w(word, n) "
            "CROSS JOIN agents a WHERE a.id = %(agent)s ORDER BY w.n"
        ).format(
            vector=to_tsvector("w.word"),
            table=sql.Identifier(table),
            config=sql.Literal(SEARCH_CONFIG),
            rows=sql.Identifier(rows),
            tokens=sql.Identifier(tokens),
        )
        args = {"agent": agent_id, "cap": cap, "words": words, "count": count}
        return self._send(statement, args).fetchall()

    def _score(
        self,
        table: Indexed,
        agent_id: str,
        found: Query,
        rare: Sequence[str],
        newest: int,
        columns: str,
        filters: tuple[str, dict[str, Any]],
        limit: int,
    ) -> list[tuple[Any, ...]]:
        """The best `limit` candidates (rows holding a rare word; the newest
        `newest` of them unless 0) as `columns`, score and the candidates'
        count, best first."""
        where, params = filters
        rare_names = [f"rare{i}" for i in range(len(rare))]
        counts, score, term_args = bm25(table, found, rare)
        statement = sql.SQL(_SCORE).format(
            table=sql.Identifier(table),
            t=sql.Identifier(_ALIAS[table]),
            rare=any_word(rare_names),
            where=sql.SQL(where),
            newest=sql.SQL(" ORDER BY seq DESC LIMIT %(newest)s" if newest else ""),
            counts=counts,
            score=score,
            columns=sql.SQL(columns),
        )
        average = found.tokens / found.rows if found.tokens else 1.0
        args = {
            **params,
            **term_args,
            **dict(zip(rare_names, rare, strict=True)),
            "agent": agent_id,
            "newest": newest,
            "levels": _LEVELS,
            "k1": BM25_K1,
            "k1_1": BM25_K1 + 1,
            "b_0": 1 - BM25_B,
            "b_average": BM25_B / average,
            "limit": limit,
        }
        return self._send(statement, args).fetchall()


def bm25(
    table: Indexed, found: Query, rare: Sequence[str]
) -> tuple[sql.Composable, sql.Composable, dict[str, Any]]:
    """SQL for a candidate's tf of each word (`f.tf0`, ...) and for its BM25
    score from them (`f.k` the length term), and their parameters. A word of
    several lexemes (a phrase) counts as often as its rarest lexeme."""
    counts: list[sql.Composable] = []
    terms: list[sql.Composable] = []
    args: dict[str, Any] = {}
    for i, (word, lexemes) in enumerate(zip(found.words, found.lexemes, strict=True)):
        tfs = []
        for j, lexeme in enumerate(lexemes):
            args[f"q{i}_{j}"] = tsquery_of(lexeme)
            tfs.append(sql.SQL(_tf(table, f"%(q{i}_{j})s::tsquery")))
        tf = sql.SQL("LEAST({})").format(sql.SQL(", ").join(tfs)) if len(tfs) > 1 else tfs[0]
        counts.append(sql.SQL("{} AS {}").format(tf, sql.Identifier(f"tf{i}")))
        args[f"idf{i}"] = fts5_idf(found.rows, found.hits[word])
        terms.append(
            sql.SQL("%({idf})s * f.{tf} * %(k1_1)s / (f.{tf} + f.k)").format(
                idf=sql.SQL(f"idf{i}"), tf=sql.Identifier(f"tf{i}")
            )
        )
    return sql.SQL(", ").join(counts), sql.SQL(" + ").join(terms), args


# The candidates (rows holding a rare word), each one's count of every query
# word (in a materialized CTE: inlined, each count was computed once for every
# place the score names it) and its score; only the best are joined back to
# their rows.
_SCORE = """
WITH candidates AS MATERIALIZED (
    SELECT c.seq, {counts}, %(k1)s * (%(b_0)s + %(b_average)s * c.search_length) AS k
    FROM (
        SELECT {t}.seq, {t}.search_vector, {t}.search_length FROM {table} {t}
        WHERE {t}.agent_id = %(agent)s AND {t}.search_vector @@ {rare}{where}{newest}
    ) c
), best AS (
    SELECT f.seq, {score} AS score, count(*) OVER () AS total
    FROM candidates f ORDER BY score DESC, f.seq DESC LIMIT %(limit)s
)
SELECT {columns}, b.score, b.total
FROM best b JOIN {table} {t} ON {t}.seq = b.seq ORDER BY b.score DESC, b.seq DESC
"""
