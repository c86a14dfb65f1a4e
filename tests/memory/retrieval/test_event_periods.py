"""A query bounded by an event rather than a date ("before she moved to
Berlin", "after the accident"): search finds the event in memory and ranks
first what happened before or after it (memory/retrieval/dates.py `event_bound`,
`bounded_by`; memory/retrieval/search.py `named_period`)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from memgpt_lite import Agent, Passage
from memgpt_lite.memory.retrieval.dates import EventBound, Period, bounded_by, event_bound
from memgpt_lite.memory.retrieval.search import search_messages
from memgpt_lite.models import Message


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (
            "Where did Anna live before she moved to Berlin?",
            EventBound(False, "she moved to Berlin"),
        ),
        ("How did Melanie feel after the accident?", EventBound(True, "the accident")),
        ("what have we done since we met", EventBound(True, "we met")),
        ("What did Jean go through before meeting Maria?", EventBound(False, "meeting Maria")),
        ("have I told you this before?", None),
        ("and after that, what?", None),
        ("before this one", None),
        ("where did I live", None),
    ],
)
def test_the_event_a_query_is_bounded_by(query, expected):
    assert event_bound(query) == expected


def test_the_event_is_dated_by_its_text_or_else_its_time():
    stored = datetime(2023, 6, 2, 9, tzinfo=UTC)
    before, after = EventBound(False, "x"), EventBound(True, "x")
    annotated = "Anna moved to Berlin last week [2023-05-22..2023-05-28]."
    assert bounded_by(before, annotated, stored) == Period(date.min, date(2023, 5, 28))
    assert bounded_by(after, annotated, stored) == Period(date(2023, 5, 22), date.max)
    assert bounded_by(before, "Anna moved to Berlin.", stored) == Period(date.min, date(2023, 6, 2))


def dated(agent: Agent, text: str, year: int, month: int) -> Passage:
    created_at = datetime(year, month, 1, tzinfo=UTC)
    return Passage(agent_id=agent.state.id, text=text, created_at=created_at)


def ahead(found: list, first: str, second: str) -> bool:
    texts = [getattr(item, "text", None) or item.content for item in found]
    return texts.index(first) < texts.index(second)


def test_search_ranks_first_what_came_before_or_after_the_event(tmp_path):
    """The two flats match the question's words alike: by words alone the
    newer one comes first; the event's time decides. It is a boost: the
    move itself, the best match of its own words, may come first."""
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db")
    leeds, bonn = "Anna lives in a flat in Leeds.", "Anna lives in a flat in Bonn."
    agent.archival.insert_many(
        [
            dated(agent, leeds, 2021, 3),
            dated(agent, "Anna moved to Berlin for her new job.", 2023, 4),
            dated(agent, bonn, 2023, 9),
            *(dated(agent, f"Filler note {i} about the garden.", 2022, 1) for i in range(8)),
        ]
    )

    def search(query: str) -> list[Passage]:
        return agent.archival.search(query, limit=5)[0]

    assert ahead(search("Where did Anna live before she moved to Berlin?"), leeds, bonn)
    assert ahead(search("Where did Anna live after she moved to Berlin?"), bonn, leeds)
    assert ahead(search("Where did Anna live before the wedding?"), bonn, leeds)  # not found


def test_conversation_search_ranks_first_what_was_said_after_the_event(tmp_path):
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db")
    great, nervous = "I feel great about driving.", "I feel nervous about driving."
    said = [(nervous, 6), ("I had a car accident on the bridge.", 5), (great, 2)]
    agent.store.add_messages(
        [
            Message(
                agent_id=agent.state.id,
                role="user",
                content=text,
                created_at=datetime(2023, month, 3, tzinfo=UTC),
            )
            for text, month in said
        ]
    )

    def search(query: str) -> list[Message]:
        return search_messages(agent.runner, query, 5)[0]

    assert ahead(search("how do I feel about driving after the accident?"), nervous, great)
    assert ahead(search("how do I feel about driving before the accident?"), great, nervous)
    assert ahead(search("how do I feel about driving?"), great, nervous)  # words alone
