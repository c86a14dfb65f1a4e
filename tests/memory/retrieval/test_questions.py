"""What a search query asks for (memory/retrieval/questions.py) and how
search uses it: the period it names, its dates told from the one it names
in full or, without a year, from memory's latest time; and a question
asking when, which ranks first the passages that state a time
(memory/retrieval/ranking.py TIME_BOOST, dates.py `states_time`)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from memgpt_lite import Agent, Passage
from memgpt_lite.memory.retrieval.dates import Period, states_time
from memgpt_lite.memory.retrieval.questions import asks_time, query_period
from memgpt_lite.memory.retrieval.ranking import SUBJECT_BOOST, TIME_BOOST, reweighed

NOW = date(2026, 11, 28)
LATEST = date(2023, 12, 20)  # memory's newest passage


def days(first: str, last: str | None = None) -> Period:
    return Period(date.fromisoformat(first), date.fromisoformat(last or first))


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # Relative dates told from the date named in full, not from today.
        ("What did John do the week before August 3, 2023?", days("2023-07-24", "2023-08-03")),
        ("What was shown on the Sunday before October 25, 2022?", days("2022-10-23", "2022-10-25")),
        (
            "What did Joanna finish last Friday on 23 January, 2022?",
            days("2022-01-21", "2022-01-23"),
        ),
        ("Where was John between August 11 and August 15 2023?", days("2023-08-11", "2023-08-15")),
        ("the forest picture shared on December 1,2023", days("2023-12-01")),
        # Parts of a month.
        ("at the end of June 2022", days("2022-06-21", "2022-06-30")),
        ("the last week of February 2024", days("2024-02-23", "2024-02-29")),
        ("in early May 2021", days("2021-05-01", "2021-05-10")),
        # Without its year: the latest one memory holds.
        (
            "Which country was Tim visiting in the second week of November?",
            days("2023-11-08", "2023-11-14"),
        ),
        ("What deal did John get in December?", days("2023-12-01", "2023-12-31")),
        ("When did she go camping in June?", days("2023-06-01", "2023-06-30")),
        # A relative date alone is today's; "before" still opens the period.
        ("what happened last week", days("2026-11-16", "2026-11-22")),
        ("jobs before 2022", Period(date.min, date(2021, 12, 31))),
    ],
)
def test_the_period_a_query_names(query, expected):
    assert query_period(query, NOW, lambda: LATEST) == expected


def test_without_memorys_time_a_month_is_the_latest_before_today():
    assert query_period("camping in June", NOW) == days("2026-06-01", "2026-06-30")
    no_passages = query_period("camping in June", NOW, lambda: None)
    assert no_passages == query_period("camping in June", NOW)


@pytest.mark.parametrize(
    "query",
    [
        "When did Nate get his first turtles?",
        "How long has Nate had his turtles?",
        "What year did Jon start dancing?",
        "In which month did Gina open the store?",
        "Since when has Anna lived in Porto?",
        "when is the party",
    ],
)
def test_questions_that_ask_when(query):
    assert asks_time(query)


@pytest.mark.parametrize(
    "query", ["What did Nate get?", "Where does Anna live?", "Who came when it rained?"]
)
def test_questions_that_do_not_ask_when(query):
    assert not asks_time(query)


@pytest.mark.parametrize(
    ("text", "states"),
    [
        ("I've had them for 3 years now!", True),
        ("We went camping yesterday [2023-05-07].", True),
        ("I moved here in 2019.", True),
        ("See you on Friday.", True),
        ("for a couple of weeks", True),
        ("for the kids", False),
        ("I love my turtles, they are calm.", False),
        ("It took forever.", False),
    ],
)
def test_passages_that_state_a_time(text, states):
    assert states_time(text) is states


TURTLES = [
    "Nate: my turtles love the new tank, the turtles are happy and the turtles eat well.",
    "Nate: I have had the turtles for 3 years now, they bring me so much joy.",
]


def test_a_when_question_weighs_the_passages_stating_a_time():
    scored = [(TURTLES[0], 1.0), (TURTLES[1], 0.9)]
    # Both are about Nate (SUBJECT_BOOST); one states when.
    assert reweighed("When did Nate get his turtles?", scored, str) == [
        (TURTLES[1], pytest.approx(0.9 * SUBJECT_BOOST * TIME_BOOST)),
        (TURTLES[0], pytest.approx(SUBJECT_BOOST)),
    ]
    assert [t for t, _ in reweighed("What do Nate's turtles eat?", scored, str)] == TURTLES


def test_search_answers_when_with_the_passage_that_states_it(db_location):
    agent = Agent.create("sam", "gpt-4o-mini", db=db_location)
    others = [f"Joanna: I wrote {n} pages of my screenplay today, at the cafe." for n in range(6)]
    agent.archival.insert_many(
        [Passage(agent_id=agent.state.id, text=t) for t in [*TURTLES, *others]]
    )
    assert agent.archival.search("What turtles does Nate have?", limit=1)[0][0].text == TURTLES[0]
    found = agent.archival.search("When did Nate get his turtles?", limit=1)[0]
    assert found[0].text == TURTLES[1]


def test_a_month_without_its_year_is_the_one_memory_holds(db_location):
    agent = Agent.create("sam", "gpt-4o-mini", db=db_location)

    def at(day: str) -> datetime:
        return datetime.fromisoformat(day).replace(tzinfo=UTC)

    texts = [
        ("Joanna: I hiked to a waterfall, so peaceful.", at("2022-05-12")),
        ("Joanna: the waterfall hike was peaceful again, lovely.", at("2022-09-14")),
        ("Joanna: a waterfall near home, I hiked there, peaceful.", at("2022-11-09")),
    ]
    agent.archival.insert_many(
        [Passage(agent_id=agent.state.id, text=t, created_at=when) for t, when in texts]
    )
    found = agent.archival.search("Which waterfall did Joanna hike to in May?", limit=1)[0]
    assert found[0].text == texts[0][0]


def test_memorys_time_is_asked_for_only_by_a_month_without_its_year():
    asked = []

    def latest() -> date:
        asked.append(True)
        return LATEST

    assert query_period("what happened last week", NOW, latest) == days("2026-11-16", "2026-11-22")
    assert query_period("trips in 2019", NOW, latest) == days("2019-01-01", "2019-12-31")
    assert asked == []
    query_period("camping in June", NOW, latest)
    assert asked == [True]
