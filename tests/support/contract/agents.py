"""The contract for agents and their (shared) blocks."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from memgpt_lite.errors import AlreadyExistsError, ConflictError, NotFoundError
from memgpt_lite.models import AgentState, Block
from memgpt_lite.storage.protocol import StepLockHolder, Storage
from support.contract.base import ContractBase, new_agent, passage, said


def protocol_members() -> dict[str, inspect.Signature]:
    """The methods `Storage` declares, with their signatures."""
    names = [n for n, v in vars(Storage).items() if callable(v) and not n.startswith("_")]
    return {n: inspect.signature(getattr(Storage, n)) for n in [*names, "__enter__", "__exit__"]}


def signature_problems(name: str, wanted: inspect.Signature, got: inspect.Signature) -> list[str]:
    """How `got` fails to accept every call `wanted` allows."""
    problems = []
    given = got.parameters
    for parameter in list(wanted.parameters.values())[1:]:  # after self
        mine = given.get(parameter.name)
        if mine is None:
            if not any(p.kind is p.VAR_POSITIONAL for p in given.values()):
                problems.append(f"{name}: no parameter {parameter.name!r}")
            continue
        if mine.kind is not parameter.kind:
            problems.append(f"{name}({parameter.name}): {mine.kind} instead of {parameter.kind}")
        has_default = parameter.default is not inspect.Parameter.empty
        if has_default and mine.default is inspect.Parameter.empty:
            problems.append(f"{name}({parameter.name}): needs a default")
    for extra in given.keys() - wanted.parameters.keys():
        p = given[extra]
        optional = p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        if not optional:
            problems.append(f"{name}: extra parameter {extra!r} without a default")
    return problems


class AgentContract(ContractBase):
    def test_a_store_is_a_storage_with_every_method_of_the_protocol(self, store):
        assert isinstance(store, Storage)
        problems = []
        for name, wanted in protocol_members().items():
            method = getattr(store, name, None)
            if method is None:
                problems.append(f"{name}: missing")
                continue
            got = inspect.signature(getattr(type(store), name))
            problems += signature_problems(name, wanted, got)
        assert problems == []
        assert isinstance(store.read_only, bool) and store.read_only is False
        assert store.busy_timeout_seconds > 0

    def test_an_agent_reads_back_as_it_was_created(self, store):
        state = AgentState(
            name="sam",
            llm={"model": "gpt-4o-mini", "temperature": 0.3},
            system="You are Sam.",
            tool_names=["check_order"],
            summary="met Alice",
            context_start=3,
        )
        blocks = [Block(label="persona", value="p"), Block(label="human", value="h")]
        store.create_agent(state, blocks)
        assert state.block_ids == [b.id for b in blocks]
        for key in ("sam", state.id):
            got = store.get_agent(key)
            assert got.model_dump(exclude={"created_at", "updated_at"}) == state.model_dump(
                exclude={"created_at", "updated_at"}
            )
            assert got.created_at == state.created_at
        [(listed, stats)] = store.list_agents()
        assert listed.id == state.id and (stats.message_count, stats.passage_count) == (0, 0)
        assert [b.value for b in store.get_blocks(state.id)] == ["p", "h"]

    def test_agents_are_listed_by_name(self, store):
        for name in ("kim", "amy", "sam"):
            new_agent(store, name)
        assert [s.name for s, _ in store.list_agents()] == ["amy", "kim", "sam"]

    def test_a_taken_name_is_refused_and_nothing_is_stored(self, store):
        new_agent(store, "sam")
        fresh = Block(label="persona", value="other")
        with pytest.raises(AlreadyExistsError, match="'sam' already exists"):
            new_agent(store, "sam", blocks=[fresh])
        assert len(store.list_agents()) == 1
        with pytest.raises(NotFoundError):
            store.get_block(fresh.id)  # the failed create left nothing behind

    def test_unknown_agents_are_not_found(self, store):
        with pytest.raises(NotFoundError, match="ghost"):
            store.get_agent("ghost")
        with pytest.raises(NotFoundError):
            store.agent_stats("agent-ghost")
        with pytest.raises(NotFoundError):
            store.update_agent("agent-ghost", lambda state: None)
        assert store.get_blocks("agent-ghost") == []

    def test_a_stale_copy_is_not_saved_over_a_newer_one(self, store):
        first, second = new_agent(store), None
        second = store.get_agent(first.id)
        first.summary = "first"
        store.save_agent(first)
        second.summary = "second"
        with pytest.raises(ConflictError, match="nothing was saved"):
            store.save_agent(second)
        assert store.get_agent(first.id).summary == "first"
        first.summary = "again"  # the saved copy is current and may save again
        store.save_agent(first)
        assert store.get_agent(first.id).summary == "again"

    def test_every_write_moves_the_version_forward(self, store):
        state = new_agent(store)
        versions = [store.get_agent(state.id).updated_at]
        store.save_agent(state)
        versions.append(store.get_agent(state.id).updated_at)
        store.update_agent(state.id, lambda s: setattr(s, "summary", "x"))
        versions.append(store.get_agent(state.id).updated_at)
        assert versions == sorted(versions) and len(set(versions)) == 3

    def test_update_changes_the_stored_agent_not_a_copy(self, store):
        stale = new_agent(store)
        store.update_agent(stale.id, lambda s: setattr(s, "summary", "by another process"))

        def add_tool(state: AgentState) -> None:
            state.tool_names.append("search")

        updated = store.update_agent(stale.id, add_tool)
        assert (updated.summary, updated.tool_names) == ("by another process", ["search"])
        assert store.get_agent(stale.id).tool_names == ["search"]
        with pytest.raises(ConflictError):
            store.save_agent(stale)

    def test_an_update_that_raises_stores_nothing(self, store):
        state = new_agent(store)

        def half_done(state: AgentState) -> None:
            state.summary = "half"
            raise ValueError("the change failed")

        with pytest.raises(ValueError, match="the change failed"):
            store.update_agent(state.id, half_done)
        assert store.get_agent(state.id).summary == ""

    def test_saving_a_deleted_agent_is_not_found(self, store):
        state = new_agent(store)
        store.delete_agent(state.id)
        with pytest.raises(NotFoundError):
            store.save_agent(state)

    def test_rename(self, store):
        sam, _ = new_agent(store, "sam"), new_agent(store, "kim")
        renamed = store.rename_agent(sam.id, "sammy")
        assert renamed.name == "sammy" and store.get_agent("sammy").id == sam.id
        with pytest.raises(NotFoundError):
            store.get_agent("sam")
        with pytest.raises(AlreadyExistsError, match="'kim' already exists"):
            store.rename_agent(sam.id, "kim")
        assert store.get_agent(sam.id).name == "sammy"
        with pytest.raises(NotFoundError):
            store.rename_agent("agent-ghost", "ghost")

    def test_delete_takes_everything_of_the_agent_and_keeps_what_is_shared(self, store, open_store):
        team, own = Block(label="team", value="t"), Block(label="own")
        one = new_agent(store, "one", blocks=[team, own])
        two = new_agent(store, "two", blocks=[team])
        store.add_messages([said(one, "hi"), said(two, "hello")])
        store.add_passages([passage(one, "one's passage"), passage(two, "two's passage")])
        store.add_vectors(one.id, "passage", [1], np.ones((1, 4), dtype=np.float32))
        # Held through another handle: a store holding it would refuse to
        # commit the delete (the lock it renews on every commit would be gone).
        claim = StepLockHolder(token="t", pid=1, hostname="h", host_id="h")
        assert open_store().take_step_lock(one.id, claim, 60, lambda _: False) is None
        store.delete_agent(one.id)
        with pytest.raises(NotFoundError):
            store.get_agent(one.id)
        assert store.messages_from(one.id, 0) == [] and store.list_passages(one.id, 10)[1] == 0
        assert store.search_messages(two.id, "hello", 5)[1] == 1
        assert store.search_messages(one.id, "hi", 5)[1] == 0
        assert tuple(store.vector_counters(one.id)) == (0, 0)
        assert store.step_lock_holder(one.id) is None
        assert [b.label for b in store.get_blocks(two.id)] == ["team"]
        assert store.block_owners(team.id) == ["two"]
        with pytest.raises(NotFoundError):
            store.get_block(own.id)
        store.delete_agent(one.id)  # again: nothing to do

    def test_stats_follow_messages_and_passages(self, store):
        state = new_agent(store)
        store.add_messages([said(state, f"m{i}") for i in range(3)])
        store.add_passages([passage(state, "a passage")])
        stats = store.agent_stats(state.id)
        assert (stats.message_count, stats.passage_count) == (3, 1)
        assert stats.last_active is not None and stats.memory_updated_at is not None
        store.delete_messages_from(state.id, 0)
        assert store.agent_stats(state.id).message_count == 0
        [(_, listed)] = store.list_agents()
        assert (listed.message_count, listed.passage_count) == (0, 1)


class BlockContract(ContractBase):
    def test_a_shared_block_edited_through_one_agent_changes_for_both(self, store):
        team = Block(label="team", value="old")
        one = new_agent(store, "one", blocks=[Block(label="persona"), team])
        two = new_agent(store, "two", blocks=[team])
        assert store.block_owners(team.id) == ["one", "two"]
        before = team.updated_at
        edited = store.get_blocks(two.id)[0]
        edited.value = "new"
        store.save_block(edited)
        assert edited.updated_at > before
        assert [b.value for b in store.get_blocks(one.id)] == ["", "new"]
        assert store.get_block(team.id).value == "new"
        for agent in (one, two):
            assert store.agent_stats(agent.id).memory_updated_at == edited.updated_at

    def test_attach_appends_and_shares(self, store):
        one, two = new_agent(store, "one"), new_agent(store, "two")
        notes = Block(label="notes", value="n")
        store.attach_block(one.id, notes)
        assert [b.label for b in store.get_blocks(one.id)] == ["persona", "human", "notes"]
        store.attach_block(two.id, store.get_block(notes.id))
        assert store.block_owners(notes.id) == ["one", "two"]
        with pytest.raises(AlreadyExistsError, match="'notes'"):
            store.attach_block(one.id, Block(label="notes"))
        with pytest.raises(NotFoundError):
            store.attach_block("agent-ghost", Block(label="x"))
        assert [b.label for b in store.get_blocks(one.id)] == ["persona", "human", "notes"]

    def test_detach_unlinks_and_deletes_a_block_no_one_holds(self, store):
        one, two = new_agent(store, "one"), new_agent(store, "two")
        team, mine = Block(label="team"), Block(label="mine")
        store.attach_block(one.id, team)
        store.attach_block(two.id, store.get_block(team.id))
        store.attach_block(one.id, mine)
        store.detach_block(one.id, team.id)
        assert [b.label for b in store.get_blocks(one.id)] == ["persona", "human", "mine"]
        assert store.block_owners(team.id) == ["two"]
        store.detach_block(one.id, mine.id)
        with pytest.raises(NotFoundError):
            store.get_block(mine.id)
        store.detach_block(one.id, team.id)  # not held: nothing changes
        assert store.get_block(team.id).label == "team"

    def test_save_block_stores_a_new_block(self, store):
        block = Block(label="loose", value="v", limit=100, description="d", read_only=True)
        store.save_block(block)
        got = store.get_block(block.id)
        assert got.model_dump() == block.model_dump()
        assert store.block_owners(block.id) == []

    def test_an_unknown_block_is_not_found(self, store):
        with pytest.raises(NotFoundError):
            store.get_block("block-ghost")
        assert store.block_owners("block-ghost") == []
