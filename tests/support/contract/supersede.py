"""The contract for facts that change: a passage superseded by a newer one."""

from __future__ import annotations

import pytest

from memgpt_lite.errors import ConfigError, NotFoundError
from memgpt_lite.models import Passage
from support.contract.base import ContractBase, day, new_agent, passage


def ids(page: tuple[list[Passage], int]) -> list[str]:
    return [p.id for p in page[0]]


class SupersedeContract(ContractBase):
    def test_a_superseded_passage_is_kept_with_when_and_by_what(self, store):
        state = new_agent(store)
        old, other = passage(state, "Sam lives in Leeds."), passage(state, "Sam has a cat.")
        new = passage(state, "Sam moved to Berlin.")
        store.add_passages([old, other, new])
        at = day("2026-03-02 10:00")
        store.supersede_passages(state.id, [old.id], new.id, at)
        kept = store.get_passage(state.id, old.id)
        assert (kept.superseded_by, kept.superseded_at, kept.text) == (new.id, at, old.text)
        assert store.get_passage(state.id, new.id).superseded_by is None
        assert store.passages_replaced_by(state.id, new.id) == [kept]
        assert store.passages_replaced_by(state.id, other.id) == []
        assert store.agent_stats(state.id).passage_count == 3
        assert ids(store.list_passages(state.id, 10, superseded=True)) == [old.id]
        assert ids(store.list_passages(state.id, 10, superseded=False)) == [new.id, other.id]
        assert store.list_passages(state.id, 10)[1] == 3
        by_seq = store.passages_by_seq(state.id, [old.seq or 0, new.seq or 0], superseded=False)
        assert list(by_seq) == [new.seq]

    def test_search_can_keep_only_current_or_only_replaced_passages(self, store):
        state = new_agent(store)
        old, new = passage(state, "Sam works at Acme."), passage(state, "Sam works at Initech.")
        store.add_passages([old, new])
        store.supersede_passages(state.id, [old.id], new.id, day("2026-03-02 10:00"))
        every = store.rank_passages(state.id, "works", 10)
        assert every.total == 2
        current = store.rank_passages(state.id, "works", 10, superseded=False)
        assert [p.id for p, _ in current.scored] == [new.id] and current.total == 1
        replaced = store.rank_passages(state.id, "works", 10, superseded=True)
        assert [p.id for p, _ in replaced.scored] == [old.id] and replaced.total == 1
        assert replaced.scored[0][0].superseded_by == new.id

    def test_a_bad_supersession_changes_nothing(self, store):
        state, kim = new_agent(store), new_agent(store, "kim")
        old, new = passage(state, "old fact"), passage(state, "new fact")
        kims = passage(kim, "kim's fact")
        store.add_passages([old, new])
        store.add_passage(kims)
        at = day("2026-03-02 10:00")
        with pytest.raises(ConfigError, match="itself"):
            store.supersede_passages(state.id, [old.id, new.id], new.id, at)
        with pytest.raises(NotFoundError, match="passage-ghost"):
            store.supersede_passages(state.id, [old.id, "passage-ghost"], new.id, at)
        with pytest.raises(NotFoundError):  # another agent's passage is unknown here
            store.supersede_passages(state.id, [kims.id], new.id, at)
        with pytest.raises(NotFoundError):
            store.supersede_passages(state.id, [old.id], kims.id, at)
        assert store.list_passages(state.id, 10, superseded=True) == ([], 0)
        assert store.get_passage(kim.id, kims.id).superseded_by is None

    def test_a_chain_of_replacements_never_loops(self, store):
        state = new_agent(store)
        first, second, third = (passage(state, t) for t in ("Leeds", "Berlin", "Oslo"))
        store.add_passages([first, second, third])
        store.supersede_passages(state.id, [first.id], second.id, day("2026-01-01 00:00"))
        with pytest.raises(ConfigError, match="only a current passage"):
            store.supersede_passages(state.id, [second.id], first.id, day("2026-02-01 00:00"))
        store.supersede_passages(state.id, [second.id], third.id, day("2026-02-01 00:00"))
        assert store.get_passage(state.id, second.id).superseded_by == third.id
        assert store.get_passage(state.id, first.id).superseded_by == second.id

    def test_supersession_commits_and_rolls_back_with_the_insert(self, store):
        state = new_agent(store)
        old = passage(state, "Sam lives in Leeds.")
        store.add_passage(old)
        with pytest.raises(RuntimeError), store.transaction():
            doomed = passage(state, "Sam lives in York.")
            store.add_passage(doomed)
            store.supersede_passages(state.id, [old.id], doomed.id, day("2026-03-02 10:00"))
            raise RuntimeError("the step failed")
        assert store.get_passage(state.id, old.id).superseded_by is None
        assert store.list_passages(state.id, 10)[1] == 1

    def test_deleting_a_replacement_hands_on_what_it_replaced(self, store):
        state = new_agent(store)
        first, second, third = (passage(state, t) for t in ("Leeds", "Berlin", "Oslo"))
        store.add_passages([first, second, third])
        store.supersede_passages(state.id, [first.id], second.id, day("2026-01-01 00:00"))
        store.supersede_passages(state.id, [second.id], third.id, day("2026-02-01 00:00"))
        store.delete_passage(state.id, second.id)
        moved = store.get_passage(state.id, first.id)
        assert (moved.superseded_by, moved.superseded_at) == (third.id, day("2026-01-01 00:00"))
        store.delete_passage(state.id, third.id)
        restored = store.get_passage(state.id, first.id)
        assert (restored.superseded_by, restored.superseded_at) == (None, None)

    def test_a_passage_stored_as_superseded_reads_back_whole(self, store):
        """As copying a database or importing an agent stores them."""
        state = new_agent(store)
        new = passage(state, "new")
        old = passage(state, "old", superseded_by=new.id, superseded_at=day("2026-03-02 10:00"))
        store.add_passages([new, old])
        assert store.get_passage(state.id, old.id) == old
        assert store.passages_replaced_by(state.id, new.id) == [old]
