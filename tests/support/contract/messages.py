"""The contract for recall memory: messages, their window and their search."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from memgpt_lite.conversations import Conversation
from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import AgentState, Message, ToolCall
from support.contract.base import ContractBase, contents, day, new_agent, said

HOSTILE_QUERIES = [
    '"unbalanced',
    "AND",
    "OR NOT",
    "NEAR(a b)",
    "a*",
    "col:value",
    "-minus",
    "((",
    ")",
    "café",
    "日本語",
    "emoji 🙂",
    "",
    "   ",
    "'; DROP TABLE messages; --",
    "^start",
    "a + b",
    "%_\\",
]


def a_response(agent_id: str, thought: str, reply: str, step_id: str | None = None) -> Message:
    call = ToolCall(id="call_1", name="send_message", arguments=f'{{"message": "{reply}"}}')
    return Message(
        agent_id=agent_id, role="assistant", content=thought, tool_calls=[call], step_id=step_id
    )


class MessageContract(ContractBase):
    def test_messages_read_back_whole_in_the_order_they_were_added(self, store):
        state = new_agent(store)
        messages = [
            said(state, "hello", step_id="step-1", created_at=day("2026-03-01 10:00")),
            a_response(state.id, "greet them", "Hi!", "step-1"),
            Message(
                agent_id=state.id,
                role="tool",
                content="Sent message successfully.",
                tool_call_id="call_1",
                name="send_message",
                step_id="step-1",
            ),
        ]
        store.add_messages(messages)
        seqs = [m.seq for m in messages]
        assert all(isinstance(s, int) for s in seqs) and seqs == sorted(set(seqs))
        assert store.messages_from(state.id, 0) == messages
        assert store.messages_from(state.id, seqs[1]) == messages[1:]
        assert store.messages_from(state.id, seqs[2] + 1) == []

    def test_a_message_is_read_by_its_id_for_its_agents_owner(self, store):
        sam, kim = new_agent(store, "sam"), new_agent(store, "kim")
        mine, theirs = said(sam, "s1"), a_response(kim.id, "think", "k1")
        store.add_messages([mine])
        store.add_messages([theirs])
        assert store.get_message(theirs.id, kim.owner) == theirs
        assert store.get_message(mine.id, sam.owner) == mine
        with pytest.raises(NotFoundError, match="no message with id 'msg-none'"):
            store.get_message("msg-none", sam.owner)
        lee = AgentState(name="lee", llm=sam.llm, system="s", owner="lee")
        store.create_agent(lee, [])
        with pytest.raises(NotFoundError) as refused:
            store.get_message(mine.id, lee.owner)
        assert str(refused.value) == f"no message with id {mine.id!r}"

    def test_an_owners_messages_page_across_agents_by_time(self, store):
        sam, kim = new_agent(store, "sam"), new_agent(store, "kim")
        lee = AgentState(name="lee", llm=sam.llm, system="s", owner="lee")
        store.create_agent(lee, [])
        same = day("2026-03-01 10:00")  # one time: seq orders them
        store.add_messages([said(sam, "s1", created_at=same), said(sam, "s2", created_at=same)])
        store.add_messages([said(kim, "k1", created_at=day("2026-03-01 09:00"))])
        store.add_messages([said(lee, "theirs", created_at=day("2026-03-01 09:30"))])
        store.add_messages([said(kim, "k2", created_at=day("2026-03-02 08:00"))])
        oldest = store.owner_messages(sam.owner, 10, newest_first=False)
        assert contents(oldest) == ["k1", "s1", "s2", "k2"]
        newest = store.owner_messages(sam.owner, 2)
        assert contents(newest) == ["k2", "s2"]
        assert contents(store.owner_messages(sam.owner, 2, beyond=newest[-1])) == ["s1", "k1"]
        assert contents(
            store.owner_messages(sam.owner, 9, newest_first=False, beyond=oldest[1])
        ) == [
            "s2",
            "k2",
        ]
        assert contents(store.owner_messages("lee", 9)) == ["theirs"]
        assert store.owner_messages("nobody", 9) == []

    def test_each_agent_sees_only_its_own_messages(self, store):
        sam, kim = new_agent(store, "sam"), new_agent(store, "kim")
        store.add_messages([said(sam, "s1"), said(kim, "k1"), said(sam, "s2")])
        store.add_messages([said(kim, "k2")])
        assert contents(store.messages_from(sam.id, 0)) == ["s1", "s2"]
        assert contents(store.messages_from(kim.id, 0)) == ["k1", "k2"]
        assert contents(store.last_messages(kim.id, 1)) == ["k2"]

    def test_last_messages_are_the_newest_oldest_first(self, store):
        state = new_agent(store)
        store.add_messages([said(state, f"m{i}") for i in range(5)])
        assert contents(store.last_messages(state.id, 3)) == ["m2", "m3", "m4"]
        assert contents(store.last_messages(state.id, 10)) == [f"m{i}" for i in range(5)]
        assert store.last_messages(state.id, 0) == []

    def test_first_messages_page_from_a_seq(self, store):
        sam, kim = new_agent(store, "sam"), new_agent(store, "kim")
        store.add_messages([said(sam, f"m{i}") for i in range(3)] + [said(kim, "k")])
        store.add_messages([said(sam, f"m{i}") for i in range(3, 6)])
        seqs = [m.seq for m in store.messages_from(sam.id, 0)]
        assert contents(store.first_messages(sam.id, 0, 2)) == ["m0", "m1"]
        assert contents(store.first_messages(sam.id, seqs[2], 2)) == ["m2", "m3"]
        assert contents(store.first_messages(sam.id, seqs[4], 10)) == ["m4", "m5"]
        assert store.first_messages(sam.id, seqs[5] + 1, 10) == []
        assert store.first_messages(sam.id, 0, 0) == []

    def test_recent_messages_page_from_the_newest_and_count_from_a_time(self, store):
        sam, kim = new_agent(store, "sam"), new_agent(store, "kim")
        store.add_messages(
            [said(sam, f"m{i}", created_at=day(f"2026-03-0{i + 1} 10:00")) for i in range(5)]
        )
        store.add_messages([said(kim, "other", role="assistant")])
        page, total = store.recent_messages(sam.id, 2)
        assert (contents(page), total) == (["m3", "m4"], 5)
        page, total = store.recent_messages(sam.id, 2, offset=2)
        assert (contents(page), total) == (["m1", "m2"], 5)
        assert contents(store.recent_messages(sam.id, 2, offset=4)[0]) == ["m0"]
        assert store.recent_messages(sam.id, 2, offset=5) == ([], 5)
        # From the very moment of m2, in another time zone: m2 counts.
        since = datetime.fromisoformat("2026-03-03T12:00+02:00")
        page, total = store.recent_messages(sam.id, 10, since=since)
        assert (contents(page), total) == (["m2", "m3", "m4"], 3)
        assert store.recent_messages(sam.id, 10, since=day("2027-01-01 00:00")) == ([], 0)

    def test_messages_of_an_unknown_agent_are_refused_whole(self, store):
        state = new_agent(store)
        batch = [said(state, "kept out"), Message(agent_id="agent-ghost", role="user", content="x")]
        with pytest.raises(NotFoundError, match="agent-ghost"):
            store.add_messages(batch)
        assert store.messages_from(state.id, 0) == []
        assert store.agent_stats(state.id).message_count == 0

    def test_messages_by_seq(self, store):
        sam, kim = new_agent(store, "sam"), new_agent(store, "kim")
        mine = [said(sam, "a", step_id="s1"), said(sam, "b", step_id="s2"), said(sam, "c")]
        theirs = said(kim, "k")
        store.add_messages([*mine, theirs])
        seqs = [m.seq or 0 for m in mine]
        found = store.messages_by_seq(sam.id, [*seqs, theirs.seq or 0, 10**9])
        assert found == {m.seq: m for m in mine}
        without = store.messages_by_seq(sam.id, seqs, exclude_step_id="s1")
        assert sorted(without) == seqs[1:]
        assert store.messages_by_seq(sam.id, []) == {}

    def test_messages_by_id_and_by_step_of_any_conversation(self, store):
        sam, kim = new_agent(store, "sam"), new_agent(store, "kim")
        trip = store.create_conversation(Conversation(agent_id=sam.id))
        mine = [
            said(sam, "a", step_id="s1"),
            said(sam, "b", step_id="s2", conversation_id=trip.id),
            said(sam, "c", step_id="s1"),
        ]
        theirs = said(kim, "k", step_id="s1")
        store.add_messages([*mine, theirs])
        # Unknown ids by the thousand: more than one statement's parameters hold.
        unknown = [f"message-{i}" for i in range(2000)]
        wanted = [mine[2].id, theirs.id, *unknown, mine[1].id]
        assert store.messages_by_id(sam.id, wanted) == [mine[1], mine[2]]  # oldest first
        assert store.messages_by_id(sam.id, []) == []
        assert store.step_messages(sam.id, ["s1"]) == [mine[0], mine[2]]
        assert store.step_messages(sam.id, [*unknown, "s2", "s1"]) == mine
        assert store.step_messages(kim.id, ["s1"]) == [theirs]
        assert store.step_messages(sam.id, []) == []

    def test_messages_between_pages_by_utc_day(self, store):
        state = new_agent(store)
        store.add_messages(
            [said(state, f"day {i}", created_at=day(f"2026-03-0{i + 1} 23:30")) for i in range(4)]
        )
        store.add_messages(
            [
                Message(
                    agent_id=state.id, role="tool", content="t", created_at=day("2026-03-02 01:00")
                )
            ]
        )
        found, total = store.messages_between(state.id, date(2026, 3, 2), date(2026, 3, 3), 1)
        assert (total, contents(found)) == (2, ["day 1"])
        found, _ = store.messages_between(state.id, date(2026, 3, 2), date(2026, 3, 3), 1, offset=1)
        assert contents(found) == ["day 2"]
        found, total = store.messages_between(state.id, date(2026, 3, 1), date(2026, 3, 9), 10)
        assert total == 4  # the tool result is not searchable

    def test_an_updated_message_is_searched_by_its_new_text(self, store):
        state = new_agent(store)
        message = said(state, "my cat is called Tom")
        store.add_messages([message])
        edited = message.model_copy(update={"content": "my dog is called Rex"})
        store.update_message(edited)
        assert contents(store.messages_from(state.id, 0)) == ["my dog is called Rex"]
        assert store.search_messages(state.id, "cat", 5) == ([], 0)
        assert contents(store.search_messages(state.id, "dog", 5)[0]) == ["my dog is called Rex"]
        with pytest.raises(NotFoundError):
            store.update_message(said(state, "never stored"))

    def test_deleting_from_a_seq_takes_the_messages_out_of_search_and_counts(self, store):
        state = new_agent(store)
        messages = [said(state, f"apple {i}") for i in range(4)]
        store.add_messages(messages)
        assert store.delete_messages_from(state.id, messages[2].seq or 0) == 2
        assert contents(store.messages_from(state.id, 0)) == ["apple 0", "apple 1"]
        found, total = store.search_messages(state.id, "apple", 10)
        assert total == 2 and {m.content for m in found} == {"apple 0", "apple 1"}
        assert store.agent_stats(state.id).message_count == 2
        assert store.delete_messages_from(state.id, 10**9) == 0

    def test_search_finds_stemmed_and_accented_words_in_what_was_said(self, store):
        state = new_agent(store)
        store.add_messages(
            [
                said(state, "I went running at the café"),
                Message(agent_id=state.id, role="tool", content="running tool", tool_call_id="c"),
                Message(agent_id=state.id, role="system", content="running note"),
                a_response(state.id, "they like to run", "Running is fun!"),
            ]
        )
        found, total = store.search_messages(state.id, "RUNS cafe", 5)
        assert total == 2
        assert found[0].content == "I went running at the café"  # both words
        assert found[1].role == "assistant"
        found, _ = store.search_messages(state.id, "fun", 5)
        assert [m.role for m in found] == ["assistant"]  # a send_message reply is searched

    @pytest.mark.parametrize("query", HOSTILE_QUERIES)
    def test_any_query_text_is_safe(self, store, query):
        state = new_agent(store)
        store.add_messages([said(state, "a café in 日本語 land, col value")])
        found, total = store.search_messages(state.id, query, 5)
        assert total == len(found)
        ranking = store.rank_messages(state.id, query, 5)
        assert ranking.total == total
        store.rank_passages(state.id, query, 5)

    def test_search_pages_follow_the_ranking_and_leave_out_a_step(self, store):
        state = new_agent(store)
        texts = [f"apple {'pie ' * (i % 4)}n{i}" for i in range(12)]
        store.add_messages([said(state, t) for t in texts])
        store.add_messages([said(state, "apple apple apple", step_id="step-now")])
        first, total = store.search_messages(state.id, "apple pie", 4, exclude_step_id="step-now")
        second, _ = store.search_messages(state.id, "apple pie", 4, 4, "step-now")
        ranked = store.rank_messages(state.id, "apple pie", 8, "step-now")
        assert [m.seq for m in first + second] == [m.seq for m, _ in ranked.scored]
        assert total == ranked.total == 12
        scores = [score for _, score in ranked.scored]
        assert scores == sorted(scores, reverse=True)
        assert "pie" in (first[0].content or "")
        everything, _ = store.search_messages(state.id, "apple", 20)
        assert "apple apple apple" in contents(everything)
