"""A turn that asks is answered by the turn after it: the passage stored
right after one that asks, in the same exchange, gains part of the asking
one's score (memory/retrieval/ranking.py `answers_lifted`, applied by
memory/retrieval/search.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memgpt_lite import Agent, Passage
from memgpt_lite.memory.retrieval.fusion import VECTOR_WEIGHT, fused
from memgpt_lite.memory.retrieval.ranking import (
    ANSWER_SHARE,
    SESSION_GAP_SECONDS,
    Turn,
    answers_lifted,
    reweighed,
)
from memgpt_lite.memory.retrieval.search import VECTOR_ANSWER_SHARE, answers_near

# (text, seq, seconds): the question's words are in the asking turn only.
ASKED = "Nina: which game did you play at the tournament?"
ANSWER = "Tom: Street Fighter, and I won!"
TURNS = {
    ASKED: Turn(1, 0.0),
    ANSWER: Turn(2, 0.0),
    "Tom: the tournament hall was big.": Turn(7, 0.0),
}


def test_the_turn_after_a_question_gains_a_share_of_its_score():
    scored = [(ASKED, 1.0), ("Tom: the tournament hall was big.", 0.6), (ANSWER, 0.3)]
    assert answers_lifted(scored, TURNS.__getitem__, str) == [
        (ASKED, 1.0),
        (ANSWER, pytest.approx(0.3 + ANSWER_SHARE * 1.0)),
        ("Tom: the tournament hall was big.", 0.6),
    ]


def test_only_the_next_turn_of_the_same_exchange_after_one_that_asks():
    told = "Nina: I played chess at the tournament."
    turns = {**TURNS, told: Turn(1, 0.0)}
    # The turn before does not ask: nothing changes.
    scored = [(told, 1.0), ("Tom: the tournament hall was big.", 0.6), (ANSWER, 0.3)]
    assert answers_lifted(scored, turns.__getitem__, str) == scored
    # Asked, but the next seq was written much later: another exchange.
    later = {**TURNS, ANSWER: Turn(2, SESSION_GAP_SECONDS + 1)}
    scored = [(ASKED, 1.0), ("Tom: the tournament hall was big.", 0.6), (ANSWER, 0.3)]
    assert answers_lifted(scored, later.__getitem__, str) == scored
    # The asking turn's own score is not raised by its answer.
    assert answers_lifted([(ANSWER, 1.0), (ASKED, 0.9)], TURNS.__getitem__, str)[1] == (ASKED, 0.9)


# A conversation stored turn by turn: the question is asked in words the
# search uses, the answer has them only in its context (the turn before).
EXCHANGE = [
    ("Nina: which game did you play at the tournament?", ""),
    ("Tom: Street Fighter, and I won!", "Nina: which game did you play at the tournament?"),
]
OTHERS = [
    "Nina: the game at the tournament was loud.",
    "Nina: we play a game at every tournament.",
    "Nina: the tournament game went on for hours.",
    *(f"Nina: day {n} of the trip, the hills were green and quiet." for n in range(8)),
]


QUERY = "What game did they play at the tournament?"


def _conversation(db: str, **kwargs) -> Agent:
    agent = Agent.create("sam", "gpt-4o-mini", db=db, **kwargs)
    day = datetime(2024, 5, 3, tzinfo=UTC)
    passages = [
        Passage(agent_id=agent.state.id, text=t, created_at=day - timedelta(days=1 + i))
        for i, t in enumerate(OTHERS)
    ] + [Passage(agent_id=agent.state.id, text=t, context=c, created_at=day) for t, c in EXCHANGE]
    agent.archival.insert_many(passages)
    return agent


def test_search_finds_the_answer_to_a_question_it_matches(db_location):
    agent = _conversation(db_location)
    by_words = agent.store.rank_passages(agent.state.id, QUERY, 6).scored
    weighed = [p.text for p, _ in reweighed(QUERY, by_words, lambda p: p.text)]
    assert weighed.index(EXCHANGE[1][0]) >= 3  # its own words match nothing
    found, _ = agent.archival.search(QUERY, limit=3)
    assert EXCHANGE[1][0] in [p.text for p in found]


class FlatEmbedder:
    """Every text one direction: the vectors tie, and the fused ranking is
    the words' (and where each passage sits in the conversation)."""

    name, dimension = "test:flat", 4

    def embed(self, texts):
        return np.tile(np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32), (len(texts), 1))


def test_hybrid_search_finds_the_answer_too(tmp_path):
    agent = _conversation(str(tmp_path / "a.db"), embedder=FlatEmbedder())
    found, _ = agent.archival.search(QUERY, limit=3)
    assert EXCHANGE[1][0] in [p.text for p in found]


# The vectors' side: the answer is near the query through its question.
NEAR_ASKED = "Nina: which one did you like most?"
NEAR_ANSWER = "Tom: the blue one, by far."
NEAR_OTHER = "Tom: the hall was big and full."
VECTOR_OF = {  # by a word of the text; the query's words match no passage
    "which": [1.0, 0.0, 0.0, 0.0],
    "blue": [0.0, 0.0, 1.0, 0.0],
    "hall": [0.6, 0.8, 0.0, 0.0],
    "quux": [1.0, 0.0, 0.0, 0.0],
}


class KeyedEmbedder:
    """A text's vector is that of the first key it holds."""

    name, dimension = "test:keyed", 4

    def embed(self, texts):
        def vector(text: str) -> list[float]:
            return next(v for key, v in VECTOR_OF.items() if key in text.lower())

        return np.array([vector(t) for t in texts], dtype=np.float32)


def test_the_answer_gains_a_share_of_its_questions_nearness():
    passages = {
        seq: Passage(agent_id="a", text=text, seq=seq, created_at=datetime(2024, 5, 3, tzinfo=UTC))
        for seq, text in ((1, NEAR_ASKED), (2, NEAR_ANSWER), (7, NEAR_OTHER))
    }
    # Nearness min-max over the items: the question 1, the answer 0.
    similarity = {1: 0.9, 2: 0.1, 7: 0.26}
    assert [seq for seq, _ in fused({}, similarity)] == [1, 7, 2]
    ranked = fused({}, similarity, answers_near(passages))
    assert ranked == [
        (1, pytest.approx(VECTOR_WEIGHT)),
        (2, pytest.approx(VECTOR_WEIGHT * VECTOR_ANSWER_SHARE)),
        (7, pytest.approx(VECTOR_WEIGHT * 0.2)),
    ]


def test_hybrid_search_finds_an_answer_by_its_questions_vector(db_location):
    """Found by the vectors alone: without the answer's share of its
    question's nearness before fusion, the other turn, nearer to the query
    than the answer, comes second (the share of the fused score after it,
    `in_conversation`, is not enough)."""
    agent = Agent.create("sam", "gpt-4o-mini", db=db_location, embedder=KeyedEmbedder())
    day = datetime(2024, 5, 3, tzinfo=UTC)
    agent.archival.insert_many(
        [
            Passage(agent_id=agent.state.id, text=text, created_at=day)
            for text in (NEAR_ASKED, NEAR_ANSWER, NEAR_OTHER)
        ]
    )
    found, _ = agent.archival.search("quux", limit=2)
    assert [p.text for p in found] == [NEAR_ASKED, NEAR_ANSWER]
