"""The contract for block history: every value a block held, with its author."""

from __future__ import annotations

import pytest

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import Block, BlockVersion
from support.contract.base import ContractBase, day, new_agent


def values(history: list[BlockVersion]) -> list[tuple[str, str]]:
    return [(v.value, v.author) for v in history]


class BlockHistoryContract(ContractBase):
    def test_a_created_block_starts_its_history_with_its_value(self, store):
        persona = Block(label="persona", value="p")
        new_agent(store, blocks=[persona])
        [first] = store.block_history(persona.id)
        assert (first.block_id, first.label, first.value, first.author) == (
            persona.id,
            "persona",
            "p",
            "create",
        )
        assert first.created_at == persona.updated_at and first.seq is not None
        imported = Block(label="persona", value="q")
        state = new_agent(store, "imported", blocks=[])
        store.attach_block(state.id, imported, author="import")
        assert values(store.block_history(imported.id)) == [("q", "import")]

    def test_each_new_value_is_a_version_by_its_author_and_a_same_value_is_not(self, store):
        notes = Block(label="notes", value="a")
        new_agent(store, blocks=[notes])
        notes.value = "a\nb"
        store.save_block(notes, author="agent:sam")
        notes.description = "only the description"
        store.save_block(notes, author="agent:sam")  # the value is the same: no version
        notes.value = "c"
        store.save_block(notes)  # a person, by default
        history = store.block_history(notes.id)
        assert values(history) == [("a", "create"), ("a\nb", "agent:sam"), ("c", "user")]
        assert history[-1].created_at == notes.updated_at
        seqs = [v.seq or 0 for v in history]
        assert seqs == sorted(seqs) and len(set(seqs)) == 3
        assert values(store.block_history(notes.id, limit=2)) == values(history[1:])

    def test_a_renamed_block_keeps_its_history_and_later_versions_carry_the_new_label(self, store):
        notes = Block(label="notes", value="a")
        new_agent(store, blocks=[notes])
        notes.label = "journal"
        store.save_block(notes)
        notes.value = "b"
        store.save_block(notes)
        assert [(v.label, v.value) for v in store.block_history(notes.id)] == [
            ("notes", "a"),
            ("journal", "b"),
        ]

    def test_a_shared_block_has_one_history_that_outlives_one_agent(self, store):
        team = Block(label="team", value="t")
        one = new_agent(store, "one", blocks=[team])
        two = new_agent(store, "two", blocks=[team])  # linked: no second first version
        team.value = "t2"
        store.save_block(team, author="agent:two")
        store.delete_agent(two.id)
        assert values(store.block_history(team.id)) == [("t", "create"), ("t2", "agent:two")]
        store.delete_agent(one.id)
        assert store.block_history(team.id) == []

    def test_a_detached_block_takes_its_history_with_it(self, store):
        state = new_agent(store)
        mine = Block(label="mine", value="m")
        store.attach_block(state.id, mine, author="agent:sam")
        mine.value = "n"
        store.save_block(mine, author="agent:sam")
        store.detach_block(state.id, mine.id)
        assert store.block_history(mine.id) == []

    def test_a_failed_save_keeps_no_version(self, store):
        notes = Block(label="notes", value="a")
        new_agent(store, blocks=[notes])
        with pytest.raises(RuntimeError), store.transaction():
            notes.value = "b"
            store.save_block(notes)
            raise RuntimeError("undone")
        assert values(store.block_history(notes.id)) == [("a", "create")]

    def test_set_block_history_replaces_it_as_given(self, store):
        notes = Block(label="notes", value="now")
        new_agent(store, blocks=[notes])
        given = [
            BlockVersion(
                block_id=notes.id,
                label="old",
                value="then",
                author="x",
                created_at=day("2024-01-02 03:04"),
            ),
            BlockVersion(block_id=notes.id, label="notes", value="now", author="user"),
        ]
        store.set_block_history(notes.id, given)
        history = store.block_history(notes.id)
        assert [v.model_dump(exclude={"seq"}) for v in history] == [
            v.model_dump(exclude={"seq"}) for v in given
        ]
        assert [v.seq for v in history] == [v.seq for v in given]
        with pytest.raises(NotFoundError):
            store.set_block_history("block-ghost", [])
        assert store.block_history("block-ghost") == []
