"""The storage calls a step makes, on both backends: the lock taken with what
the step starts from (`start_step`), or the agent and its newest message read
in one call (`agent_and_newest_message`), an answer stored with
what it cost in one (`add_messages(messages, usage)`), what the next request
is built from read in one (`main_context`), and the step's lock given up with
its last write (`add_messages(..., release_lock=...)`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.backends import open_db
from support.contract.base import new_agent, said
from support.contract.usage import spent

from memgpt_lite.errors import ConflictError, NotFoundError
from memgpt_lite.models import AgentState, LLMConfig
from memgpt_lite.storage.protocol import MainContext, StepLockHolder, StepStart, Storage


@pytest.fixture
def store(db_location: str) -> Iterator[Storage]:
    opened = open_db(db_location)
    yield opened
    opened.close()


def test_an_answer_and_its_usage_are_stored_together(store: Storage):
    sam = new_agent(store)
    answer = [said(sam, "hello", role="assistant"), said(sam, "done", role="tool")]
    store.add_messages(answer, spent(sam, "step-1", "gpt-4o-mini", 100, 5))
    assert [m.seq for m in answer] == [m.seq for m in store.messages_from(sam.id, 0)]
    assert answer[0].seq is not None and answer[0].seq < answer[1].seq
    assert [r.prompt_tokens for r in store.step_usage(sam.id, "step-1")] == [100]


def test_usage_of_an_unknown_agent_stores_nothing_of_the_answer(store: Storage):
    sam = new_agent(store)
    ghost = AgentState(name="ghost", llm=LLMConfig(model="m"), system="s")
    with pytest.raises(NotFoundError, match=ghost.id):
        store.add_messages([said(sam, "hello")], spent(ghost, "step-1", "m", 1, 1))
    assert store.messages_from(sam.id, 0) == []
    assert store.agent_stats(sam.id).message_count == 0


def test_an_answer_of_an_unknown_agent_stores_nothing(store: Storage):
    sam = new_agent(store)
    ghost = AgentState(name="ghost", llm=LLMConfig(model="m"), system="s")
    with pytest.raises(NotFoundError, match=ghost.id):
        store.add_messages([said(ghost, "hello")], spent(ghost, "step-1", "m", 1, 1))
    with pytest.raises(NotFoundError, match=ghost.id):
        store.add_messages([said(sam, "hi"), said(ghost, "hello")])
    assert store.messages_from(sam.id, 0) == []
    assert store.agent_usage(sam.id) == []


def test_an_unknown_agents_answer_inside_a_transaction_leaves_the_rest(store: Storage):
    sam = new_agent(store)
    ghost = AgentState(name="ghost", llm=LLMConfig(model="m"), system="s")
    with store.transaction():
        store.add_messages([said(sam, "kept")])
        with pytest.raises(NotFoundError, match=ghost.id):
            store.add_messages([said(ghost, "lost")], spent(ghost, "step-1", "m", 1, 1))
        store.add_messages([said(sam, "also kept")], spent(sam, "step-1", "m", 2, 2))
    assert [m.content for m in store.messages_from(sam.id, 0)] == ["kept", "also kept"]
    assert [r.prompt_tokens for r in store.agent_usage(sam.id)] == [2]


def test_the_main_context_is_the_window_the_blocks_and_the_stats(store: Storage):
    sam = new_agent(store)
    store.add_messages([said(sam, f"message {i}") for i in range(5)])
    start = store.messages_from(sam.id, 0)[2].seq
    assert store.main_context(sam.id, start) == MainContext(
        store.messages_from(sam.id, start), store.get_blocks(sam.id), store.agent_stats(sam.id)
    )


def test_the_main_context_adding_a_message_stores_it_first_and_reads_it(store: Storage):
    sam = new_agent(store)
    store.add_messages([said(sam, f"message {i}") for i in range(3)])
    store.main_context(sam.id, 0)  # a window kept by the store, which must see the new one
    user = said(sam, "the step's question")
    read = store.main_context(sam.id, 0, adding=[user])
    assert user.seq is not None
    stored = store.messages_from(sam.id, 0)
    assert [m.content for m in stored][-1] == "the step's question" and stored[-1].seq == user.seq
    assert read == MainContext(stored, store.get_blocks(sam.id), store.agent_stats(sam.id))
    assert read.stats.message_count == 4
    with store.transaction():  # inside a caller's transaction, read after it too
        inner = store.main_context(sam.id, 0, adding=[said(sam, "inside")])
        assert [m.content for m in inner.messages][-1] == "inside"
    assert store.agent_stats(sam.id).message_count == 5


def test_the_main_context_adding_an_unknown_agents_message_stores_none(store: Storage):
    sam = new_agent(store)
    ghost = AgentState(name="ghost", llm=LLMConfig(model="m"), system="s")
    with pytest.raises(NotFoundError, match=ghost.id):
        store.main_context(ghost.id, 0, adding=[said(ghost, "lost")])
    with pytest.raises(NotFoundError, match=ghost.id):
        store.main_context(sam.id, 0, adding=[said(sam, "kept?"), said(ghost, "lost")])
    assert store.messages_from(sam.id, 0) == []
    assert store.agent_stats(sam.id).message_count == 0


def test_the_main_context_of_an_unknown_agent_is_not_found(store: Storage):
    with pytest.raises(NotFoundError, match="agent-nobody"):
        store.main_context("agent-nobody", 0)


def test_a_step_starts_from_the_agent_and_its_newest_message(store: Storage):
    sam = new_agent(store)
    assert store.agent_and_newest_message(sam.id) == (store.get_agent(sam.id), None, False)
    store.add_messages([said(sam, "first"), said(sam, "newest", role="assistant")])
    state, newest, _ = store.agent_and_newest_message(sam.id)
    assert (state, newest) == (store.get_agent(sam.id), store.last_messages(sam.id, 1)[0])
    assert newest is not None and newest.content == "newest"


def test_a_step_of_an_unknown_agent_starts_from_nothing(store: Storage):
    with pytest.raises(NotFoundError, match="no agent named 'agent-nobody'"):
        store.agent_and_newest_message("agent-nobody")


def claim(token: str) -> StepLockHolder:
    return StepLockHolder(token=token, pid=4321, hostname="far-host", host_id="far-host")


def test_a_steps_last_write_gives_its_lock_up(store: Storage):
    sam = new_agent(store)
    assert store.take_step_lock(sam.id, claim("mine"), 60, lambda _: False) is None
    store.add_messages([said(sam, "bye", role="assistant")], release_lock=(sam.id, "mine"))
    assert store.step_lock_holder(sam.id) is None
    assert [m.content for m in store.messages_from(sam.id, 0)] == ["bye"]


def test_a_last_write_whose_lock_was_taken_over_stores_nothing(store: Storage, db_location: str):
    sam = new_agent(store)
    assert store.take_step_lock(sam.id, claim("mine"), 60, lambda _: False) is None
    with open_db(db_location) as elsewhere:  # the lease ran out; another host took over
        assert elsewhere.take_step_lock(sam.id, claim("theirs"), 60, lambda _: True) is None
    with pytest.raises(ConflictError, match="taken over"):
        store.add_messages([said(sam, "too late")], release_lock=(sam.id, "mine"))
    assert store.messages_from(sam.id, 0) == []
    assert store.step_lock_holder(sam.id).token == "theirs"


def test_a_lock_is_given_up_by_a_write_of_its_own_only(store: Storage):
    sam = new_agent(store)
    assert store.take_step_lock(sam.id, claim("mine"), 60, lambda _: False) is None
    with store.transaction():
        with pytest.raises(RuntimeError, match="outside any transaction"):
            store.add_messages([said(sam, "inside")], release_lock=(sam.id, "mine"))
        store.add_messages([said(sam, "kept")])
    assert store.step_lock_holder(sam.id).token == "mine"
    assert [m.content for m in store.messages_from(sam.id, 0)] == ["kept"]


def test_a_step_starts_by_taking_its_lock_and_reading_what_it_starts_from(store: Storage):
    sam = new_agent(store)
    store.add_messages([said(sam, "newest")])
    start = store.start_step(sam.id, claim("mine"), 60, lambda _: False)
    assert start == StepStart(store.get_agent(sam.id), store.last_messages(sam.id, 1)[0])
    assert store.step_lock_holder(sam.id).token == "mine"


def test_a_step_that_finds_its_lock_held_reads_nothing(store: Storage, db_location: str):
    sam = new_agent(store)
    with open_db(db_location) as elsewhere:
        assert elsewhere.take_step_lock(sam.id, claim("theirs"), 60, lambda _: False) is None
    holder = store.start_step(sam.id, claim("mine"), 60, lambda _: False)
    assert isinstance(holder, StepLockHolder) and holder.token == "theirs"
    # A holder that is dead loses the lock; what was read before is read again.
    start = store.start_step(sam.id, claim("mine"), 60, lambda _: True)
    assert start == StepStart(store.get_agent(sam.id), None)
    assert store.step_lock_holder(sam.id).token == "mine"
    with pytest.raises(NotFoundError):
        store.start_step("agent-nobody", claim("mine"), 60, lambda _: False)
