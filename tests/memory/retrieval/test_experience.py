"""A question in the present perfect asks for its subject's experiences: the
subject's passages that tell of a dated past event weigh more
(memory/retrieval/ranking.py EXPERIENCE_BOOST, memory/retrieval/dates.py `tells_past`)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memgpt_lite import Agent, Passage
from memgpt_lite.memory.retrieval.dates import tells_past
from memgpt_lite.memory.retrieval.ranking import (
    EXPERIENCE_BOOST,
    SUBJECT_BOOST,
    asks_experience,
    reweighed,
)

AT = datetime(2023, 5, 8, 12, tzinfo=UTC)


def test_the_present_perfect_asks_for_experiences():
    assert asks_experience("Which cities has Jon visited?")
    assert asks_experience("What has Melanie painted?")
    assert asks_experience("What types of pottery have Melanie and her kids made?")
    assert asks_experience("How many times has Joanna been rejected?")
    assert not asks_experience("What pets does Melanie have?")  # a possession
    assert not asks_experience("Which city did Jon visit?")
    assert not asks_experience("Who has a dog?")


def test_a_text_tells_the_past_by_a_date_before_its_own():
    assert tells_past("I went to Rome last week [2023-05-01..2023-05-07].", AT)
    assert tells_past("We married on May 8, 2018.", AT)
    assert not tells_past("The show is next week [2023-05-15..2023-05-21].", AT)
    assert not tells_past("Today [2023-05-08] is fine.", AT)  # its own day
    assert not tells_past("I went to Rome last week.", AT)  # not annotated: not read


PASSAGES = [
    ("Jon: visited the studio downtown today, nice.", 1.0),
    ("Jon: visited Rome last week, so nice.", 0.9),
    ("Gina: visited Paris last week, so nice.", 0.9),
]


def _past(text: str) -> bool:
    return "last week" in text


def test_the_subjects_past_events_weigh_more_for_a_perfect_question():
    ranked = reweighed("Which cities has Jon visited?", PASSAGES, str, _past)
    assert ranked == [
        (PASSAGES[1][0], pytest.approx(0.9 * SUBJECT_BOOST * EXPERIENCE_BOOST)),
        (PASSAGES[0][0], pytest.approx(SUBJECT_BOOST)),
        (PASSAGES[2][0], 0.9),  # Gina's past is not what Jon has done
    ]
    # Another tense, or no way to tell the past: the subject alone.
    for query, past in (
        ("Which city did Jon visit?", _past),
        ("Which cities has Jon visited?", None),
    ):
        assert [t for t, _ in reweighed(query, PASSAGES, str, past)][0] == PASSAGES[0][0]


def test_search_finds_the_subjects_dated_experience_first(tmp_path):
    agent = Agent.create("sam", "gpt-4o-mini", db=str(tmp_path / "a.db"))
    texts = [
        "Jon: I visited Rome last week, the food was great.",  # gains "[2023-05-01..2023-05-07]"
        "Jon: I visited the new dance studio downtown, the floor was great.",
        "Gina: my store is doing well, sales are up.",
        "Gina: I love the new hoodies, they sell fast.",
        "Jon: dancing keeps me going every day.",
        "Gina: let's talk again soon.",
    ]
    agent.archival.insert_many(
        [Passage(agent_id=agent.state.id, text=t, created_at=AT) for t in texts]
    )
    first = {
        tense: agent.archival.search(query, limit=1)[0][0].text
        for tense, query in (
            ("perfect", "Which cities has Jon visited?"),
            ("past", "Which city did Jon visit?"),
        )
    }
    # By words alone the studio ranks first (Rome's passage is longer by its date).
    assert first["past"].startswith("Jon: I visited the new dance studio")
    assert first["perfect"].startswith("Jon: I visited Rome last week [2023-05-01..2023-05-07]")
