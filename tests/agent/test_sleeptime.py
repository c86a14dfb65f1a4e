"""Sleep-time agents from Python: `agent.sleeptime.add(frequency=N)`
makes a second agent on the same blocks, which after every N turns reads
the new messages in the background and edits the blocks; the main agent's
next system message shows the edit. A failing pass changes nothing and
leaves the messages to read again. Driven through the fake OpenAI server."""

from __future__ import annotations

from typing import Any

import pytest

from memgpt_lite import Agent, AlreadyExistsError, Block, ConfigError
from memgpt_lite.agent.workspace import Workspace
from memgpt_lite.errors import NotFoundError
from memgpt_lite.memory.core.blocks import load_prompt
from memgpt_lite.settings.resolve import resolve_settings
from memgpt_lite.testing import FakeOpenAIServer, call, error, reply, say

REMEMBER = call(
    "core_memory_replace",
    label="human",
    old_content="Name: unknown",
    new_content="Name: Alice",
    request_heartbeat=False,
)


def is_sleeptime(body: dict[str, Any]) -> bool:
    """Whether a request is a sleep-time agent's (by its system prompt)."""
    messages = body.get("messages") or [{}]
    return str(messages[0].get("content")).startswith(load_prompt("sleeptime")[:60])


def make_agent(tmp_path) -> Agent:
    blocks = [
        Block(label="persona", value="I am Sam."),
        Block(label="human", value="Name: unknown"),
    ]
    return Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db", blocks=blocks)


def test_the_sleeptime_agent_edits_the_shared_blocks_every_n_turns(tmp_path, fake_llm):
    agent = make_agent(tmp_path)
    group = agent.sleeptime.add(frequency=2)
    helper = agent.store.get_agent(group.agent_ids[0])
    assert (helper.name, helper.block_ids) == ("sam-sleeptime", agent.state.block_ids)
    with pytest.raises(AlreadyExistsError, match="has a sleep-time agent already"):
        agent.sleeptime.add()
    fake_llm.responder = lambda body: (
        reply(tool_calls=[REMEMBER]) if is_sleeptime(body) else say("Hi!")
    )
    agent.step("Hi, I am Alice.")
    assert agent.sleeptime.wait(30)
    assert agent.block("human").value == "Name: unknown"  # one turn of two: not yet
    agent.step("I like tea.")
    assert agent.sleeptime.wait(30)
    assert agent.block("human").value == "Name: Alice"
    assert "Name: Alice" in agent.system_message()
    [asked] = [r.body for r in fake_llm.requests if is_sleeptime(r.body)]
    shown = asked["messages"][-1]["content"]
    assert "user: Hi, I am Alice." in shown and "user: I like tea." in shown
    stored = agent.sleeptime.group
    assert stored is not None and stored.last_error is None and stored.last_run_at is not None
    assert stored.processed_seq == agent.context_messages()[-1].seq
    # The main agent goes with its sleep-time agent; the blocks with the last of them.
    Workspace(agent.store, resolve_settings()).delete_agent(agent.state.id)
    assert agent.store.list_groups() == [] and agent.store.list_agents() == []
    with pytest.raises(NotFoundError):
        agent.store.get_block(helper.block_ids[0])


def test_a_failing_pass_is_recorded_and_its_messages_read_again(tmp_path, fake_llm):
    agent = make_agent(tmp_path)
    group = agent.sleeptime.add(frequency=1)

    def model_down(body: dict[str, Any]) -> Any:
        return error(400, "the sleep-time model is down") if is_sleeptime(body) else say("Hi!")

    fake_llm.responder = model_down
    assert agent.step("Hi, I am Alice.").replies == ["Hi!"]
    assert agent.sleeptime.wait(30)
    failed = agent.sleeptime.group
    assert failed is not None and "the sleep-time model is down" in (failed.last_error or "")
    assert failed.processed_seq == group.processed_seq
    assert agent.block("human").value == "Name: unknown"
    fake_llm.responder = lambda body: (
        reply(tool_calls=[REMEMBER]) if is_sleeptime(body) else say("Hi!")
    )
    agent.step("Still there?")
    assert agent.sleeptime.wait(30)
    shown = [r.body for r in fake_llm.requests if is_sleeptime(r.body)][-1]["messages"][-1]
    assert "Hi, I am Alice." in shown["content"] and "Still there?" in shown["content"]
    assert agent.block("human").value == "Name: Alice"
    assert (agent.sleeptime.group or failed).last_error is None


def test_a_sleeptime_agent_has_none_and_removing_it_keeps_the_blocks(
    tmp_path, fake_llm: FakeOpenAIServer
):
    agent = make_agent(tmp_path)
    group = agent.sleeptime.add()
    helper = Agent.load(agent.store.get_agent(group.agent_ids[0]).name, store=agent.store)
    with pytest.raises(ConfigError, match="is a sleep-time agent: it cannot have one"):
        helper.sleeptime.add()
    with pytest.raises(ConfigError, match="frequency: a number of turns, 1 or more, not 0"):
        agent.sleeptime.add(frequency=0)
    assert helper.sleeptime.group is None and helper.sleeptime.wait(0)
    agent.sleeptime.remove()
    assert agent.sleeptime.group is None
    assert [s.name for s, _ in agent.store.list_agents()] == ["sam"]
    assert [b.value for b in agent.blocks] == ["I am Sam.", "Name: unknown"]
