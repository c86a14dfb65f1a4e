"""The contract for reading the context window again and again: whatever
changed in between, through this handle or another (another process), a read
holds exactly what a handle opened afresh reads. A backend may keep the window
in memory between reads (SQLite does); these tests read first, so that a
memory of it exists, then change the rows, then compare."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from memgpt_lite.models import AgentState, Message, ToolCall
from memgpt_lite.storage.protocol import Storage
from support.contract.base import ContractBase, OpenStore, new_agent, said


def a_call(agent: AgentState, reply: str, call_id: str = "call_1") -> Message:
    call = ToolCall(id=call_id, name="send_message", arguments=f'{{"message": "{reply}"}}')
    return Message(agent_id=agent.id, role="assistant", content="thinking", tool_calls=[call])


def exchange(agent: AgentState, text: str) -> list[Message]:
    return [
        said(agent, text),
        a_call(agent, f"re: {text}"),
        Message(agent_id=agent.id, role="tool", content="ok", tool_call_id="call_1", name="x"),
    ]


def two_calls(agent: AgentState) -> Message:
    calls = [
        ToolCall(id="call_a", name="send_message", arguments='{"message": "a"}'),
        ToolCall(id="call_b", name="archival_insert", arguments='{"content": "b"}'),
    ]
    return Message(agent_id=agent.id, role="assistant", content="both", tool_calls=calls)


def _reinit(message: Message) -> None:
    message.__init__(**{**message.model_dump(), "content": "made again in place"})


# Ways a caller can change a message it was handed, each applied to the
# message with two tool calls (see `two_calls`).
CHANGES: dict[str, Callable[[Message], object]] = {
    "id set": lambda m: setattr(m, "id", "msg-other"),
    "agent_id set": lambda m: setattr(m, "agent_id", "agent-other"),
    "role set": lambda m: setattr(m, "role", "user"),
    "content set": lambda m: setattr(m, "content", "changed"),
    "content set to None": lambda m: setattr(m, "content", None),
    "tool_call_id set": lambda m: setattr(m, "tool_call_id", "call_x"),
    "name set": lambda m: setattr(m, "name", "x"),
    "step_id set": lambda m: setattr(m, "step_id", "step-x"),
    "created_at set": lambda m: setattr(m, "created_at", datetime(2001, 1, 1, tzinfo=UTC)),
    "seq set": lambda m: setattr(m, "seq", 10**6),
    "a field deleted": lambda m: delattr(m, "step_id"),
    "__dict__ written": lambda m: m.__dict__.__setitem__("content", "behind pydantic's back"),
    "__dict__ given a key": lambda m: m.__dict__.__setitem__("extra", 1),
    "__dict__ key removed": lambda m: m.__dict__.pop("name"),
    "__dict__ replaced": lambda m: object.__setattr__(m, "__dict__", {**m.__dict__, "seq": 0}),
    "object.__setattr__": lambda m: object.__setattr__(m, "content", "set around pydantic"),
    "__init__ called again": _reinit,
    "tool_calls set": lambda m: setattr(m, "tool_calls", []),
    "tool_calls appended to": lambda m: m.tool_calls.append(ToolCall(id="c", name="n")),
    "tool_calls popped": lambda m: m.tool_calls.pop(),
    "tool_calls cleared": lambda m: m.tool_calls.clear(),
    "tool_calls reversed": lambda m: m.tool_calls.reverse(),
    "tool_calls item replaced": lambda m: m.tool_calls.__setitem__(0, ToolCall(id="c", name="n")),
    "a tool call's id set": lambda m: setattr(m.tool_calls[0], "id", "call_z"),
    "a tool call's name set": lambda m: setattr(m.tool_calls[1], "name", "other_tool"),
    "a tool call's arguments set": lambda m: setattr(m.tool_calls[1], "arguments", "{}"),
    "a tool call's __dict__ written": lambda m: m.tool_calls[0].__dict__.__setitem__("id", "z"),
}


# Those changes that go through the model's own API: a message `Storage.window`
# hands out refuses each of them. (The others go around pydantic, as nothing
# but a deliberate bypass does.)
REFUSED = [
    name for name in CHANGES if not any(w in name for w in ("__dict__", "__setattr__", "__init__"))
]


def dumped(messages: list[Message]) -> list[dict[str, Any]]:
    return [m.model_dump() for m in messages]


def cold(open_store: OpenStore, agent_id: str, start: int = 0) -> list[dict[str, Any]]:
    """The window as a handle that never read it before sees it."""
    return dumped(open_store().messages_from(agent_id, start))


class WindowContract(ContractBase):
    @pytest.fixture(params=["this handle", "another handle"])
    def writer(self, request, store: Storage, open_store: OpenStore) -> Storage:
        return store if request.param == "this handle" else open_store()

    def test_a_read_after_appends_edits_and_deletes_is_a_fresh_read(
        self, store, open_store, writer
    ):
        state = new_agent(store)
        store.add_messages(exchange(state, "one") + exchange(state, "two"))
        seen = store.messages_from(state.id, 0)
        assert len(seen) == 6

        writer.add_messages(exchange(state, "three"))
        assert dumped(store.messages_from(state.id, 0)) == cold(open_store, state.id)

        edited = seen[1].model_copy(update={"content": "thought again"})
        writer.update_message(edited)
        edited_call = seen[4].tool_calls[0].model_copy(update={"arguments": '{"message": "b"}'})
        writer.update_message(seen[4].model_copy(update={"tool_calls": [edited_call]}))
        window = store.messages_from(state.id, 0)
        assert window[1].content == "thought again"
        assert window[4].tool_calls[0].arguments == '{"message": "b"}'
        assert dumped(window) == cold(open_store, state.id)

        writer.delete_messages_from(state.id, window[6].seq)
        assert dumped(store.messages_from(state.id, 0)) == cold(open_store, state.id)
        assert len(store.messages_from(state.id, 0)) == 6

    def test_rows_deleted_and_stored_again_under_the_same_seqs_are_read(
        self, store, open_store, writer
    ):
        state = new_agent(store)
        store.add_messages(exchange(state, "one") + exchange(state, "two"))
        last = store.messages_from(state.id, 0)[3:]
        writer.delete_messages_from(state.id, last[0].seq)
        # As many new messages, likely under the seqs just freed.
        writer.add_messages(exchange(state, "other"))
        window = store.messages_from(state.id, 0)
        assert [m.content for m in window[3:]][0] == "other"
        assert {m.id for m in window[3:]}.isdisjoint(m.id for m in last)
        assert dumped(window) == cold(open_store, state.id)

    def test_a_later_window_start_drops_messages_and_an_earlier_one_brings_them_back(
        self, store, open_store
    ):
        state = new_agent(store)
        store.add_messages(exchange(state, "one") + exchange(state, "two"))
        window = store.messages_from(state.id, 0)
        start = window[3].seq
        assert dumped(store.messages_from(state.id, start)) == dumped(window[3:])
        assert dumped(store.messages_from(state.id, start + 1)) == dumped(window[4:])
        assert dumped(store.messages_from(state.id, 0)) == dumped(window)
        past_the_end = window[-1].seq + 1
        assert store.messages_from(state.id, past_the_end) == []
        store.add_messages(exchange(state, "three"))
        assert dumped(store.messages_from(state.id, past_the_end)) == cold(
            open_store, state.id, past_the_end
        )

    def test_a_rolled_back_edit_is_never_read(self, store, open_store):
        state = new_agent(store)
        store.add_messages(exchange(state, "one"))
        before = store.messages_from(state.id, 0)
        with pytest.raises(RuntimeError), store.transaction():
            store.update_message(before[0].model_copy(update={"content": "undone edit"}))
            assert store.messages_from(state.id, 0)[0].content == "undone edit"
            raise RuntimeError
        # Another handle edits another message: whatever number or version
        # its edit is given, nothing of the rolled-back one may come back.
        open_store().update_message(before[1].model_copy(update={"content": "other edit"}))
        window = store.messages_from(state.id, 0)
        assert [m.content for m in window[:2]] == ["one", "other edit"]
        assert dumped(window) == cold(open_store, state.id)

    def test_a_rolled_back_append_is_never_read(self, store, open_store):
        state = new_agent(store)
        store.add_messages(exchange(state, "one"))
        before = store.messages_from(state.id, 0)
        with pytest.raises(RuntimeError), store.transaction():
            store.add_messages(exchange(state, "undone"))
            assert len(store.messages_from(state.id, 0)) == 6
            raise RuntimeError
        assert dumped(store.messages_from(state.id, 0)) == dumped(before)
        open_store().add_messages(exchange(state, "other"))
        window = store.messages_from(state.id, 0)
        assert [m.content for m in window][0::3] == ["one", "other"]
        assert dumped(window) == cold(open_store, state.id)

    def test_changing_what_was_read_does_not_change_the_next_read(self, store, open_store):
        state = new_agent(store)
        store.add_messages(exchange(state, "one") + exchange(state, "two"))
        expected = cold(open_store, state.id)
        window = store.messages_from(state.id, 0)
        window[0].content = "changed by the caller"
        window[1].tool_calls[0].arguments = "{}"
        window[3].seq = 999
        window[4].tool_calls.append(ToolCall(id="x", name="y"))
        window[5].step_id = "changed"
        window.pop()
        assert dumped(store.messages_from(state.id, 0)) == expected
        again = store.messages_from(state.id, 0)
        again[1].tool_calls = []
        again[2].__dict__["name"] = "changed behind pydantic's back"
        assert dumped(store.messages_from(state.id, 0)) == expected

    @pytest.mark.parametrize("change", list(CHANGES))
    def test_a_message_a_caller_changed_is_never_handed_out_again(self, store, open_store, change):
        state = new_agent(store)
        store.add_messages([*exchange(state, "one"), two_calls(state), *exchange(state, "two")])
        expected = cold(open_store, state.id)
        window = store.messages_from(state.id, 0)
        CHANGES[change](window[3])
        again = store.messages_from(state.id, 0)
        assert again[3] is not window[3]
        assert dumped(again) == expected

    @pytest.mark.parametrize("change", REFUSED)
    def test_a_message_of_the_window_cannot_be_changed(self, store, open_store, change):
        state = new_agent(store)
        store.add_messages([*exchange(state, "one"), two_calls(state), *exchange(state, "two")])
        expected = cold(open_store, state.id)
        window = store.window(state.id, 0)
        assert dumped(window) == expected
        with pytest.raises((TypeError, ValidationError), match="frozen|read-only"):
            CHANGES[change](window[3])
        again = store.window(state.id, 0)
        assert dumped(again) == expected
        assert dumped(store.main_context(state.id, 0).messages) == expected

    def test_the_window_after_appends_edits_and_deletes_is_a_fresh_read(
        self, store, open_store, writer
    ):
        """What `window` keeps between reads follows every change, and what
        did not change comes back as the same object (where a backend keeps
        the window) or an equal one."""
        state = new_agent(store)
        store.add_messages(exchange(state, "one") + exchange(state, "two"))
        seen = store.window(state.id, 0)
        writer.add_messages(exchange(state, "three"))
        grown = store.window(state.id, 0)
        assert dumped(grown) == cold(open_store, state.id) and grown[:6] == seen
        writer.update_message(seen[1].model_copy(update={"content": "thought again"}))
        edited = store.window(state.id, 0)
        assert edited[1].content == "thought again"
        assert dumped(edited) == cold(open_store, state.id)
        writer.delete_messages_from(state.id, edited[6].seq)
        assert dumped(store.window(state.id, 0)) == cold(open_store, state.id)
        start = edited[3].seq
        assert dumped(store.window(state.id, start)) == cold(open_store, state.id, start)

    def test_a_tool_call_list_or_call_swapped_for_an_equal_one_is_still_watched(
        self, store, open_store
    ):
        """An equal replacement holds what was handed out, so the same
        message may come back; a change to the replacement must not."""
        state = new_agent(store)
        store.add_messages([*exchange(state, "one"), two_calls(state)])
        expected = cold(open_store, state.id)
        window = store.messages_from(state.id, 0)
        kept_list = window[3].tool_calls
        window[3].tool_calls = list(kept_list)
        kept_list.append(ToolCall(id="c", name="n"))  # the list it held, no longer its own
        window[1].tool_calls[0] = window[1].tool_calls[0].model_copy()
        again = store.messages_from(state.id, 0)
        assert dumped(again) == expected
        again[3].tool_calls[0].arguments = "{}"
        again[3].tool_calls.pop()
        again[1].tool_calls[0].arguments = "{}"
        last = store.messages_from(state.id, 0)
        assert last[3] is not again[3] and last[1] is not again[1]
        assert dumped(last) == expected

    def test_an_agent_deleted_and_made_again_with_the_same_id_has_only_its_new_messages(
        self, store, open_store
    ):
        state = new_agent(store)
        store.add_messages(exchange(state, "old"))
        assert len(store.messages_from(state.id, 0)) == 3
        other = open_store()
        other.delete_agent(state.id)
        reborn = state.model_copy()  # the same id, as an import of an exported agent has
        other.create_agent(reborn, [])
        other.add_messages(exchange(reborn, "new"))
        window = store.messages_from(state.id, 0)
        assert [m.content for m in window][0] == "new"
        assert dumped(window) == cold(open_store, state.id)
