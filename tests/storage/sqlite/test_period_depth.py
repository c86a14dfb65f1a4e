"""How deep SQLite's ranking looks for the passages of a period a query names:
deep enough to expect PERIOD_PAGES times those wanted, by the share of the
agent's passages stored within it (storage/sqlite/period_depth.py)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from support.contract.base import new_agent

from memgpt_lite import Store
from memgpt_lite.models import Passage
from memgpt_lite.storage.sqlite.period_depth import PERIOD_PAGES

START = datetime(2025, 1, 1, 12, tzinfo=UTC)


def test_the_depth_follows_the_share_of_passages_in_the_period(tmp_path):
    store = Store(tmp_path / "a.db")
    state = new_agent(store)
    days = [START + timedelta(days=i) for i in range(400)]  # one passage a day
    store.add_passages(
        [Passage(agent_id=state.id, text=f"note {i}", created_at=d) for i, d in enumerate(days)]
    )

    def depth(first: date | None, last: date | None) -> int:
        return store.period_depth(state.id, (first, last), 50, 5)

    half = depth(date(2025, 1, 1), date(2025, 7, 19))  # 200 of 400 days
    month = depth(date(2025, 3, 1), date(2025, 3, 31))
    week = depth(date(2025, 3, 1), date(2025, 3, 7))
    assert half == 50  # 3 pages of 5 are expected among the best 50 already
    assert 3 * PERIOD_PAGES * 5 < month < 400 < week <= 1000
    # A period holding none of its passages: not looked for, the limit only.
    assert depth(date(2020, 1, 1), date(2020, 12, 31)) == 50
    assert depth(None, date(2024, 12, 31)) == 50
    # The sample is taken again once the agent's passages change.
    later = [START + timedelta(days=400 + i) for i in range(400)]
    store.add_passages(
        [Passage(agent_id=state.id, text=f"later {i}", created_at=d) for i, d in enumerate(later)]
    )
    assert depth(date(2025, 3, 1), date(2025, 3, 31)) > month
    store.close()
