"""The contract for groups of agents: stored whole, members in order, one
per main agent, per owner, gone with the main agent, left by a member."""

from __future__ import annotations

import pytest

from memgpt_lite.conversations import Conversation
from memgpt_lite.errors import AlreadyExistsError, NotFoundError
from memgpt_lite.models import utcnow
from memgpt_lite.storage.protocols.groups import AgentGroup
from support.contract.base import ContractBase, OpenStore
from support.contract.keys import owned


class GroupContract(ContractBase):
    def test_a_group_is_stored_updated_and_found_by_its_agents(self, store, open_store: OpenStore):
        main, helper, other = (owned(store, n, "alice") for n in ("main", "helper", "other"))
        group = AgentGroup(
            owner="alice",
            manager_type="voice_sleeptime",
            manager_agent_id=main.id,
            agent_ids=[helper.id, other.id],
            max_message_buffer_length=30,
        )
        store.save_group(group)
        group.frequency, group.processed_seq, group.agent_ids = 2, 7, [other.id, helper.id]
        group.last_run_at, group.last_error = utcnow(), "the model failed"
        store.save_group(group)
        read = open_store().get_group(group.id, "alice")
        assert read.model_dump(exclude={"updated_at"}) == group.model_dump(exclude={"updated_at"})
        assert [g.id for g in store.agent_groups(helper.id)] == [group.id]
        assert [g.id for g in store.agent_groups(main.id)] == [group.id]
        with pytest.raises(NotFoundError, match="no group with id"):
            store.get_group(group.id, "bob")
        with pytest.raises(AlreadyExistsError, match="one group per main agent"):
            store.save_group(AgentGroup(owner="alice", manager_agent_id=main.id))
        with pytest.raises(NotFoundError, match="no agent with id"):
            store.save_group(AgentGroup(owner="alice", manager_agent_id="agent-gone"))
        assert [g.id for g in store.list_groups("alice")] == [group.id]

    def test_groups_go_with_their_main_agent_and_lose_deleted_members(self, store):
        first, second, helper = (owned(store, n, "alice") for n in ("first", "second", "helper"))
        mine = AgentGroup(owner="alice", manager_agent_id=first.id, agent_ids=[helper.id])
        theirs = AgentGroup(owner="alice", manager_agent_id=second.id, agent_ids=[helper.id])
        store.save_group(mine)
        store.save_group(theirs)
        assert [g.id for g in store.list_groups()] == [mine.id, theirs.id]
        assert store.list_groups("bob") == []
        store.delete_agent(helper.id)
        assert [g.agent_ids for g in store.list_groups("alice")] == [[], []]
        store.delete_agent(first.id)
        assert [g.id for g in store.list_groups("alice")] == [theirs.id]
        store.delete_group(theirs.id)
        store.delete_group(theirs.id)  # gone already: nothing changes
        assert store.list_groups() == [] and store.agent_groups(second.id) == []

    def test_a_step_starts_knowing_whether_its_agent_is_a_groups_main_agent(self, store):
        main, helper = (owned(store, n, "alice") for n in ("main", "helper"))
        assert store.agent_and_newest_message(main.id).manages_group is False
        store.save_group(AgentGroup(owner="alice", manager_agent_id=main.id, agent_ids=[helper.id]))
        assert store.agent_and_newest_message(main.id).manages_group is True
        assert store.agent_and_newest_message(helper.id).manages_group is False
        conversation = store.create_conversation(Conversation(agent_id=main.id))
        started = store.agent_and_newest_message(main.id, conversation.id)
        assert started.manages_group is True and started.state.conversation_id == conversation.id
