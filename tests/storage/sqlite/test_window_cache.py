"""The SQLite store's reading of messages: rows read back without validating
them again, and each agent's window kept in memory between reads
(storage/core/window_cache.py). That a read after any change holds what a
fresh read holds is the storage contract's (tests/support/contract/window.py); here,
what only SQLite has: that the memory is used at all, rows written by another
program, and the trusted construction."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime

import pytest
from support.contract.window import CHANGES, two_calls

from memgpt_lite.models import AgentState, LLMConfig, Message, ToolCall
from memgpt_lite.storage.core.window_cache import MAX_AGENTS, message_from_row
from memgpt_lite.storage.sqlite.store import Store


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "w.db") as store:
        yield store


def new_agent(store: Store, name: str = "sam") -> AgentState:
    state = AgentState(name=name, llm=LLMConfig(model="gpt-4o-mini"), system="s")
    store.create_agent(state, [])
    return state


def exchange(state: AgentState, text: str) -> list[Message]:
    call = ToolCall(id="c1", name="send_message", arguments=json.dumps({"message": text}))
    return [
        Message(agent_id=state.id, role="user", content=text, step_id="s1"),
        Message(agent_id=state.id, role="assistant", content="hm", tool_calls=[call]),
        Message(agent_id=state.id, role="tool", content="ok", tool_call_id="c1", name="x"),
    ]


def test_a_trusted_message_is_the_validated_one():
    created = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
    calls = [{"id": "c1", "name": "send_message", "arguments": '{"message": "hi"}'}]
    row = (7, "msg-1", "agent-1", "assistant", "thinking", json.dumps(calls), None, None, "s1")
    trusted = message_from_row((*row, created.isoformat(), None))
    validated = Message(
        seq=7,
        id="msg-1",
        agent_id="agent-1",
        role="assistant",
        content="thinking",
        tool_calls=[ToolCall(**calls[0])],
        step_id="s1",
        created_at=created,
        tool_call_id=None,
        name=None,
        conversation_id=None,
    )
    assert trusted == validated and validated == trusted
    assert trusted.model_dump() == validated.model_dump()
    assert trusted.model_fields_set == validated.model_fields_set
    assert trusted.tool_calls[0].model_fields_set == validated.tool_calls[0].model_fields_set
    assert repr(trusted) == repr(validated)
    copy = trusted.model_copy(update={"content": "again"})
    assert copy.content == "again" and trusted.content == "thinking"
    trusted.content = "set"  # an ordinary model: it can be changed like one
    assert trusted.model_dump() == validated.model_copy(update={"content": "set"}).model_dump()


def test_tool_calls_another_program_stored_in_another_shape_are_validated(store):
    state = new_agent(store)
    store.add_messages(exchange(state, "hi"))
    seq = store.messages_from(state.id, 0)[1].seq
    odd = [{"id": "c1", "name": "send_message"}, {"id": "c2", "name": "x", "arguments": "", "n": 1}]
    with store.transaction():
        store.db.execute("UPDATE messages SET tool_calls = ? WHERE seq = ?", [json.dumps(odd), seq])
    calls = store.messages_from(state.id, 0)[1].tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("c1", "send_message", "{}"),
        ("c2", "x", ""),
    ]


def test_an_unchanged_window_is_not_read_again(store):
    state = new_agent(store)
    store.add_messages(exchange(state, "one"))
    first = store.window(state.id, 0)
    again = store.window(state.id, 0)
    assert again is not first  # the list is the caller's
    assert all(a is b for a, b in zip(first, again, strict=True))
    store.add_messages(exchange(state, "two"))  # only these are read
    grown = store.window(state.id, 0)
    assert len(grown) == 6 and all(a is b for a, b in zip(first, grown[:3], strict=True))


def test_messages_from_hands_out_new_objects_and_the_window_keeps_its_own(store):
    state = new_agent(store)
    store.add_messages(exchange(state, "one"))
    kept = store.window(state.id, 0)
    first = store.messages_from(state.id, 0)
    assert not any(a is b for a, b in zip(kept, first, strict=True)) and first == kept
    first[1].tool_calls[0].arguments = "{}"
    again = store.messages_from(state.id, 0)
    assert again[1] is not first[1] and again[1].tool_calls[0].arguments == '{"message": "one"}'
    assert all(a is b for a, b in zip(kept, store.window(state.id, 0), strict=True))


def test_an_edit_elsewhere_reads_the_window_again(tmp_path, store):
    state = new_agent(store)
    store.add_messages(exchange(state, "one"))
    first = store.window(state.id, 0)
    with Store(tmp_path / "w.db") as other:
        other.update_message(first[0].model_copy(update={"content": "edited"}))
    again = store.window(state.id, 0)
    assert again[0].content == "edited"
    assert not any(a is b for a, b in zip(first, again, strict=True))


def test_a_row_another_program_stored_under_a_seq_of_its_own_is_read(tmp_path, store):
    """SQLite numbers a new row past every row there is, but another program
    may store one under a seq of its choosing, before the last one held:
    `message_count` shows it."""
    sam, other = new_agent(store), new_agent(store, "other")
    store.add_messages(exchange(sam, "one"))
    store.add_messages(exchange(other, "in between"))
    store.add_messages(exchange(sam, "two"))
    free = store.messages_from(other.id, 0)[0].seq
    store.delete_messages_from(other.id, 0)  # seqs free in the middle of sam's
    assert len(store.messages_from(sam.id, 0)) == 6
    with sqlite3.connect(tmp_path / "w.db") as conn:
        conn.execute(
            "INSERT INTO messages (seq, id, agent_id, role, content, created_at) "
            "VALUES (?, 'msg-own-seq', ?, 'user', 'slipped in', ?)",
            [free, sam.id, datetime.now(UTC).isoformat()],
        )
    window = store.messages_from(sam.id, 0)
    assert [m.content for m in window][::3] == ["one", "slipped in", "ok"]
    with Store(tmp_path / "w.db") as fresh:
        assert window == fresh.messages_from(sam.id, 0)


def test_windows_of_a_few_agents_are_kept(store):
    states = [new_agent(store, f"a{i}") for i in range(MAX_AGENTS + 2)]
    for state in states:
        store.add_messages(exchange(state, state.name))
        store.messages_from(state.id, 0)
    assert list(store.window_cache._windows) == [s.id for s in states[-MAX_AGENTS:]]
    assert [m.content for m in store.messages_from(states[0].id, 0)][0] == "a0"


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_change_to_a_copy_leaves_the_kept_window_as_it_was(store, change):
    """Whatever the change to what `messages_from` handed out (even around
    pydantic), the window comes back as the very same objects (so what the
    token counter built for them is used again), holding what was stored."""
    state = new_agent(store)
    store.add_messages([*exchange(state, "one"), two_calls(state), *exchange(state, "two")])
    kept = store.window(state.id, 0)
    stored = [m.model_dump() for m in kept]
    CHANGES[change](store.messages_from(state.id, 0)[3])
    again = store.window(state.id, 0)
    assert all(a is b for a, b in zip(kept, again, strict=True))
    assert [m.model_dump() for m in again] == stored
    assert [m.model_dump() for m in store.messages_from(state.id, 0)] == stored


def test_a_read_that_fails_on_a_row_keeps_nothing_half_read(tmp_path, store):
    """A row another program stored that cannot be read fails the read;
    once it is put right, the window is what a fresh read gives."""
    state = new_agent(store)
    store.add_messages(exchange(state, "one"))
    store.messages_from(state.id, 0)
    store.add_messages(exchange(state, "two"))
    with sqlite3.connect(tmp_path / "w.db") as conn:
        conn.execute(
            "INSERT INTO messages (id, agent_id, role, content, created_at) "
            "VALUES ('msg-bad', ?, 'user', 'bad time', 'not a time')",
            [state.id],
        )
    with pytest.raises(ValueError):
        store.messages_from(state.id, 0)
    with sqlite3.connect(tmp_path / "w.db") as conn:
        conn.execute(
            "UPDATE messages SET created_at = ? WHERE id = 'msg-bad'",
            [datetime.now(UTC).isoformat()],
        )
    window = store.messages_from(state.id, 0)
    assert [m.content for m in window][::3] == ["one", "two", "bad time"]
    with Store(tmp_path / "w.db") as fresh:
        assert window == fresh.messages_from(state.id, 0)
