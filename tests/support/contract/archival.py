"""The contract for archival memory: passages, their search, and stored vectors."""

from __future__ import annotations

from datetime import date

import numpy as np
import pytest

from memgpt_lite.errors import NotFoundError
from memgpt_lite.memory.retrieval.vector_index import VectorIndex
from memgpt_lite.models import Passage
from memgpt_lite.testing.embeddings import fake_embedding
from support.contract.base import ContractBase, day, new_agent, passage, said

DIMENSION = 64


def embedded(texts: list[str]) -> np.ndarray:
    return np.array([fake_embedding(t, DIMENSION) for t in texts], dtype=np.float32)


class PassageContract(ContractBase):
    def test_exact_duplicates_are_skipped(self, store):
        state = new_agent(store)
        first = passage(state, "The car is in the garage.", tags=["home"])
        assert store.add_passages([first]) == [True] and first.seq is not None
        again = [passage(state, "  The car is in the garage.\n"), passage(state, "Another.")]
        assert store.add_passages(again) == [False, True]
        assert again[0].seq is None and again[1].seq is not None
        assert store.passage_id_for_text(state.id, "The car is in the garage. ") == first.id
        assert store.passage_id_for_text(state.id, "not stored") is None
        other = new_agent(store, "kim")
        assert store.add_passage(passage(other, "The car is in the garage.")) is True

    def test_passages_are_stored_all_or_none(self, store):
        state = new_agent(store)
        batch = [passage(state, "one"), Passage(agent_id="agent-ghost", text="two")]
        with pytest.raises(NotFoundError, match="agent-ghost"):
            store.add_passages(batch)
        with pytest.raises(RuntimeError), store.transaction():
            store.add_passages([passage(state, "three"), passage(state, "four")])
            raise RuntimeError("the load failed half-way")
        assert store.list_passages(state.id, 10) == ([], 0)
        assert store.agent_stats(state.id).passage_count == 0

    def test_a_passage_reads_back_whole(self, store):
        state = new_agent(store)
        stored = passage(
            state, "text", tags=["a", "b"], context="before", created_at=day("2026-01-02 03:04")
        )
        store.add_passage(stored)
        assert store.get_passage(state.id, stored.id) == stored
        assert store.passages_by_seq(state.id, [stored.seq or 0]) == {stored.seq: stored}

    def test_listing_is_newest_first_with_filters(self, store):
        state = new_agent(store)
        specs = [
            ("a", ["x"], "2026-01-01"),
            ("b", ["y"], "2026-01-02"),
            ("c", ["x", "y"], "2026-01-03"),
        ]
        for text, tags, when in specs:
            store.add_passage(passage(state, text, tags=tags, created_at=day(f"{when} 12:00")))

        def texts(page: tuple[list[Passage], int]) -> list[str]:
            return [p.text for p in page[0]]

        assert texts(store.list_passages(state.id, 10)) == ["c", "b", "a"]
        page = store.list_passages(state.id, 1, offset=1)
        assert (texts(page), page[1]) == (["b"], 3)
        assert texts(store.list_passages(state.id, 10, tags=["x"])) == ["c", "a"]
        assert texts(store.list_passages(state.id, 10, tags=["y", "x"])) == ["c", "b", "a"]
        between = store.list_passages(state.id, 10, start=date(2026, 1, 2), end=date(2026, 1, 2))
        assert (texts(between), between[1]) == (["b"], 1)
        seqs = [p.seq or 0 for p in store.list_passages(state.id, 10)[0]]
        assert sorted(
            store.passages_by_seq(state.id, seqs, tags=["y"], start=date(2026, 1, 3))
        ) == [seqs[0]]

    def test_the_newest_passage_time_is_the_last_stored(self, store):
        state, other = new_agent(store), new_agent(store, "kim")
        assert store.newest_passage_time(state.id) is None
        store.add_passage(passage(state, "a", created_at=day("2023-05-02 10:00")))
        store.add_passage(passage(other, "b", created_at=day("2024-01-01 10:00")))
        store.add_passage(passage(state, "c", created_at=day("2022-07-08 09:30")))
        assert store.newest_passage_time(state.id) == day("2022-07-08 09:30")

    def test_a_passage_belongs_to_its_agent(self, store):
        sam, kim = new_agent(store, "sam"), new_agent(store, "kim")
        kims = passage(kim, "kim's secret")
        store.add_passage(kims)
        with pytest.raises(NotFoundError):
            store.get_passage(sam.id, kims.id)
        with pytest.raises(NotFoundError):
            store.delete_passage(sam.id, kims.id)
        assert store.passages_by_seq(sam.id, [kims.seq or 0]) == {}
        store.delete_passage(kim.id, kims.id)
        with pytest.raises(NotFoundError):
            store.get_passage(kim.id, kims.id)

    def test_search_ranks_only_the_agents_own_passages(self, store):
        sam, kim = new_agent(store, "sam"), new_agent(store, "kim")
        store.add_passages([passage(sam, f"apple river sam{i}") for i in range(5)])
        alone = store.rank_passages(sam.id, "apple river", 10)
        store.add_passages([passage(kim, f"apple river kim{i}") for i in range(7)])
        shared = store.rank_passages(sam.id, "apple river", 10)
        assert {p.agent_id for p, _ in shared.scored} == {sam.id} and shared.total == 5
        kims = store.rank_passages(kim.id, "apple river", 10)
        assert {p.agent_id for p, _ in kims.scored} == {kim.id} and kims.total == 7
        assert [p.seq for p, _ in alone.scored] == [p.seq for p, _ in shared.scored]
        for found, _ in kims.scored:
            store.delete_passage(kim.id, found.id)
        assert store.rank_passages(kim.id, "apple river", 10).total == 0

    def test_search_weighs_text_above_context_and_applies_filters(self, store):
        state = new_agent(store)
        in_context = passage(state, "it is parked outside", context="the garage door")
        in_text = passage(state, "the garage is full", tags=["home"])
        store.add_passages([in_context, in_text, passage(state, "unrelated words")])
        ranking = store.rank_passages(state.id, "garage", 10)
        assert [p.id for p, _ in ranking.scored] == [in_text.id, in_context.id]
        assert ranking.total == 2 and ranking.proven
        assert ranking.scored[0][1] > ranking.scored[1][1] > 0
        tagged = store.rank_passages(state.id, "garage", 10, tags=["home"])
        assert [p.id for p, _ in tagged.scored] == [in_text.id]
        assert store.rank_passages(state.id, "the is", 10).total == 2  # only stop words: kept
        assert store.rank_passages(state.id, "", 10) == ([], 0, True)

    def test_ranking_with_a_period_finds_what_ranking_within_it_would(self, store):
        state = new_agent(store)
        days = ["2026-03-02", "2026-04-10", "2026-04-20", "2026-05-01", "2026-04-30"]
        store.add_passages(
            [
                passage(state, f"garden {'rose ' * i}note {i}", created_at=day(f"{d} 12:00"))
                for i, d in enumerate(days)
            ]
            + [passage(state, "garden", tags=["home"], created_at=day("2026-04-15 08:00"))]
        )
        april = (date(2026, 4, 1), date(2026, 4, 30))
        for tags, start in ((None, None), (["home"], None), (None, date(2026, 4, 12))):
            ranking, within = store.rank_passages_in_period(
                state.id, "garden rose", 3, tags, start, period=april, period_limit=2
            )
            assert ranking == store.rank_passages(state.id, "garden rose", 3, tags, start)
            low = max(start or april[0], april[0])
            alone = store.rank_passages(state.id, "garden rose", 2, tags, low, april[1])
            assert within is None or within == alone.scored
        nothing = store.rank_passages_in_period(state.id, "", 3, period=april, period_limit=2)
        assert nothing[0] == ([], 0, True) and not nothing[1]


class VectorContract(ContractBase):
    def test_vectors_load_in_order_from_a_cursor(self, store):
        state = new_agent(store)
        first = embedded(["apples", "pears"])
        store.add_vectors(state.id, "passage", [1, 2], first)
        assert tuple(store.vector_counters(state.id)) == (2, 0)
        loaded = store.load_vectors(state.id, "passage", 0, DIMENSION)
        assert loaded.seqs.tolist() == [1, 2]
        assert loaded.matrix.dtype == np.float32 and np.array_equal(loaded.matrix, first)
        store.add_vectors(state.id, "passage", [3], embedded(["plums"]))
        store.add_vectors(state.id, "message", [1], embedded(["hello"]))
        since = store.load_vectors(state.id, "passage", loaded.cursor, DIMENSION)
        assert since.seqs.tolist() == [3] and np.array_equal(since.matrix, embedded(["plums"]))
        nothing = store.load_vectors(state.id, "passage", since.cursor, DIMENSION)
        assert len(nothing.seqs) == 0 and nothing.cursor == since.cursor
        assert store.load_vectors(state.id, "message", 0, DIMENSION).seqs.tolist() == [1]
        assert tuple(store.vector_counters("agent-ghost")) == (0, 0)

    def test_removing_an_item_removes_its_vector(self, store):
        state = new_agent(store)
        kept, dropped = passage(state, "kept"), passage(state, "dropped")
        store.add_passages([kept, dropped])
        messages = [said(state, "hello"), said(state, "edited"), said(state, "popped")]
        store.add_messages(messages)
        store.add_vectors(state.id, "passage", [kept.seq, dropped.seq], embedded(["k", "d"]))
        store.add_vectors(state.id, "message", [m.seq for m in messages], embedded(["a", "b", "c"]))
        store.delete_passage(state.id, dropped.id)
        store.update_message(messages[1].model_copy(update={"content": "changed"}))
        store.delete_messages_from(state.id, messages[2].seq or 0)
        assert store.vector_counters(state.id).deletes == 3
        assert store.load_vectors(state.id, "passage", 0, DIMENSION).seqs.tolist() == [kept.seq]
        left = store.load_vectors(state.id, "message", 0, DIMENSION)
        assert left.seqs.tolist() == [messages[0].seq]
        assert store.unembedded_messages(state.id, 10) == [(messages[1].seq, "changed")]
        store.delete_vectors(state.id)
        assert store.load_vectors(state.id, "passage", 0, DIMENSION).seqs.tolist() == []
        assert [p.id for p in store.unembedded_passages(state.id, 10)] == [kept.id]

    def test_unembedded_items_are_the_ones_without_a_vector(self, store):
        state = new_agent(store)
        passages = [passage(state, f"p{i}") for i in range(4)]
        store.add_passages(passages)
        messages = [
            said(state, "question"),
            said(state, "a tool result", role="tool", tool_call_id="c"),
            said(state, "answer", role="assistant"),
        ]
        store.add_messages(messages)
        assert [p.id for p in store.unembedded_passages(state.id, 3)] == [
            p.id for p in passages[:3]
        ]
        store.add_vectors(state.id, "passage", [p.seq for p in passages[:2]], embedded(["a", "b"]))
        assert [p.id for p in store.unembedded_passages(state.id, 10)] == [
            p.id for p in passages[2:]
        ]
        assert store.unembedded_messages(state.id, 10) == [
            (messages[0].seq, "question"),
            (messages[2].seq, "answer"),
        ]
        store.add_passage(late := passage(state, "late"))
        assert [p.id for p in store.unembedded_passages(state.id, 10)][-1] == late.id

    def test_a_rolled_back_write_does_not_hide_passages_from_embedding(self, store):
        """Seen inside a write that rolls back, a passage with a vector must
        not vouch for a passage stored later (it may reuse its seq)."""
        state = new_agent(store)
        first = passage(state, "first")
        store.add_passage(first)
        store.add_vectors(state.id, "passage", [first.seq], embedded(["first"]))
        with pytest.raises(RuntimeError), store.transaction():
            doomed = passage(state, "rolled back")
            store.add_passage(doomed)
            store.add_vectors(state.id, "passage", [doomed.seq], embedded(["doomed"]))
            assert store.unembedded_passages(state.id, 10) == []
            with store.transaction():  # a nested write that succeeds, in the one that fails
                store.update_agent(state.id, lambda s: setattr(s, "summary", "rolled back"))
            raise RuntimeError("the step failed")
        store.add_passage(passage(state, "second"))
        assert [p.text for p in store.unembedded_passages(state.id, 10)] == ["second"]

    def test_vector_search_finds_the_nearest_passage(self, store):
        """Through the in-memory index the agent uses, with the fake embedder."""
        state = new_agent(store)
        texts = [
            "The car is parked in the garage.",
            "Alice likes oolong tea in the morning.",
            "The meeting moved to Thursday afternoon.",
            "Bob's favourite colour is green.",
        ]
        passages = [passage(state, t) for t in texts]
        store.add_passages(passages)
        store.add_vectors(state.id, "passage", [p.seq for p in passages], embedded(texts))
        index = VectorIndex(store, state.id, "passage", DIMENSION)
        query = np.array(fake_embedding("where is the car parked", DIMENSION), dtype=np.float32)
        hits = index.search(query, 2)
        assert hits.ranked[0] == passages[0].seq and hits.similarity(passages[0].seq) == 1.0
        late = passage(state, "Tea time is at four: oolong again.")
        store.add_passage(late)
        store.add_vectors(state.id, "passage", [late.seq], embedded([late.text]))
        tea = np.array(fake_embedding("oolong tea time", DIMENSION), dtype=np.float32)
        assert index.search(tea, 1).ranked == [late.seq]  # stored after the index loaded
        store.delete_passage(state.id, late.id)
        assert late.seq not in index.search(tea, 4).ranked
        assert index.size == 4
