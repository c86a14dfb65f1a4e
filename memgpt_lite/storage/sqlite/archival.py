"""SQLite's writes and full-text ranking of passages (a part of `Store`);
the reads are core/archival.py's, vectors vectors.py's.

Triggers keep the full-text index and the agent's counters in step with
every insert and delete, and drop a deleted passage's vector (migrations.py).
A passage is inserted unless its text's hash is the agent's already (INSERT
OR IGNORE on the unique index). Ranking is FTS5's BM25, budgeted
(fulltext.py); a query naming a period finds the period's best in the same
evaluation of the full-text query (`_rank_in_period`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date

from sqlite_utils import Database

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import Passage
from memgpt_lite.storage.core.errors import NO_PASSAGE
from memgpt_lite.storage.core.rows import PASSAGE_COLUMNS, passage_from_row, text_hash
from memgpt_lite.storage.core.sql import Filters, Search
from memgpt_lite.storage.core.words import RANK_BUDGET, fts_words
from memgpt_lite.storage.protocol import Ranking
from memgpt_lite.storage.sqlite.dialect import stored_time
from memgpt_lite.storage.sqlite.fulltext import BudgetedSearch, Candidates, Part, best_rows
from memgpt_lite.storage.sqlite.period_depth import PeriodDepth

_INSERT = (
    "INSERT OR IGNORE INTO passages (id, agent_id, text, tags, created_at, text_hash, context,"
    " superseded_by, superseded_at) VALUES (?,?,?,?,?,?,?,?,?)"
)

# Among the best `depth` rows of one part of a ranking (seq, score:
# `source`), with the count of all its rows: the best `limit` (part 0), and
# the best `period_limit` of those stored within a period (part 1, `where`
# on `p`). Merged over the ranking's parts, each is the ranking's own: a row
# among its best has one of its parts' best scores, and ranks there too.
# Only the best `depth` are sorted and read (their stored time): reading it
# for every match cost 40% more than the ranking at 1M passages.
_TOP_AND_PERIOD = """
WITH b AS MATERIALIZED ({source}), top AS MATERIALIZED (
    SELECT seq, score, (SELECT count(*) FROM b) AS total FROM b
    ORDER BY score DESC, seq DESC LIMIT ?
)
SELECT {columns}, t.score, t.total, t.part FROM (
    SELECT * FROM (
        SELECT seq, score, total, 0 AS part FROM top ORDER BY score DESC, seq DESC LIMIT ?
    )
    UNION ALL
    SELECT * FROM (
        SELECT top.seq, top.score, top.total, 1 FROM top CROSS JOIN passages p
        ON p.seq = top.seq WHERE 1{where} ORDER BY top.score DESC, top.seq DESC LIMIT ?
    )
) t CROSS JOIN passages p ON p.seq = t.seq
ORDER BY t.part, t.score DESC, t.seq DESC
"""


class ArchivalStore(BudgetedSearch, PeriodDepth):
    """Mixed into `Store`, which provides `db`."""

    db: Database
    rank_budget = RANK_BUDGET

    def _insert_passages(self, passages: Sequence[Passage]) -> list[bool]:
        self._lock_agents(p.agent_id for p in passages)
        stored = []
        for passage in passages:
            superseded_at = passage.superseded_at
            cursor = self.db.conn.execute(
                _INSERT,
                [
                    passage.id,
                    passage.agent_id,
                    passage.text,
                    json.dumps(passage.tags),
                    stored_time(passage.created_at),
                    text_hash(passage.text),
                    passage.context,
                    passage.superseded_by,
                    stored_time(superseded_at) if superseded_at else None,
                ],
            )
            stored.append(cursor.rowcount == 1)
            if cursor.rowcount == 1:
                passage.seq = cursor.lastrowid
        return stored

    def _delete_passage_row(self, agent_id: str, passage_id: str) -> str | None:
        """Triggers keep the counters, the full-text index and the vectors."""
        row = self.db.execute(
            "SELECT superseded_by FROM passages WHERE agent_id = ? AND id = ?",
            [agent_id, passage_id],
        ).fetchone()
        if row is None:
            raise NotFoundError(NO_PASSAGE.format(passage_id))
        self.db.conn.execute(
            "DELETE FROM passages WHERE agent_id = ? AND id = ?", [agent_id, passage_id]
        )
        return row[0]

    def _rank_passages(self, search: Search) -> Ranking[Passage]:
        """By FTS5's BM25 over the words of `query` (see `fts_words`). When
        they match more than `budget` passages, only those holding its rarer
        words are scored (see RANK_BUDGET), and the count covers those. With
        `drop_over_budget`, a word found in more than `budget` passages is
        left out of the query."""
        words = fts_words(search.query)
        if search.drop_over_budget:
            words = self.within_budget("passages", words, search.budget)
        if not words:
            return Ranking([], 0, proven=True)
        candidates = self._scored(search.agent_id, words, search.budget, search.filters)
        rows, total = self.top_rows("passages", PASSAGE_COLUMNS, candidates.parts, search.limit)
        ranked = [(passage_from_row(r), r[-1]) for r in rows]
        proven = candidates.left_out.proves([s for _, s in ranked], search.exact)
        return Ranking(ranked, total, proven)

    def _rank_in_period(
        self, search: Search, period: tuple[date | None, date | None], period_limit: int
    ) -> tuple[Ranking[Passage], list[tuple[Passage, float]] | None]:
        """The ranking, and the best `period_limit` of the passages it ranks
        that were stored within `period`, if found among its best (how many:
        period_depth.py). One evaluation of the full-text query serves both:
        ranking again within the period cost as much as the first ranking
        (the candidates, chosen by the words alone, are the same)."""
        agent_id, limit = search.agent_id, search.limit
        words = fts_words(search.query)
        if not words:
            return Ranking([], 0, proven=True), []
        candidates = self._scored(agent_id, words, RANK_BUDGET, search.filters)
        where, params = self.passage_filters(None, *period)
        depth = self.period_depth(agent_id, period, limit, period_limit)
        results = self.run_parts(
            [
                Part(
                    _TOP_AND_PERIOD.format(source=sql, columns=PASSAGE_COLUMNS, where=where),
                    [*args, depth, limit, *params, period_limit],
                )
                for sql, args in candidates.parts
            ]
        )
        top = best_rows([[r for r in rows if r[-1] == 0] for rows in results], -3, limit)
        within = best_rows([[r for r in rows if r[-1] == 1] for rows in results], -3, period_limit)
        ranked = [(passage_from_row(r), r[-3]) for r in top]
        total = results[0][0][-2] if results[0] else 0  # the first part holds every row
        proven = candidates.left_out.proves([s for _, s in ranked], limit)
        # Those left out of a part's best `depth` score below each of them
        # there: with fewer than `period_limit` found in a part, one of them
        # may be next.
        known = all(
            sum(r[-1] for r in rows) >= period_limit or not rows or rows[0][-2] <= depth
            for rows in results
        )
        within_period = [(passage_from_row(r), r[-3]) for r in within]
        return Ranking(ranked, total, proven), within_period if known else None

    def _scored(
        self, agent_id: str, words: Sequence[str], budget: int, filters: Filters
    ) -> Candidates:
        """The budgeted candidates of `words`, each part keeping the rows
        that are the agent's and pass `filters` (`passage_filters`)."""
        candidates = self.candidates("passages", words, budget)
        where, params = filters
        # The covering index (agent_id, seq) tells whose a passage is without
        # reading it, unless a tag or date filter needs the row. Even so that
        # costs about 2 µs a match, so it is skipped when no other agent has
        # a passage (the full-text index then holds only this agent's).
        if not where and self._sole_archivist(agent_id):
            return candidates
        owner = "passages p INDEXED BY passages_agent_seq" if not where else "passages p"

        def agents_own(part: Part) -> Part:
            return Part(
                f"SELECT b.seq, b.score FROM ({part.sql}) b CROSS JOIN {owner} "
                f"ON p.seq = b.seq WHERE p.agent_id = ?{where}",
                [*part.args, agent_id, *params],
            )

        return candidates.filtered(agents_own)

    def _sole_archivist(self, agent_id: str) -> bool:
        """Whether no other agent has a passage (counts kept by triggers)."""
        return not self.db.execute(
            "SELECT EXISTS (SELECT 1 FROM agents WHERE id != ? AND passage_count > 0)",
            [agent_id],
        ).fetchone()[0]
