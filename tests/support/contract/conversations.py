"""The contract for an agent's conversations: each its own messages, window,
summary and step lock, over the agent's one row and memory; the agent's
history from before is its default conversation."""

from __future__ import annotations

import pytest

from memgpt_lite.conversations import Conversation
from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import AgentState
from support.contract.base import ContractBase, contents, new_agent, said
from support.contract.transactions import alive, holder


def talk(agent: AgentState, conversation: str | None, *texts: str) -> list:
    return [said(agent, text, conversation_id=conversation) for text in texts]


class ConversationContract(ContractBase):
    def test_a_conversation_reads_back_and_lists_with_its_agent(self, store):
        sam, kim = new_agent(store), new_agent(store, "kim")
        first = store.create_conversation(Conversation(agent_id=sam.id, summary="trip"))
        second = store.create_conversation(Conversation(agent_id=sam.id))
        store.create_conversation(Conversation(agent_id=kim.id))
        assert first.id.startswith("conv-")
        assert store.get_conversation(first.id).model_dump() == first.model_dump()
        assert [c.id for c in store.list_conversations(sam.id)] == [first.id, second.id]
        changed = store.update_conversation_summary(first.id, "the trip to Oslo")
        assert changed.summary == "the trip to Oslo" and changed.updated_at >= first.updated_at
        assert store.get_conversation(first.id).summary == "the trip to Oslo"
        with pytest.raises(NotFoundError):
            store.create_conversation(Conversation(agent_id="agent-ghost"))
        with pytest.raises(NotFoundError):
            store.get_conversation("conv-ghost")
        with pytest.raises(NotFoundError):
            store.update_conversation_summary("conv-ghost", "x")

    def test_conversations_list_by_agent_or_owner_with_their_newest_message_time(self, store):
        sam, kim = new_agent(store), new_agent(store, "kim")
        bob = AgentState(name="bob", llm=sam.llm, system="s", owner="bob")
        store.create_agent(bob, [])
        quiet = store.create_conversation(Conversation(agent_id=sam.id)).id
        busy = store.create_conversation(Conversation(agent_id=kim.id)).id
        store.create_conversation(Conversation(agent_id=bob.id))
        first, last = talk(kim, busy, "one", "two")
        store.add_messages([first, last, *talk(kim, None, "elsewhere")])
        assert store.get_conversation(busy).last_message_at == last.created_at
        assert store.get_conversation(quiet).last_message_at is None
        mine = store.list_conversations(owner=sam.owner)
        assert [(c.id, c.last_message_at) for c in mine] == [
            (quiet, None),
            (busy, last.created_at),
        ]
        assert [c.id for c in store.list_conversations(kim.id, owner=sam.owner)] == [busy]
        assert store.list_conversations(kim.id, owner="bob") == []

    def test_each_conversation_reads_its_own_messages_and_the_default_the_rest(self, store):
        sam = new_agent(store)
        trip = store.create_conversation(Conversation(agent_id=sam.id)).id
        store.add_messages(talk(sam, None, "old one", "old two"))
        store.add_messages(talk(sam, trip, "trip one"))
        store.add_messages(talk(sam, None, "old three"))
        store.add_messages(talk(sam, trip, "trip two"))
        assert contents(store.window(sam.id, 0)) == ["old one", "old two", "old three"]
        assert contents(store.window(sam.id, 0, trip)) == ["trip one", "trip two"]
        assert contents(store.messages_from(sam.id, 0, trip)) == ["trip one", "trip two"]
        assert contents(store.last_messages(sam.id, 1)) == ["old three"]
        assert contents(store.last_messages(sam.id, 1, trip)) == ["trip two"]
        [message] = store.last_messages(sam.id, 1, trip)
        assert message.conversation_id == trip
        assert store.agent_and_newest_message(sam.id, trip).newest.content == "trip two"
        assert store.agent_and_newest_message(sam.id).newest.content == "old three"
        read = store.main_context(sam.id, 0, talk(sam, trip, "trip three"), conversation=trip)
        assert contents(read.messages) == ["trip one", "trip two", "trip three"]
        assert contents(store.window(sam.id, 0)) == ["old one", "old two", "old three"]
        assert store.agent_stats(sam.id).message_count == 6  # the agent counts them all

    def test_a_kept_window_follows_appends_in_other_conversations(self, store, open_store):
        sam = new_agent(store)
        trip = store.create_conversation(Conversation(agent_id=sam.id)).id
        store.add_messages(talk(sam, None, "a"))
        assert contents(store.window(sam.id, 0)) == ["a"]
        assert contents(store.window(sam.id, 0, trip)) == []
        other = open_store()
        other.add_messages(talk(sam, trip, "t"))
        other.add_messages(talk(sam, None, "b"))
        assert contents(store.window(sam.id, 0)) == ["a", "b"]
        assert contents(store.window(sam.id, 0, trip)) == ["t"]
        other.delete_messages_from(sam.id, 0, trip)
        assert contents(store.window(sam.id, 0, trip)) == []
        assert contents(store.window(sam.id, 0)) == ["a", "b"]

    def test_busy_conversations_keep_their_windows_and_read_only_what_is_new(self, store):
        """Each conversation's window is kept under its own key: appends in
        the others leave it valid, so the messages it holds come back as the
        very same objects (read again, they would be new ones)."""
        sam = new_agent(store)
        trip = store.create_conversation(Conversation(agent_id=sam.id)).id
        store.add_messages([*talk(sam, None, "a"), *talk(sam, trip, "t")])
        home, away = store.window(sam.id, 0), store.window(sam.id, 0, trip)
        for turn in ("1", "2"):
            store.add_messages(talk(sam, trip, f"t{turn}"))
            store.add_messages(talk(sam, None, f"a{turn}"))
            grown_home, grown_away = store.window(sam.id, 0), store.window(sam.id, 0, trip)
            assert grown_home[0] is home[0] and grown_away[0] is away[0]
        assert contents(grown_home) == ["a", "a1", "a2"]
        assert contents(grown_away) == ["t", "t1", "t2"]
        later = store.window(sam.id, grown_home[1].seq or 0)  # a start compaction moved
        assert contents(later) == ["a1", "a2"] and later[0] is grown_home[1]

    def test_the_copy_of_the_agent_in_a_conversation_has_the_conversations_window(self, store):
        sam = new_agent(store)
        trip = store.create_conversation(Conversation(agent_id=sam.id)).id

        def compact(state: AgentState) -> None:
            state.context_start, state.summary, state.pressure_warned = 42, "we planned", True
            state.system = "a new system prompt"  # the agent's own: every conversation's

        changed = store.update_agent(sam.id, compact, conversation=trip)
        assert (changed.conversation_id, changed.context_start, changed.summary) == (
            trip,
            42,
            "we planned",
        )
        own = store.get_agent(sam.id)
        assert (own.conversation_id, own.context_start, own.summary, own.pressure_warned) == (
            None,
            0,
            "",
            False,
        )
        assert own.system == "a new system prompt"
        again = store.get_agent(sam.id, conversation=trip)
        assert (again.context_start, again.summary, again.pressure_warned) == (
            42,
            "we planned",
            True,
        )
        stored = store.get_conversation(trip)
        assert (stored.context_start, stored.window_summary) == (42, "we planned")
        again.summary = "saved whole"
        store.save_agent(again)
        assert store.get_conversation(trip).window_summary == "saved whole"
        assert store.get_agent(sam.id).summary == ""
        kim = new_agent(store, "kim")
        with pytest.raises(NotFoundError):
            store.get_agent(kim.id, conversation=trip)  # another agent's conversation
        with pytest.raises(NotFoundError):
            store.update_agent(sam.id, compact, conversation="conv-ghost")

    def test_deleting_a_conversation_deletes_its_messages_only(self, store):
        sam = new_agent(store)
        trip = store.create_conversation(Conversation(agent_id=sam.id)).id
        store.add_messages(talk(sam, None, "kept"))
        store.add_messages(talk(sam, trip, "gone", "gone too"))
        store.delete_conversation(trip)
        assert contents(store.window(sam.id, 0)) == ["kept"]
        assert store.agent_stats(sam.id).message_count == 1
        assert store.list_conversations(sam.id) == []
        with pytest.raises(NotFoundError):
            store.delete_conversation(trip)
        store.delete_agent(sam.id)
        assert store.list_conversations(sam.id) == []

    def test_each_conversation_has_its_own_step_lock(self, store, open_store):
        sam = new_agent(store)
        trip = store.create_conversation(Conversation(agent_id=sam.id)).id
        work = store.create_conversation(Conversation(agent_id=sam.id)).id
        other = open_store()
        assert store.take_step_lock(sam.id, holder("default"), 60, alive) is None
        assert other.take_step_lock(sam.id, holder("trip"), 60, alive, trip) is None
        assert store.take_step_lock(sam.id, holder("work"), 60, alive, work) is None
        # One conversation still serialises: its lock is held.
        held = store.take_step_lock(sam.id, holder("trip again"), 60, alive, trip)
        assert held is not None and held.token == "trip"
        assert store.step_lock_holder(sam.id).token == "default"
        assert store.step_lock_holder(sam.id, trip).token == "trip"
        # A write renews every lease its store holds, of each kind.
        store.add_messages(talk(sam, work, "renewed"))
        other.add_messages(talk(sam, trip, "written"), release_lock=(trip, "trip"))
        assert store.step_lock_holder(sam.id, trip) is None
        store.release_step_lock(sam.id, "work", work)
        assert store.step_lock_holder(sam.id, work) is None
        assert store.step_lock_holder(sam.id).token == "default"
        started = other.start_step(sam.id, holder("started"), 60, alive, conversation=trip)
        assert started.state.conversation_id == trip and started.newest.content == "written"
        with pytest.raises(NotFoundError):
            store.take_step_lock(sam.id, holder("x"), 60, alive, "conv-ghost")
