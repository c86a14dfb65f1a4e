"""Pseudo-relevance feedback in archival search: the words that set the best
hits apart are searched again (memory/retrieval/ranking.py, memory/retrieval/search.py)."""

from __future__ import annotations

import pytest

from memgpt_lite import Agent, Passage
from memgpt_lite.memory.retrieval.ranking import feedback_words, fuse_feedback, proper_names
from memgpt_lite.testing import call, reply, say

# A second hop: the question names Anna's brother; only the first hit names
# him (Tom), and only Tom's passage says where he lives.
SECOND_HOP = [
    "Anna: my brother Tom called, he finally got the job at the shipyard.",
    "Tom has an apartment in Porto now, near the river.",
    "We live near the station; trains run late and the evenings are loud there.",
    "They live on the hill, where the bus stops twice a day in the winter.",
    "Birds live in the old barn behind the school, above the tractor shed.",
    "You live and learn, my grandmother said while we cooked the soup.",
    "Fish live longer in cold water, the guide told us on the boat trip.",
]
QUESTION = "Where does Anna's brother live?"


def test_feedback_words_name_what_the_best_hits_share_and_the_others_lack():
    candidates = [
        ("Anna: my brother Tom called about the shipyard job.", 3.0),
        ("Anna visited her brother Tom at the shipyard.", 2.0),
        ("Anna lives with two cats.", 1.0),
        ("Anna and the cats live in a flat.", 1.0),
        ("The cats of Anna sleep all day.", 0.5),
    ]
    words = feedback_words("Where does Anna's brother live?", candidates, count=2)
    # In both best hits and in no other candidate; the question's words are
    # not repeated, and "cats", in three weaker candidates, does not tell
    # the best ones apart.
    assert sorted(words) == ["shipyard", "tom"]


def test_proper_names_are_capitals_inside_a_sentence():
    text = "Anna: my brother Tom called. He moved to Porto, with Lisa and I."
    assert proper_names(text) == {"tom", "porto", "lisa", "i"}


def test_feedback_words_weigh_hits_by_score():
    candidates = [("Tom works in Porto.", 4.0), ("Lena works in Madrid.", 1.0)]
    assert feedback_words("works", candidates, count=1) == ["porto"]
    assert feedback_words("works", [], count=1) == []
    assert feedback_words("works", [("Tom", 0.0)]) == []  # nothing scored: no feedback


def test_fuse_feedback_adds_the_second_pass_at_its_weight():
    first = [(1, 10.0), (2, 8.0), (3, 5.0)]
    second = [(3, 2.0), (4, 1.0)]
    fused = fuse_feedback(first, second, weight=0.4)
    assert [item for item, _ in fused] == [1, 3, 2, 4]
    assert dict(fused) == pytest.approx({1: 1.0, 2: 0.8, 3: 0.5 + 0.4, 4: 0.2})
    # Equal scores: the newer (higher id) first, as the store ranks.
    assert [item for item, _ in fuse_feedback([(5, 1.0), (6, 1.0)], [])] == [6, 5]
    # Without a second pass the order is the first's.
    assert [item for item, _ in fuse_feedback(first, [])] == [1, 2, 3]


def test_search_finds_the_second_hop(db_location):
    agent = Agent.create("sam", "gpt-4o-mini", db=db_location)
    agent.archival.insert_many([Passage(agent_id=agent.state.id, text=t) for t in SECOND_HOP])
    words_only = agent.store.rank_passages(agent.state.id, QUESTION, 10)
    ranked = [p.text for p, _ in words_only.scored]
    # The question's words alone: Tom's passage holds none of them.
    assert SECOND_HOP[1] not in ranked
    found, total = agent.archival.search(QUESTION, limit=3)
    texts = [p.text for p in found]
    assert texts[0] == ranked[0] == SECOND_HOP[0]
    assert SECOND_HOP[1] in texts
    assert total == words_only.total  # the count is the question's matches


def test_the_tool_ranks_as_the_api_does(fake_llm, db_location):
    agent = Agent.create("sam", "gpt-4o-mini", db=db_location)
    agent.archival.insert_many([Passage(agent_id=agent.state.id, text=t) for t in SECOND_HOP])
    fake_llm.enqueue(
        reply(tool_calls=[call("archival_memory_search", query=QUESTION, request_heartbeat=True)]),
        say("Porto"),
    )
    shown = agent.step("where does he live?").tool_results[0].content
    found, _ = agent.archival.search(QUESTION, limit=5)
    assert "Porto" in shown
    positions = [shown.index(p.text) for p in found]
    assert positions == sorted(positions)


def test_the_feedback_pass_leaves_out_words_over_its_budget(db_location):
    # A word in more passages than the budget is dropped from the query (its
    # IDF is low, and costly for FTS5 to compute); with none left, no match.
    agent = Agent.create("sam", "gpt-4o-mini", db=db_location)
    texts = ["garden party", "garden tools", "garden gate", "harbour party"]
    agent.archival.insert_many([Passage(agent_id=agent.state.id, text=t) for t in texts])

    def ranked(words: str) -> list[str]:
        ranking = agent.store.rank_passages(
            agent.state.id, words, 10, budget=2, drop_over_budget=True
        )
        return sorted(p.text for p, _ in ranking.scored)

    assert ranked("garden harbour") == ["harbour party"]
    assert ranked("garden") == []
    assert ranked("party") == ["garden party", "harbour party"]  # at the budget: kept
    # Without it, a word over the budget still finds its newest matches.
    newest = agent.store.rank_passages(agent.state.id, "garden", 10, budget=2)
    assert sorted(p.text for p, _ in newest.scored) == ["garden gate", "garden tools"]
