"""A ranking with common words runs its two full-text queries at the same
time, on the store's connection and the side reader's (side_reader.py): the
same results as one after the other, and never inside a transaction."""

from __future__ import annotations

import os
import sqlite3
import time
from datetime import UTC, date, datetime, timedelta

import pytest
from support.contract.base import new_agent
from test_store import QUERIES, budgeted_ranking_is_true, common_word_texts

from memgpt_lite import Store
from memgpt_lite.models import Message, Passage
from memgpt_lite.storage.sqlite.side_reader import SideReader

START = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def store(tmp_path):
    store = Store(tmp_path / "a.db")
    yield store
    store.close()


def dated_passages(store: Store, agent_id: str) -> None:
    """600 passages with common words, one a day from START."""
    store.add_passages(
        [
            Passage(agent_id=agent_id, text=text, created_at=START + timedelta(days=i))
            for i, text in enumerate(common_word_texts(7, 0.6))
        ]
    )


def test_the_two_parts_run_beside_each_other_with_the_results_of_one_after_the_other(store):
    state = new_agent(store)
    dated_passages(store, state.id)
    for query in QUERIES:
        reads = store.side_reader.reads
        beside = store.rank_passages(state.id, query, 10, exact=3, budget=60)
        assert store.side_reader.reads == reads + 1  # its second part ran there
        with store.snapshot():  # one connection: the snapshot's view
            after = store.rank_passages(state.id, query, 10, exact=3, budget=60)
        assert store.side_reader.reads == reads + 1
        assert beside == after
        everything = store.rank_passages(state.id, query, 1000, budget=10**9)
        budgeted_ranking_is_true(everything, beside, exact=3)


def test_the_period_part_of_a_two_part_ranking_is_what_ranking_within_it_gives(store, monkeypatch):
    """Each part brings its best rows and the period's among them; merged,
    they are the best of all the rows (`rank_passages` with the same budget,
    within the period)."""
    monkeypatch.setattr("memgpt_lite.storage.sqlite.archival.RANK_BUDGET", 60)
    # Not deeper than 40: a narrow period's passages are not looked for.
    monkeypatch.setattr("memgpt_lite.storage.sqlite.period_depth.PERIOD_DEPTH_MAX", 40)
    state = new_agent(store)
    dated_passages(store, state.id)
    known = 0
    for query in QUERIES:
        for first, last in (
            (date(2026, 2, 1), date(2026, 4, 30)),
            (date(2026, 6, 1), None),
            (date(2026, 1, 11), date(2026, 1, 20)),  # few among any part's best: unknown
        ):
            reads = store.side_reader.reads
            ranking, within = store.rank_passages_in_period(
                state.id, query, 10, period=(first, last), period_limit=3
            )
            assert store.side_reader.reads == reads + 1
            assert ranking == store.rank_passages(state.id, query, 10, budget=60)
            alone = store.rank_passages(state.id, query, 3, start=first, end=last, budget=60)
            assert within is None or within == alone.scored
            known += within is not None
    assert 4 <= known < 12


def test_inside_a_transaction_the_ranking_sees_what_it_wrote(store):
    """The side reader would not see passages not yet committed."""
    state = new_agent(store)
    dated_passages(store, state.id)
    reads = store.side_reader.reads
    with store.transaction():
        new = Passage(agent_id=state.id, text="zq1 zq2 apple river stone zq1 zq2")
        store.add_passages([new])
        ranking = store.rank_passages(state.id, "zq1 zq2 apple river", 1, budget=60)
        assert ranking.scored[0][0].id == new.id
    assert store.side_reader.reads == reads


def test_message_ranking_runs_its_parts_beside_each_other(store):
    state = new_agent(store)
    store.add_messages(
        [
            Message(agent_id=state.id, role="user", content=text)
            for text in common_word_texts(3, 0.6)
        ]
    )
    reads = store.side_reader.reads
    beside = store.rank_messages(state.id, "zq4 apple river", 5, budget=60)
    assert store.side_reader.reads == reads + 1
    with store.snapshot():
        assert store.rank_messages(state.id, "zq4 apple river", 5, budget=60) == beside


def test_an_interrupted_side_read_fails_and_the_reader_serves_the_next(tmp_path):
    reader = SideReader(lambda: sqlite3.connect(tmp_path / "a.db", check_same_thread=False))
    endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n"
    running = reader.submit(endless, [])
    deadline = time.monotonic() + 10
    while not running.done() and time.monotonic() < deadline:
        reader.interrupt()  # nothing to stop until the query has begun
        time.sleep(0.01)
    with pytest.raises(sqlite3.OperationalError, match="interrupted"):
        running.result(timeout=10)
    assert reader.submit("SELECT ?", [7]).result(timeout=10) == [(7,)]
    reader.close()
    assert reader.submit("SELECT 1", []).result(timeout=10) == [(1,)]  # opened again
    reader.close()


def test_a_forked_child_reads_with_its_own_thread_and_connection(tmp_path):
    """The parent's worker thread does not exist in a forked child: the child
    would wait for it forever."""
    reader = SideReader(lambda: sqlite3.connect(tmp_path / "a.db", check_same_thread=False))
    assert reader.submit("SELECT 1", []).result(timeout=10) == [(1,)]
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if its read completes
        ok = False
        try:
            ok = reader.submit("SELECT 2", []).result(timeout=10) == [(2,)]
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    reader.close()
