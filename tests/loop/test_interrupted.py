"""A step that stops before its reply reaches the user leaves the user's
message unanswered (memory/recall/answered.py), wherever it stops: after
tool calls, in a chain of heartbeats, cancelled, or ended without a reply;
and a step waiting for approval is not. Against the validating fake server,
on SQLite and PostgreSQL (`db_location`). Kills of real processes are in
tests/cli/test_killed_chat.py and tests/server/test_killed_serve.py."""

from __future__ import annotations

import pytest

from memgpt_lite import Agent, AgentSettings, LLMError
from memgpt_lite.events import UsageReported
from memgpt_lite.testing import FakeOpenAIServer, call, error, reply, say
from memgpt_lite.tools.rules import needs_approval


def make_agent(db: str, **settings: object) -> Agent:
    return Agent.create("sam", "gpt-4o-mini", db=db, settings=AgentSettings(**settings))


def memory_edit(fact: str, heartbeat: bool = True):
    return reply(
        f"keep {fact}",
        [call("core_memory_append", label="human", content=fact, request_heartbeat=heartbeat)],
    )


def user_texts(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


def tool_contents(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def unanswered_texts(agent: Agent) -> list[str | None]:
    return [m.content for m in agent.history.unanswered()]


def test_a_step_failing_after_its_tool_calls_leaves_the_message_unanswered(
    fake_llm: FakeOpenAIServer, db_location
):
    agent = make_agent(db_location)
    fake_llm.enqueue(say("hello"))
    agent.step("hi")
    fake_llm.enqueue(memory_edit("likes tea"), error(400, "the model is loading"))
    with pytest.raises(LLMError):
        agent.step("I like tea")
    # The memory edit and its result are stored, but no reply reached the user.
    assert "likes tea" in agent.block("human").value
    assert unanswered_texts(agent) == ["I like tea"]
    note = agent.history.unanswered_note("/retry", "/pop")
    assert (
        note == 'Your message "I like tea" was not answered: /retry sends it again, /pop drops it.'
    )
    # The next turn answers its own message; what the model did stays in view.
    fake_llm.enqueue(say("noted"))
    agent.step("anything else?")
    last = fake_llm.chat_requests[-1]
    assert user_texts(last) == ["hi", "anything else?"]
    assert any("Appended to block 'human'" in text for text in tool_contents(last))
    assert fake_llm.rejections == []


def test_a_chain_of_heartbeats_cut_short_leaves_the_message_unanswered(
    fake_llm: FakeOpenAIServer, db_location
):
    agent = make_agent(db_location)
    fake_llm.enqueue(
        reply("look", [call("conversation_search", query="tea", request_heartbeat=True)]),
        memory_edit("likes tea"),
        say("never sent"),
    )
    events = agent.stream("what do I like?")
    answers = 0
    for event in events:  # the user stops the step (Ctrl-C) as the reply comes in
        answers += isinstance(event, UsageReported)
        if answers == 3:
            break
    events.close()
    stored = agent.store.messages_from(agent.state.id, 0)
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant", "tool"]
    assert unanswered_texts(agent) == ["what do I like?"]
    fake_llm.reset()
    fake_llm.enqueue(say("tea"))
    assert agent.runner.retry().replies == ["tea"]
    assert unanswered_texts(agent) == []
    assert user_texts(fake_llm.chat_requests[-1]) == ["what do I like?"]
    assert fake_llm.rejections == []


def test_a_reply_then_a_failure_counts_as_answered(fake_llm: FakeOpenAIServer, db_location):
    agent = make_agent(db_location)
    fake_llm.enqueue(
        reply(
            "answer, then note it",
            [
                call("send_message", message="Tea it is."),
                call("core_memory_append", label="human", content="tea", request_heartbeat=True),
            ],
        ),
        error(400, "the model is loading"),
    )
    with pytest.raises(LLMError):
        agent.step("tea please")
    assert unanswered_texts(agent) == []


def test_a_refused_reply_is_no_answer(fake_llm: FakeOpenAIServer, db_location):
    agent = make_agent(db_location, max_chained_steps=1)
    fake_llm.enqueue(reply(tool_calls=[call("send_message", message="   ")]))
    result = agent.step("hello?")
    assert result.replies == [] and result.stop_reason == "step_limit"
    assert unanswered_texts(agent) == ["hello?"]


def test_a_step_ended_without_a_reply_leaves_the_message_unanswered(
    fake_llm: FakeOpenAIServer, db_location
):
    agent = make_agent(db_location)
    fake_llm.enqueue(memory_edit("name: Ann", heartbeat=False))
    result = agent.step("I am Ann")
    assert result.stop_reason == "no_heartbeat" and result.replies == []
    assert unanswered_texts(agent) == ["I am Ann"]
    fake_llm.enqueue(say("Hi Ann"))
    agent.step("who am I?")
    last = fake_llm.chat_requests[-1]
    assert user_texts(last) == ["who am I?"]
    assert "name: Ann" in last["messages"][0]["content"]  # the edit it made stands
    assert fake_llm.rejections == []


def test_a_step_waiting_for_approval_is_not_unanswered(fake_llm: FakeOpenAIServer, db_location):
    agent = make_agent(db_location, tool_rules=[needs_approval("archival_memory_insert")])
    insert = call("archival_memory_insert", content="tea", request_heartbeat=True)
    fake_llm.enqueue(reply(tool_calls=[insert]))
    assert agent.step("remember tea").stop_reason == "approval_required"
    assert unanswered_texts(agent) == []
    fake_llm.enqueue(error(400, "the model is loading"))
    with pytest.raises(LLMError):
        agent.approve()  # the insert ran, then the step stopped before a reply
    assert unanswered_texts(agent) == ["remember tea"]
    fake_llm.enqueue(say("Remembered."))
    assert agent.runner.retry().replies == ["Remembered."]
    assert unanswered_texts(agent) == []
    assert fake_llm.rejections == []
