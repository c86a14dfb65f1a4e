"""How deep `rank_passages_in_period` looks for a period's passages (a part
of archival.py).

The best few passages stored within the period a query names are looked
for among the ranking's best `depth`: reading each one's time costs, so the
depth is what makes about PERIOD_PAGES times the passages needed expected
there, at the share of the agent's passages stored within the period. That
share is estimated from SAMPLE passages spread evenly over the agent's
seqs (one query, kept until the agent's passages change). A period whose
share is too small to expect them within PERIOD_DEPTH_MAX is not looked for
this way: the ranking within the period will be needed anyway.

At 1M passages spread over a year, a fixed depth of 500 cost 3.4 ms (mean)
more than a plain ranking, 200 cost 0.8 ms, and both found a month's
passages for all 200 queries. With the sample, a month is looked for 130
deep (1.5 ms more; 1 of 200 queries then ranked again within it), a week
390, a year no deeper than the page, a day not at all.
"""

from __future__ import annotations

import math
from datetime import date

from sqlite_utils import Database

from memgpt_lite.storage.sqlite.dialect import SQLITE

SAMPLE = 64
PERIOD_PAGES = 3
PERIOD_DEPTH_MAX = 1_000
# SAMPLE evenly spread probes of the agent's passages, by seq: each probe the
# first passage at or after its point (the index on (agent_id, seq) finds
# it). min() and max() apart: together they would read the whole index.
_SAMPLE_TIMES = f"""
WITH RECURSIVE span(low, high) AS (
    SELECT (SELECT min(seq) FROM passages WHERE agent_id = ?1),
        (SELECT max(seq) FROM passages WHERE agent_id = ?1)
), probe(k) AS (
    SELECT 0 UNION ALL SELECT k + 1 FROM probe WHERE k < {SAMPLE - 1}
)
SELECT (
    SELECT p.created_at FROM passages p INDEXED BY passages_agent_seq
    WHERE p.agent_id = ?1 AND p.seq >= span.low + (span.high - span.low) * probe.k / {SAMPLE - 1}
    ORDER BY p.seq LIMIT 1
) FROM span, probe WHERE span.low IS NOT NULL
"""


class PeriodDepth:
    """Mixed into `Store`, which provides `db`."""

    db: Database

    def period_depth(
        self, agent_id: str, period: tuple[date | None, date | None], limit: int, wanted: int
    ) -> int:
        """How many of a ranking's best (at least `limit`) to look among for
        the `wanted` best of `period` (see above)."""
        low, high = SQLITE.day_bounds(*period)
        times = self._sample_times(agent_id)
        inside = sum((low is None or t >= low) and (high is None or t < high) for t in times)
        share = (inside + 0.5) / (len(times) + 1)
        needed = math.ceil(PERIOD_PAGES * wanted / share)
        return max(limit, needed) if needed <= PERIOD_DEPTH_MAX else limit

    def _sample_times(self, agent_id: str) -> list[str]:
        """The stored times of SAMPLE of the agent's passages, kept while its
        passages are the same (their count and newest seq)."""
        state = self.db.execute(
            "SELECT passage_count, (SELECT max(seq) FROM passages INDEXED BY passages_agent_seq"
            " WHERE agent_id = ?1) FROM agents WHERE id = ?1",
            [agent_id],
        ).fetchone()
        kept = self.__dict__.setdefault("_period_samples", {})
        if agent_id not in kept or kept[agent_id][0] != state:
            rows = self.db.execute(_SAMPLE_TIMES, [agent_id]).fetchall()
            kept[agent_id] = (state, [row[0] for row in rows if row[0] is not None])
        return kept[agent_id][1]
