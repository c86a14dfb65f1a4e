"""Time-aware memory: dates found and resolved in text (memory/retrieval/dates.py),
written beside relative ones when archival memory stores them, and read from
search queries to rank the passages and messages of the period they name."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from memgpt_lite import Agent, Passage
from memgpt_lite.memory.retrieval.dates import (
    ABSOLUTE_RULES,
    Period,
    annotate,
    dated_within,
    find_dates,
)
from memgpt_lite.memory.retrieval.questions import query_period
from memgpt_lite.memory.retrieval.search import search_messages
from memgpt_lite.models import Message
from memgpt_lite.testing import call, reply, say

MONDAY = date(2023, 5, 8)


def spans(text: str, at: date = MONDAY) -> list[tuple[str, Period, bool]]:
    return [(text[m.start : m.end], m.period, m.relative) for m in find_dates(text, at)]


def days(first: str, last: str | None = None) -> Period:
    return Period(date.fromisoformat(first), date.fromisoformat(last or first))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I moved yesterday.", "I moved yesterday [2023-05-07]."),
        ("see you tomorrow", "see you tomorrow [2023-05-09]"),
        ("done today", "done today [2023-05-08]"),
        ("last night was fun", "last night [2023-05-07] was fun"),
        ("the day before yesterday", "the day before yesterday [2023-05-06]"),
        ("two days ago", "two days ago [2023-05-06]"),
        ("3 weeks ago", "3 weeks ago [2023-04-17..2023-04-23]"),
        ("a couple of months ago", "a couple of months ago [2023-03]"),
        ("five years ago", "five years ago [2018]"),
        ("last week", "last week [2023-05-01..2023-05-07]"),
        ("this week", "this week [2023-05-08..2023-05-14]"),
        ("we go next month", "we go next month [2023-06]"),
        ("last year", "last year [2022]"),
        ("last weekend", "last weekend [2023-05-06..2023-05-07]"),
        ("this weekend", "this weekend [2023-05-13..2023-05-14]"),
        ("last summer", "last summer [2022-06..2022-08]"),
        ("next winter", "next winter [2023-12..2024-02]"),
        ("in the fall", "in the fall [2023-09..2023-11]"),
        ("last Friday", "last Friday [2023-05-05]"),
        ("Last Fri I took the kids", "Last Fri [2023-05-05] I took the kids"),
        ("next Tues.", "next Tues [2023-05-09]."),
        ("two weekends ago", "two weekends ago [2023-04-29..2023-04-30]"),
        ("next Friday", "next Friday [2023-05-12]"),
        ("this Friday", "this Friday [2023-05-12]"),
        ("I went hiking on Friday.", "I went hiking on Friday [2023-05-05]."),
        ("I will go hiking on Friday.", "I will go hiking on Friday [2023-05-12]."),
        ("last May", "last May [2022-05]"),
        ("next May", "next May [2024-05]"),
        ("the week before", "the week before [2023-05-01..2023-05-07]"),
    ],
)
def test_relative_dates_get_their_absolute_date_beside_them(text, expected):
    assert annotate(text, MONDAY) == expected
    assert annotate(expected, MONDAY) == expected  # idempotent
    assert annotate(expected, MONDAY + timedelta(days=40)) == expected  # even read later


@pytest.mark.parametrize(
    "text",
    [
        "May 8, 2023",
        "8 May 2023",
        "May 2023",
        "in 2022",
        "summer 2022",
        "the summer of 2021",
        "2023-01-02",
        "May I ask something?",  # not a month
        "Tulips bloom in April",  # the year would be a guess
        "Her birthday is on June 3",
        "the 3rd of June",
        "I fall asleep early",  # not a season
        "the past week",  # the last seven days: not a calendar week
        "an hour ago",
        "I sat in the sun on a Wed",  # short weekdays only after last/next/this
        "no dates here at all",
    ],
)
def test_absolute_dates_and_non_dates_are_left_alone(text):
    assert annotate(text, MONDAY) == text


def test_absolute_dates_are_found_with_their_periods():
    assert spans("We met on May 8, 2023 and in 2022.") == [
        ("May 8, 2023", days("2023-05-08"), False),
        ("2022", days("2022-01-01", "2022-12-31"), False),
    ]
    assert spans("8 May 2023") == [("8 May 2023", days("2023-05-08"), False)]
    assert spans("winter 2022") == [("winter 2022", days("2022-12-01", "2023-02-28"), False)]
    assert spans("see [2022-06..2022-08]") == [
        ("[2022-06..2022-08]", days("2022-06-01", "2022-08-31"), False)
    ]


def test_a_reference_day_at_the_turn_of_a_year():
    new_year = date(2024, 1, 1)  # a Monday
    assert annotate("yesterday", new_year) == "yesterday [2023-12-31]"
    assert annotate("last month", new_year) == "last month [2023-12]"
    assert annotate("last year", new_year) == "last year [2023]"
    assert annotate("last week", new_year) == "last week [2023-12-25..2023-12-31]"
    assert annotate("last winter", new_year) == "last winter [2022-12..2023-02]"
    assert annotate("this winter", new_year) == "this winter [2023-12..2024-02]"
    assert annotate("next month", date(2023, 12, 31)) == "next month [2024-01]"
    assert annotate("tomorrow", date(2023, 12, 31)) == "tomorrow [2024-01-01]"


def test_a_reference_day_at_the_end_of_a_month():
    assert annotate("next month", date(2023, 1, 31)) == "next month [2023-02]"
    assert annotate("a month ago", date(2023, 3, 31)) == "a month ago [2023-02]"
    assert annotate("tomorrow", date(2024, 2, 28)) == "tomorrow [2024-02-29]"
    assert annotate("last summer", date(2023, 9, 1)) == "last summer [2023-06..2023-08]"
    assert annotate("last summer", date(2023, 8, 31)) == "last summer [2022-06..2022-08]"


def test_a_datetime_counts_by_its_day():
    at = datetime(2023, 5, 8, 23, 59, tzinfo=UTC)
    assert annotate("yesterday", at) == "yesterday [2023-05-07]"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("what did I do in May 2023?", days("2023-05-01", "2023-05-31")),
        ("trips in 2022", days("2022-01-01", "2022-12-31")),
        ("what happened last week", days("2023-05-01", "2023-05-07")),
        ("hikes last summer", days("2022-06-01", "2022-08-31")),
        ("summer 2022", days("2022-06-01", "2022-08-31")),
        ("on May 3, 2023", days("2023-05-03")),
        ("what did I do in May", days("2023-05-01", "2023-05-31")),
        ("the party in June", days("2022-06-01", "2022-06-30")),  # the latest June
        ("on June 3", days("2022-06-03")),
        ("on the 2nd of May", days("2023-05-02")),
        ("between March 2022 and June 2022", days("2022-03-01", "2022-06-30")),
        ("jobs before 2022", Period(date.min, date(2021, 12, 31))),
        ("what changed after May 2023", Period(date(2023, 6, 1), date.max)),
        ("since March 2023", Period(date(2023, 3, 1), date.max)),
        ("until June 2021", Period(date.min, date(2021, 6, 30))),
    ],
)
def test_query_periods(query, expected):
    assert query_period(query, MONDAY) == expected


@pytest.mark.parametrize(
    "query", ["before she moved", "when did I go camping?", "what is my name", "May I ask"]
)
def test_a_query_naming_no_date_has_no_period(query):
    assert query_period(query, MONDAY) is None


def test_an_item_belongs_to_a_period_by_its_time_or_its_text():
    may = days("2023-05-01", "2023-05-31")
    june = datetime(2023, 6, 2, tzinfo=UTC)
    assert dated_within("anything", datetime(2023, 5, 31, 23, tzinfo=UTC), may)
    assert dated_within("moved yesterday [2023-05-07]", june, may)
    assert dated_within("the lease from 2023-05-15", june, may)
    assert not dated_within("moved yesterday", june, may)  # unresolved: unread
    assert not dated_within("all of [2023]", june, may)  # wider than the period asked


def test_the_agent_stores_resolved_dates_with_an_archival_insert(fake_llm, tmp_path):
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db")
    fake_llm.enqueue(
        reply(
            tool_calls=[
                call(
                    "archival_memory_insert",
                    content="Alice moved to Lyon yesterday.",
                    request_heartbeat=True,
                )
            ]
        ),
        say("Noted."),
    )
    agent.step("I moved to Lyon yesterday")
    [passage] = agent.archival.list()[0]
    yesterday = (passage.created_at - timedelta(days=1)).date().isoformat()
    assert passage.text == f"Alice moved to Lyon yesterday [{yesterday}]."
    # The message is the record of what was said: as it was.
    said = [m.content for m in agent.store.messages_from(agent.state.id, 0) if m.role == "user"]
    assert any(text and text.endswith("I moved to Lyon yesterday") for text in said)


def test_an_imported_passage_is_resolved_at_its_own_time(tmp_path):
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db")
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    agent.archival.insert("I went to a support group yesterday.", created_at=when)
    original = Passage(agent_id=agent.state.id, text="We adopted a cat last week.", created_at=when)
    report = agent.archival.insert_many([original])
    texts = {p.text for p in agent.archival.list()[0]}
    assert texts == {
        "I went to a support group yesterday [2023-05-07].",
        "We adopted a cat last week [2023-05-01..2023-05-07].",
    }
    assert report.stored[0].id == original.id
    assert original.text == "We adopted a cat last week."  # the caller's object is untouched
    assert all(p.created_at == when for p in agent.archival.list()[0])


def add_fillers(agent: Agent, when: datetime) -> None:
    """Passages the query does not match: without them, every word of the
    query is in most passages and BM25 gives it no weight."""
    for i in range(8):
        agent.archival.insert(f"Filler note number {i} about gardening.", created_at=when)


def test_a_date_in_the_query_ranks_the_passage_of_that_period_first(tmp_path):
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db")
    add_fillers(agent, datetime(2023, 1, 1, tzinfo=UTC))
    # As many words each, the same ones matching, stored in different months
    # (the same text would be a duplicate).
    for month, word in ((3, "alpha"), (5, "gamma"), (7, "delta")):
        agent.archival.insert(
            f"Went rowing on the lake with Sam, {word}.",
            created_at=datetime(2023, month, 10, tzinfo=UTC),
        )
    found, _ = agent.archival.search("rowing in May 2023", limit=3)
    assert found[0].created_at.month == 5
    found, _ = agent.archival.search("rowing in July 2023", limit=3)
    assert found[0].created_at.month == 7


@pytest.mark.parametrize("deepest", [10_000, 0])
def test_a_passage_of_the_period_is_found_below_many_better_matches(tmp_path, monkeypatch, deepest):
    """The period's passage ranks below the depth search looks at among all
    matches: a ranking within the period must bring it. SQLite finds it with
    the first ranking when it may look deep enough for the period's share of
    passages (storage/sqlite/period_depth.py; here 81 match), and otherwise
    ranks again within the period."""
    monkeypatch.setattr("memgpt_lite.storage.sqlite.period_depth.PERIOD_DEPTH_MAX", deepest)
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db")
    add_fillers(agent, datetime(2023, 1, 1, tzinfo=UTC))
    march = datetime(2023, 3, 10, tzinfo=UTC)
    agent.archival.insert_many(
        [
            Passage(agent_id=agent.state.id, text=f"Rowing on the lake, log {i}.", created_at=march)
            for i in range(80)
        ]
    )
    may_text = "Rowing on the lake with friends, a long and sunny day."  # longer: lower BM25
    agent.archival.insert(may_text, created_at=datetime(2023, 5, 9, tzinfo=UTC))
    found, _ = agent.archival.search("rowing", limit=50)
    assert may_text not in [p.text for p in found]  # no date named: words alone
    found, _ = agent.archival.search("rowing in May 2023", limit=5)
    assert found[0].text == may_text


def test_a_passage_dated_by_its_text_is_found_for_its_period(tmp_path):
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db")
    stored = datetime(2023, 6, 2, tzinfo=UTC)
    add_fillers(agent, stored)
    agent.archival.insert("Rowing race on 2022-08-14 with Sam.", created_at=stored)
    # Better by its words alone (the year too, but no date in August).
    agent.archival.insert(
        "Rowing race 2022 with Sam: the rowing race of the club.", created_at=stored
    )
    found, _ = agent.archival.search("rowing race in August 2022", limit=2)
    assert "2022-08-14" in found[0].text
    # start_date/end_date stay hard filters on the passage's time.
    found, total = agent.archival.search(
        "rowing race in August 2022", start=date(2022, 8, 1), end=date(2022, 8, 31)
    )
    assert (found, total) == ([], 0)


def test_a_date_in_a_conversation_search_ranks_that_time_first(tmp_path):
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db")
    messages = [
        Message(
            agent_id=agent.state.id,
            role="user",
            content="I baked bread.",
            created_at=datetime(2023, month, 3, tzinfo=UTC),
        )
        for month in (2, 4, 9)
    ]
    agent.store.add_messages(messages)
    found, _ = search_messages(agent.runner, "bread in April 2023", 3)
    assert found[0].created_at.month == 4


@pytest.mark.parametrize(
    "text",
    [
        "Went rowing on the lake.",
        "Rowing on 2023-05-09 with Sam.",
        "Rowing yesterday [2023-05-08] with Sam.",
        "Rowing on May 8, 2023.",
        "Rowing on the 8th of May 2023.",
        "Rowing in May 2023, and in June.",
        "Rowing in the summer of 2023.",
        "Rowing in 2023.",
        "Rowing in May, code kx20235, room 1999a.",
        "Rowing last summer and in May.",
        "Rowing [photo] on the lake.",
    ],
)
def test_search_reads_the_dates_of_a_passage_as_a_full_parse_does(text):
    """`dated_within` (which search uses) parses a text only if it may hold
    an absolute date (a year's digits or a bracket), and keeps what it read:
    the answer is that of parsing every text with every absolute rule."""
    from memgpt_lite.memory.retrieval.search import _passage_within

    def parsed_within(text: str, created: datetime, period: Period) -> bool:
        return period.contains(created.date()) or any(
            not m.relative and period.start <= m.period.start and m.period.end <= period.end
            for m in find_dates(text, created, ABSOLUTE_RULES)
        )

    periods = [Period(date(2023, 5, 1), date(2023, 5, 31)), Period(date(2023, 1, 1), date.max)]
    for period in periods:
        for created in (datetime(2023, 5, 2, tzinfo=UTC), datetime(2024, 2, 2, tzinfo=UTC)):
            stored = Passage(agent_id="a", text=text, created_at=created, seq=1)
            assert _passage_within(period)(stored) == parsed_within(text, created, period)


def test_search_reads_each_text_for_its_own_dates():
    """The dates read from a passage's text are kept by text and time, not by
    passage: another text (or time) under the same id is read afresh."""
    from memgpt_lite.memory.retrieval.search import _passage_within

    may = Period(date(2023, 5, 1), date(2023, 5, 31))
    created = datetime(2024, 2, 2, tzinfo=UTC)
    for text, inside in (("Rowing on May 8, 2023.", True), ("Rowing on June 8, 2023.", False)):
        stored = Passage(id="p1", agent_id="a", text=text, created_at=created, seq=1)
        assert _passage_within(may)(stored) is inside
    moved = Passage(id="p1", agent_id="a", text="Rowing.", created_at=datetime(2023, 5, 3), seq=1)
    assert _passage_within(may)(moved) is True
