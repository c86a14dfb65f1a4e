"""The contract for standalone blocks: a block made on its own belongs to a
user, is reached by that user only, and outlives the agents that hold it."""

from __future__ import annotations

import pytest

from memgpt_lite.errors import AlreadyExistsError, NotFoundError
from memgpt_lite.models import AgentState, Block, LLMConfig
from memgpt_lite.storage.protocol import Storage
from support.contract.base import ContractBase


def owned_agent(store: Storage, name: str, owner: str) -> AgentState:
    state = AgentState(name=name, owner=owner, llm=LLMConfig(model="gpt-4o-mini"), system="s")
    store.create_agent(state, [Block(label="persona", value="p")])
    return state


class StandaloneBlockContract(ContractBase):
    def test_a_created_block_reads_back_with_its_first_version(self, store):
        notes = Block(label="notes", value="v", limit=50, description="d")
        store.create_block(notes, "alice", author="alice")
        assert store.get_block(notes.id).model_dump() == notes.model_dump()
        assert store.user_block(notes.id, "alice").value == "v"
        assert [(v.value, v.author) for v in store.block_history(notes.id)] == [("v", "alice")]
        assert store.block_owners(notes.id) == []
        with pytest.raises(AlreadyExistsError):
            store.create_block(Block(id=notes.id, label="other"), "alice")
        assert store.get_block(notes.id).label == "notes"

    def test_a_user_reaches_their_own_blocks_and_their_agents_blocks_only(self, store):
        mine, theirs = Block(label="mine"), Block(label="theirs")
        store.create_block(mine, "alice")
        store.create_block(theirs, "bob")
        agent = owned_agent(store, "helper", "alice")
        [persona] = store.get_blocks(agent.id)
        assert [b.id for b in store.user_blocks("alice")] == [mine.id, persona.id]  # oldest first
        assert [b.id for b in store.user_blocks("bob")] == [theirs.id]
        assert store.user_blocks("carol") == []
        for block_id in (theirs.id, "block-ghost"):
            with pytest.raises(NotFoundError, match=f"^no block with id '{block_id}'$"):
                store.user_block(block_id, "alice")
        assert store.user_block(persona.id, "alice").label == "persona"

    def test_a_standalone_block_outlives_detach_and_agent_deletion(self, store):
        shared = Block(label="shared", value="s")
        store.create_block(shared, "alice")
        one, two = owned_agent(store, "one", "alice"), owned_agent(store, "two", "alice")
        store.attach_block(one.id, store.get_block(shared.id))
        store.attach_block(two.id, store.get_block(shared.id))
        store.detach_block(one.id, shared.id)
        store.delete_agent(two.id)
        assert store.get_block(shared.id).value == "s"
        assert store.block_owners(shared.id) == []
        [one_persona] = [b.id for b in store.get_blocks(one.id)]
        assert {b.id for b in store.user_blocks("alice")} == {shared.id, one_persona}

    def test_deleting_a_block_detaches_it_from_its_agents(self, store):
        shared = Block(label="shared", value="s")
        store.create_block(shared, "alice")
        agent = owned_agent(store, "one", "alice")
        store.attach_block(agent.id, store.get_block(shared.id))
        before = store.agent_stats(agent.id).memory_updated_at
        store.delete_block(shared.id)
        with pytest.raises(NotFoundError):
            store.get_block(shared.id)
        assert store.block_history(shared.id) == []
        assert [b.label for b in store.get_blocks(agent.id)] == ["persona"]
        assert store.get_agent(agent.id).block_ids == [store.get_blocks(agent.id)[0].id]
        after = store.agent_stats(agent.id).memory_updated_at
        assert after is not None and (before is None or after > before)
        with pytest.raises(NotFoundError, match="block-ghost"):
            store.delete_block("block-ghost")
