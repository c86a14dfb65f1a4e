"""benchmarks/locomo_variants.py: what it reads of a question, how its
variants reorder a ranking, and that its "shipped" ranking is the one
archival search returns (on a small conversation in LoCoMo's format,
written here)."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta

from support.paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import locomo_retrieval  # noqa: E402
import locomo_variants  # noqa: E402
from databases import Databases  # noqa: E402

from memgpt_lite import Passage  # noqa: E402

START = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def test_questions_asking_for_several_things():
    for question in (
        "What books has Tim read?",
        "Which cities has Jon visited?",
        "What LGBTQ+ events has Caroline participated in?",
        "What are Nate's favorite desserts?",
        "How many times has Joanna been rejected?",
        "What do Jon and Gina both like?",
    ):
        assert locomo_variants.asks_for_list(question), question
    for question in (
        "What did Caroline research?",
        "What is Joanna allergic to?",
        "Which book was John reading?",
        "What class is Tim taking?",
        "When did Nate get his turtles?",
    ):
        assert not locomo_variants.asks_for_list(question), question


def test_split_names_asks_once_per_joined_name():
    assert locomo_variants.split_names("What movies have both Joanna and Nate seen?") == [
        "What movies have Joanna seen?",
        "What movies have Nate seen?",
    ]
    assert locomo_variants.split_names("What is Nate's and Joanna's pet?") == [
        "What is Nate's pet?",
        "What is Joanna's pet?",
    ]
    assert locomo_variants.split_names("What did Nate give to Joanna?") == []


def _ranking(sessions: list[int]) -> list[tuple[Passage, float]]:
    """Passages best first, the nth of `sessions` dated in that session
    (a day apart), scores falling by 0.01 a rank."""
    return [
        (
            Passage(agent_id="a", text=f"turn {i}", created_at=START + timedelta(days=day)),
            1.0 - 0.01 * i,
        )
        for i, day in enumerate(sessions)
    ]


def _texts(passages: list[Passage]) -> list[str]:
    return [p.text for p in passages]


def test_spreading_keeps_the_top_five_and_prefers_other_sessions_below():
    ranking = _ranking([0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 0, 3])
    spread = _texts(locomo_variants.spread_below_top(ranking, 0.9))
    assert spread[:5] == [f"turn {i}" for i in range(5)]
    assert spread[5:8] == ["turn 7", "turn 9", "turn 11"]
    assert len(spread) == 10
    # Without a factor below 1 the ranking stays as it was.
    assert _texts(locomo_variants.spread_below_top(ranking, 1.0)) == [
        f"turn {i}" for i in range(10)
    ]


def test_new_sessions_below_top_takes_each_unheld_session_first():
    ranking = _ranking([0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 2, 0])
    below = _texts(locomo_variants.new_sessions_below_top(ranking, 2))
    assert below[5:] == ["turn 6", "turn 7", "turn 10", "turn 5", "turn 8"]


def test_alternated_takes_each_list_in_turn_once():
    a, b, c, d = (Passage(agent_id="a", text=t) for t in "abcd")
    assert _texts(locomo_variants.alternated([a], [b, c], [a, d, c])) == ["a", "b", "c", "d"]


def _conversation(sample_id: str) -> dict:
    sessions = [
        ("1:56 pm on 8 May, 2023", ["I read Dune last week.", "Nice! I baked bread."]),
        ("2:10 pm on 9 June, 2023", ["I finished Emma too.", "Did you like it?"]),
        ("9:00 am on 1 July, 2023", ["Yes, and I started Ulysses.", "Good luck with it!"]),
    ]
    conversation: dict = {"speaker_a": "Ann", "speaker_b": "Bo"}
    for n, (when, texts) in enumerate(sessions, start=1):
        conversation[f"session_{n}_date_time"] = when
        conversation[f"session_{n}"] = [
            {"speaker": "Ann" if i % 2 == 0 else "Bo", "dia_id": f"D{n}:{i + 1}", "text": text}
            for i, text in enumerate(texts)
        ]
    questions = [
        ("What books has Ann read?", ["D1:1", "D2:1", "D3:1"], 1),
        ("What did Bo bake?", ["D1:2"], 4),
        ("What do Ann and Bo both like?", ["D1:1", "D1:2"], 1),
    ]
    qa = [{"question": q, "evidence": e, "category": c} for q, e, c in questions]
    return {"sample_id": sample_id, "conversation": conversation, "qa": qa}


def test_shipped_is_what_search_returns_and_every_variant_runs():
    data = [_conversation("conv-1"), _conversation("conv-2")]
    with Databases() as databases:
        runs = locomo_variants.evaluate(
            data, None, databases, "sqlite", list(locomo_variants.VARIANTS)
        )
        searched = locomo_retrieval.evaluate(data, None, databases)
    shipped = runs["shipped"]
    assert [a.recall for a in shipped.answered] == [a.recall for a in searched.answered]
    assert set(runs) == {"shipped", *locomo_variants.VARIANTS}
    for run in runs.values():
        assert run.count() == 6
        assert all(0.0 <= a.recall[k] <= 1.0 for a in run.answered for k in (5, 10))
    # Six passages: every variant's page of ten holds them all.
    assert all(run.recall(10) == 100.0 for run in runs.values())
