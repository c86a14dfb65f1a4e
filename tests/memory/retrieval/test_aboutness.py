"""What a passage is about, weighed after the word score: a passage that
begins with a name the query names is about that one, and a passage that
ends by asking holds the answer less often than one that tells
(memory/retrieval/ranking.py `aboutness`, applied by memory/retrieval/search.py)."""

from __future__ import annotations

import numpy as np
import pytest

from memgpt_lite import Agent, Passage
from memgpt_lite.memory.retrieval.questions import query_names
from memgpt_lite.memory.retrieval.ranking import (
    QUESTION_PENALTY,
    SUBJECT_BOOST,
    aboutness,
    length_weights,
    reweighed,
)

# Melanie's own passages say what she does; the others only address her,
# and the short ones outscore hers by words alone (BM25 favours short rows).
CAMPING = [
    "Melanie: we went camping in the mountains with the kids, the view was wide.",
    "Caroline: Melanie, where do you go camping?",
    "Caroline: Melanie, I love camping too.",
    "Melanie: the forest trip was another camping weekend, the kids loved the campfire.",
]
QUESTION = "Where has Melanie gone camping?"


def test_query_names_are_its_capitalised_words_but_function_words():
    assert query_names(QUESTION) == {"melanie"}
    assert query_names("Melanie hobbies") == {"melanie"}  # keywords: the first word too
    assert query_names("When did Jon and Gina meet?") == {"jon", "gina"}
    assert query_names("where has she camped") == set()


def test_aboutness_boosts_the_subject_and_lowers_a_question():
    factor = aboutness({"melanie"})
    assert factor(CAMPING[0]) == SUBJECT_BOOST
    assert factor("melanie's kids") == SUBJECT_BOOST  # the first word, any case
    assert factor(CAMPING[2]) == 1.0  # named, but not first
    assert factor(CAMPING[1]) == QUESTION_PENALTY
    assert factor("Melanie: any plans? (shares an image: a tent)") == (
        SUBJECT_BOOST * QUESTION_PENALTY
    )  # a trailing note does not hide the question
    assert factor("Is it? No, it is not.") == 1.0  # it asked, then told
    assert aboutness(set())("Melanie: hi") == 1.0


def test_reweighed_reorders_by_score_times_aboutness():
    scored = [("Caroline: Melanie, fun?", 1.0), ("Melanie: fun.", 0.9), ("Tom: fun.", 0.9)]
    assert reweighed("Is Melanie fun?", scored, str) == [
        ("Melanie: fun.", pytest.approx(0.9 * SUBJECT_BOOST)),
        ("Tom: fun.", 0.9),
        ("Caroline: Melanie, fun?", pytest.approx(QUESTION_PENALTY)),
    ]


def test_passages_shorter_than_the_median_weigh_less():
    assert length_weights([2, 8, 8, 20]) == [0.5, 1.0, 1.0, 1.0]
    assert length_weights([3, 3, 3]) == [1.0, 1.0, 1.0]  # all short: none penalised
    assert length_weights([0, 4]) == [0.0, 1.0]
    assert length_weights([]) == []


def test_a_short_reply_does_not_outrank_the_telling_passage():
    scored = [("Melanie: camping!", 1.0), ("Melanie: we went camping at the lake.", 0.8)]
    scored.append(("Melanie: the kids loved the camping trip in the hills.", 0.7))
    ranked = [text for text, _ in reweighed("Melanie camping", scored, str)]
    assert ranked[0] == "Melanie: we went camping at the lake."
    assert ranked[-1] == "Melanie: camping!"  # 2 words of a median 7: weighed about 0.53


def _agent(db: str, **kwargs) -> Agent:
    agent = Agent.create("sam", "gpt-4o-mini", db=db, **kwargs)
    agent.archival.insert_many([Passage(agent_id=agent.state.id, text=t) for t in CAMPING])
    return agent


def test_search_ranks_the_subjects_own_passages_first(db_location):
    agent = _agent(db_location)
    words_only = [p.text for p, _ in agent.store.rank_passages(agent.state.id, QUESTION, 4).scored]
    # By words alone, the short passages that address her come first.
    assert words_only.index(CAMPING[0]) > 1 and words_only.index(CAMPING[3]) > 1
    found, total = agent.archival.search(QUESTION, limit=2)
    assert {p.text for p in found} == {CAMPING[0], CAMPING[3]}
    assert total == 4


class WordEmbedder:
    """Every text one direction, so vector similarity ties and the fused
    ranking is the words', weighed by aboutness."""

    name, dimension = "test:flat", 4

    def embed(self, texts):
        return np.tile(np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32), (len(texts), 1))


def test_hybrid_search_weighs_aboutness_too(tmp_path):
    agent = _agent(str(tmp_path / "a.db"), embedder=WordEmbedder())
    found, _ = agent.archival.search(QUESTION, limit=2)
    assert {p.text for p in found} == {CAMPING[0], CAMPING[3]}
