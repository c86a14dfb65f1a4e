"""What a question asks about is talked of in a session: each passage gains
part of the best score of another passage of its session (passages written
close together in time), so the turns around the one that matches best
come before an equal match from another day (memory/retrieval/ranking.py
`sessions_smoothed`, applied by memory/retrieval/search.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memgpt_lite import Agent, Passage
from memgpt_lite.memory.retrieval.ranking import (
    SESSION_GAP_SECONDS,
    SESSION_SHARE,
    Turn,
    reweighed,
    sessions_smoothed,
)

HOUR = 3600.0


def test_a_passage_gains_a_share_of_the_best_other_in_its_session():
    turns = {"best": Turn(1, 0.0), "same day": Turn(2, 60.0), "another day": Turn(9, 48 * HOUR)}
    scored = [("best", 1.0), ("another day", 0.55), ("same day", 0.5)]
    assert sessions_smoothed(scored, turns.__getitem__) == [
        ("best", pytest.approx(1.0 + SESSION_SHARE * 0.5)),
        ("same day", pytest.approx(0.5 + SESSION_SHARE * 1.0)),
        ("another day", 0.55),  # alone in its session
    ]


def test_a_session_is_a_run_of_passages_each_close_to_the_one_before():
    gap = SESSION_GAP_SECONDS
    # 0, 0.9 gap, 1.8 gap: one session (each near the one before), then a gap.
    times = {"a": 0.0, "b": 0.9 * gap, "c": 1.8 * gap, "d": 3.0 * gap}
    scored = [("a", 1.0), ("d", 0.8), ("c", 0.1), ("b", 0.1)]
    smoothed = dict(sessions_smoothed(scored, lambda item: Turn(0, times[item])))
    assert smoothed["c"] == pytest.approx(0.1 + SESSION_SHARE * 1.0)
    assert smoothed["d"] == 0.8
    assert sessions_smoothed([], lambda item: Turn(0, 0.0)) == []


# Two days of a conversation: on the first the tournament is talked of at
# length; on the second it is mentioned once, about as well matched as the
# first day's second-best passage.
DAY = datetime(2024, 5, 3, 18, tzinfo=UTC)
FIRST_DAY = [
    "Nina: the chess tournament final in Berlin was tense, the chess clock ran low.",
    "Nina: my coach says the tournament went well for me.",
]
SECOND_DAY = "Tom: the tournament went on the news here, my cousin says."
FILLER = [f"Tom: day {n} of the trip, the hills were green and quiet." for n in range(8)]


def test_search_prefers_the_session_where_the_topic_is_talked_of(db_location):
    agent = Agent.create("sam", "gpt-4o-mini", db=db_location)
    passages = [
        Passage(agent_id=agent.state.id, text=text, created_at=DAY - timedelta(days=3))
        for text in FILLER
    ]
    passages += [Passage(agent_id=agent.state.id, text=t, created_at=DAY) for t in FIRST_DAY]
    passages.append(
        Passage(agent_id=agent.state.id, text=SECOND_DAY, created_at=DAY + timedelta(days=1))
    )
    agent.archival.insert_many(passages)
    query = "How was the chess tournament final?"
    by_words = agent.store.rank_passages(agent.state.id, query, 5).scored
    weighed = [p.text for p, _ in reweighed(query, by_words, lambda p: p.text)]
    assert weighed.index(SECOND_DAY) < weighed.index(FIRST_DAY[1])  # alone, by its words
    found, _ = agent.archival.search(query, limit=2)
    assert [p.text for p in found] == FIRST_DAY
