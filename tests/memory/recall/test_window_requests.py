"""Turns keep the window in memory (the store's window cache, the token
counter's request messages and their JSON): whatever changed between two
turns, here or through another `Store` on the same file (another process),
the next request holds exactly what an agent opened afresh would send."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from memgpt_lite import Agent, AgentSettings
from memgpt_lite.memory.recall.window import compile_context
from memgpt_lite.models import Message, ToolCall
from memgpt_lite.storage.sqlite.store import Store
from memgpt_lite.testing import FakeOpenAIServer, call, reply, say


def make_agent(path: str | Path, **settings) -> Agent:
    return Agent.create(
        "sam", "gpt-4o-mini", db=path, settings=AgentSettings(**settings), system="Be brief."
    )


def turn(server: FakeOpenAIServer, agent: Agent, text: str) -> list[dict]:
    """One step (a thought and a chained tool call, then the reply); the
    messages of its last request after the system message."""
    server.enqueue(
        reply(f"noting {text}", [call("conversation_search", query=text, request_heartbeat=True)]),
        say(f"re: {text}", content=f"answering {text}"),
    )
    agent.step(text)
    return server.chat_requests[-1]["messages"][1:]


def check_as_fresh(path: Path, sent: list[dict]) -> None:
    """`sent` is what an agent opened afresh now sends, but for the step's
    own last answer (an assistant message and its tool result, stored since)."""
    fresh = Agent.load("sam", db=path)
    try:
        expected = compile_context(fresh.runner).request_messages[1:]
    finally:
        fresh.store.close()
    assert json.loads(json.dumps(expected[:-2])) == sent
    assert [m["role"] for m in expected[-2:]] == ["assistant", "tool"]


def an_exchange(agent_id: str, text: str) -> list[Message]:
    calls = [ToolCall(id="c9", name="send_message", arguments=json.dumps({"message": text}))]
    return [
        Message(agent_id=agent_id, role="user", content=text, step_id="elsewhere"),
        Message(agent_id=agent_id, role="assistant", tool_calls=calls, step_id="elsewhere"),
        Message(agent_id=agent_id, role="tool", content="ok", tool_call_id="c9", name="x"),
    ]


def appended(store: Store, agent_id: str) -> None:
    store.add_messages(an_exchange(agent_id, "said in another process"))


def edited(store: Store, agent_id: str) -> None:
    window = store.messages_from(agent_id, store.get_agent(agent_id).context_start)
    thought = next(m for m in window if m.role == "assistant" and m.content)
    store.update_message(thought.model_copy(update={"content": "rethought elsewhere"}))
    reply_call = next(m for m in reversed(window) if m.role == "assistant")
    new_call = reply_call.tool_calls[0].model_copy(update={"arguments": '{"message": "new"}'})
    store.update_message(reply_call.model_copy(update={"tool_calls": [new_call]}))


def deleted(store: Store, agent_id: str) -> None:
    window = store.messages_from(agent_id, 0)
    store.delete_messages_from(agent_id, [m for m in window if m.role == "user"][-1].seq)


def deleted_and_appended(store: Store, agent_id: str) -> None:
    deleted(store, agent_id)
    appended(store, agent_id)


def compacted(store: Store, agent_id: str) -> None:
    """What a compaction in another process writes: a later window start, a summary."""
    window = store.messages_from(agent_id, 0)
    second_exchange = [m for m in window if m.role == "user"][1]

    def compact(state) -> None:
        state.context_start = second_exchange.seq
        state.summary = "They said one thing."

    store.update_agent(agent_id, compact)


@pytest.mark.parametrize(
    "change", [appended, edited, deleted, deleted_and_appended, compacted], ids=lambda f: f.__name__
)
def test_a_change_through_another_store_is_in_the_next_request(
    fake_llm, tmp_path, change: Callable[[Store, str], None]
):
    path = tmp_path / "a.db"
    agent = make_agent(path)
    for text in ("one", "two", "three"):
        check_as_fresh(path, turn(fake_llm, agent, text))
    with Store(path) as other:
        change(other, agent.state.id)
    check_as_fresh(path, turn(fake_llm, agent, "four"))
    check_as_fresh(path, turn(fake_llm, agent, "five"))
    assert fake_llm.rejections == []


@pytest.mark.parametrize(
    "edit",
    [
        lambda agent: agent.history.rethink("A new thought."),
        lambda agent: agent.history.rewrite("A new reply."),
        lambda agent: agent.history.pop_exchanges(1),
    ],
    ids=["rethink", "rewrite", "pop"],
)
def test_a_history_edit_is_in_the_next_request(fake_llm, tmp_path, edit):
    path = tmp_path / "a.db"
    agent = make_agent(path)
    for text in ("one", "two"):
        turn(fake_llm, agent, text)
    edit(agent)
    check_as_fresh(path, turn(fake_llm, agent, "three"))
    assert fake_llm.rejections == []


def test_after_a_compaction_the_request_is_what_a_fresh_agent_sends(fake_llm, db_location):
    def answer(body: dict):
        if "tools" not in body:  # the summary request
            return reply(content="A summary of what was said.")
        text = body["messages"][-1]["content"]
        return say(f"re: {text}")

    fake_llm.responder = answer
    path = db_location
    agent = make_agent(path)
    for text in ("one", "two", "three", "four"):
        agent.step(text)
    agent.runner.summarize()
    assert agent.state.context_start > 0
    agent.step("after")
    fresh = Agent.load("sam", db=path)
    expected = compile_context(fresh.runner).request_messages[1:-2]
    fresh.store.close()
    assert fake_llm.chat_requests[-1]["messages"][1:] == json.loads(json.dumps(expected))
    assert "A summary" in fake_llm.chat_requests[-1]["messages"][0]["content"]
