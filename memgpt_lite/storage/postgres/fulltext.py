"""Budgeted BM25 over PostgreSQL's tsvectors (a part of `PostgresStore`),
shared by archival passages and recall messages.

PostgreSQL has no BM25 (`ts_rank` is another formula), so scores are
computed here, in SQL, as FTS5's `bm25()` computes them (fts5_aux.c): for
each query word, IDF * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average
length)), k1 = 1.2, b = 0.75. A candidate's tf per word comes from its
tsvector (`unnest` gives each lexeme's positions and weights: a passage's text
is weighted A, its context D and counted half, as SQLite's
bm25(passages_fts, 1.0, 0.5)). Lengths count words, stop words included, as
FTS5 does: `search_length` per row, the agent's total in `agents.*_tokens`.

Unlike SQLite's FTS5 table, which holds every agent's rows, statistics here
are the agent's own: its row count, its word counts and its matches. The
budget (memory/ranking.py) is the same: the rarest words choose at most
RANK_BUDGET candidates, the others only add to their scores, and
`ScoreBound` says when that is the exact ranking. A word's match count is
counted up to the budget + 1, like SQLite's `_word_hits`; above that its IDF is
overestimated (scores then weigh very common words more than FTS5 would).

Text and queries go through `plain_text` (accents removed: the server may
have no `unaccent`) and the configuration `memgpt_lite_search` (migration
m003: the search language without stop words). A query is only ever words
(`fts_words`), each passed as a parameter to `phraseto_tsquery`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

import psycopg
from psycopg import sql

from memgpt_lite.memory.ranking import (
    BM25_K1,
    ScoreBound,
    common_words_bound,
    fts5_idf,
    fts_words,
    split_by_rarity,
)

Indexed = Literal["passages", "messages"]
SEARCH_CONFIG = "memgpt_lite_search"  # made by migration m003
BM25_B = 0.75
# How a word's occurrences count: a passage's context (weight D) half its text (A).
_TF = {
    "passages": "0.5 * (cardinality(u.positions) + cardinality(array_positions(u.weights, 'A')))",
    "messages": "cardinality(u.positions)",
}
_COUNTERS = {
    "passages": ("passage_count", "passage_tokens"),
    "messages": ("message_count", "message_tokens"),
}
_ALIAS = {"passages": "p", "messages": "m"}
_WORD = re.compile(r"\w+", re.UNICODE)


def plain_text(text: str) -> str:
    """`text` with accents removed (NFKD, combining marks dropped), as FTS5's
    remove_diacritics does, so "cafe" finds "café"."""
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


def any_word(count: int) -> sql.Composable:
    """A tsquery matching any of `count` words given as parameters."""
    one = sql.SQL("phraseto_tsquery({}::regconfig, %s)").format(sql.Literal(SEARCH_CONFIG))
    return sql.SQL("(") + sql.SQL(" || ").join([one] * count) + sql.SQL(")")


class Query(NamedTuple):
    """A query's words that have lexemes, with what BM25 needs of them."""

    words: list[str]  # plain text, in the query's order
    lexemes: list[list[str]]  # per word (more than one: a phrase, like "e_mail")
    hits: dict[str, int]  # rows of the agent holding each word, up to the budget + 1
    rows: int  # the agent's rows
    tokens: int  # their words, in all


class Scored(NamedTuple):
    rows: list[tuple[Any, ...]]  # the table's columns, then the score
    total: int
    proven: bool


class TextSearch:
    """Mixed into `PostgresStore`, which provides `conn`."""

    conn: psycopg.Connection

    def ranked_rows(
        self,
        table: Indexed,
        agent_id: str,
        query: str,
        columns: str,
        filters: tuple[str, list[Any]],
        limit: int,
        exact: int,
        budget: int,
    ) -> Scored:
        """The agent's best `limit` rows of `table` for `query` passing
        `filters` (SQL on the table's alias, and its parameters), as `columns`
        and score, best first; how many candidates passed; whether the first
        `exact` are proven the exact ranking (see memory/ranking.py)."""
        words = [plain_text(w) for w in fts_words(query)]
        found = self._query(table, agent_id, list(dict.fromkeys(words)), budget + 1)
        if found is None:
            return Scored([], 0, True)
        rare, common, over_budget = split_by_rarity(found.words, found.hits, budget)
        floor = self._floor(table, agent_id, rare, budget) if over_budget else 0
        rows = self._score(table, agent_id, found, rare, floor, columns, filters, limit)
        total = rows[0][-1] if rows else 0
        bound = ScoreBound(
            common_words_bound(found.rows, found.hits, common) if common else None, floor == 0
        )
        scored = [row[:-1] for row in rows]
        return Scored(scored, total, bound.proves([r[-1] for r in scored], exact))

    def _query(self, table: Indexed, agent_id: str, words: list[str], cap: int) -> Query | None:
        """The words' lexemes and capped match counts, and the agent's row and
        word counts, in one statement (so they agree); None if no word has a
        lexeme (punctuation, emoji) or the agent has no rows."""
        count, tokens = _COUNTERS[table]
        statement = sql.SQL(
            "SELECT w.word, tsvector_to_array({vector}), (SELECT count(*) FROM ("
            "SELECT 1 FROM {table} t WHERE t.agent_id = %(agent)s "
            "AND t.search_vector @@ phraseto_tsquery({config}::regconfig, w.word) "
            "LIMIT %(cap)s) s),"
            " a.{count}, a.{tokens} "
            "FROM unnest(%(words)s::text[]) WITH ORDINALITY w(word, n) "
            "CROSS JOIN agents a WHERE a.id = %(agent)s ORDER BY w.n"
        ).format(
            vector=to_tsvector("w.word"),
            table=sql.Identifier(table),
            config=sql.Literal(SEARCH_CONFIG),
            count=sql.Identifier(count),
            tokens=sql.Identifier(tokens),
        )
        rows = self.conn.execute(
            statement, {"agent": agent_id, "cap": cap, "words": words}
        ).fetchall()
        rows = [r for r in rows if r[1]]
        if not rows or not rows[0][3]:
            return None
        return Query(
            [r[0] for r in rows],
            [list(r[1]) for r in rows],
            {r[0]: r[2] for r in rows},
            rows[0][3],
            rows[0][4],
        )

    def _floor(self, table: Indexed, agent_id: str, rare: Sequence[str], budget: int) -> int:
        """The seq above which the newest `budget` matches of `rare` are."""
        statement = sql.SQL(
            "SELECT seq FROM {} t WHERE t.agent_id = %s AND t.search_vector @@ {} "
            "ORDER BY seq DESC OFFSET %s LIMIT 1"
        ).format(sql.Identifier(table), any_word(len(rare)))
        row = self.conn.execute(statement, [agent_id, *rare, budget - 1]).fetchone()
        return row[0] if row else 0

    def _score(
        self,
        table: Indexed,
        agent_id: str,
        found: Query,
        rare: Sequence[str],
        floor: int,
        columns: str,
        filters: tuple[str, list[Any]],
        limit: int,
    ) -> list[tuple[Any, ...]]:
        """The best `limit` candidates (rows holding a rare word, from `floor`)
        as `columns`, score and the candidates' count, best first."""
        terms: list[tuple[int, str, float, int]] = []
        for n, (word, lexemes) in enumerate(zip(found.words, found.lexemes, strict=True)):
            idf = fts5_idf(found.rows, found.hits[word])
            terms += [(n, lexeme, idf, len(lexemes)) for lexeme in lexemes]
        alias = sql.Identifier(_ALIAS[table])
        where, params = filters
        statement = sql.SQL(_SCORE).format(
            table=sql.Identifier(table),
            t=alias,
            rare=any_word(len(rare)),
            where=sql.SQL(where),
            tf=sql.SQL(_TF[table]),
            columns=sql.SQL(columns),
        )
        average = found.tokens / found.rows if found.tokens else 1.0
        args = [
            [t[0] for t in terms],
            [t[1] for t in terms],
            [t[2] for t in terms],
            [t[3] for t in terms],
            agent_id,
            *rare,
            floor,
            *params,
            BM25_K1 + 1,
            BM25_K1,
            1 - BM25_B,
            BM25_B / average,
            limit,
        ]
        return self.conn.execute(statement, args).fetchall()


# The candidates, each one's tf of every query word (a word of several
# lexemes, a phrase, counts where all are found, as often as the rarest),
# and their BM25 scores; only the best are joined back to their rows.
_SCORE = """
WITH terms (word, lexeme, idf, lexemes) AS (
    SELECT * FROM unnest(%s::int[], %s::text[], %s::float8[], %s::int[])
), candidates AS MATERIALIZED (
    SELECT {t}.seq, {t}.search_vector, {t}.search_length FROM {table} {t}
    WHERE {t}.agent_id = %s AND {t}.search_vector @@ {rare} AND {t}.seq >= %s{where}
), frequencies AS (
    SELECT c.seq, min(c.search_length) AS length, min(t.idf) AS idf, min({tf}) AS tf
    FROM candidates c CROSS JOIN LATERAL unnest(c.search_vector) u
    JOIN terms t ON t.lexeme = u.lexeme
    GROUP BY c.seq, t.word HAVING count(*) = min(t.lexemes)
), scores AS (
    SELECT f.seq, sum(f.idf * f.tf * %s / (f.tf + %s * (%s + %s * f.length))) AS score
    FROM frequencies f GROUP BY f.seq
), best AS (
    SELECT s.seq, s.score FROM scores s ORDER BY s.score DESC, s.seq DESC LIMIT %s
)
SELECT {columns}, b.score, (SELECT count(*) FROM candidates)
FROM best b JOIN {table} {t} ON {t}.seq = b.seq ORDER BY b.score DESC, b.seq DESC
"""
