"""The agent loop against the validating fake server: every tool call gets
exactly one result, whatever fails, and the next request is still accepted.
The tests that store and reload state (memory edits, searches, a reload, a
failed step's rollback) run against SQLite and PostgreSQL (`db_location`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memgpt_lite import Agent, AgentSettings, Block, LLMError, ModelRetry, tool
from memgpt_lite.testing import FakeOpenAIServer, call, call_raw, reply, say


def make_agent(fake_llm: FakeOpenAIServer, tmp_path, **kwargs) -> Agent:
    return make_agent_in(tmp_path / "agents.db", **kwargs)


def make_agent_in(db: str | Path, **kwargs) -> Agent:
    return Agent.create("sam", "gpt-4o-mini", db=db, **kwargs)


def answered_ids(request: dict) -> list[str]:
    return [m["tool_call_id"] for m in request["messages"] if m["role"] == "tool"]


def requested_ids(request: dict) -> list[str]:
    return [
        c["id"]
        for m in request["messages"]
        if m["role"] == "assistant"
        for c in m.get("tool_calls", [])
    ]


def test_send_message_ends_the_step(fake_llm, tmp_path):
    agent = make_agent(fake_llm, tmp_path)
    fake_llm.enqueue(reply(content="greet them", tool_calls=[call("send_message", message="Hi!")]))
    result = agent.step("hello")
    assert result.replies == ["Hi!"]
    assert result.thoughts == ["greet them"]
    assert result.stop_reason == "send_message"
    assert result.usage.requests == 1 and result.usage.prompt_tokens > 0
    request = fake_llm.chat_requests[0]
    assert request["tool_choice"] == "required"
    assert request["messages"][-1] == {"role": "user", "content": "hello"}
    names = {t["function"]["name"] for t in request["tools"]}
    assert names == {
        "send_message",
        "core_memory_append",
        "core_memory_replace",
        "conversation_search",
        "conversation_search_date",
        "archival_memory_insert",
        "archival_memory_search",
    }


def test_heartbeat_chains_and_memory_edit_reaches_next_system_message(fake_llm, db_location):
    agent = make_agent_in(db_location)
    fake_llm.enqueue(
        reply(
            tool_calls=[
                call(
                    "core_memory_append",
                    label="human",
                    content="Name: Alice",
                    request_heartbeat=True,
                )
            ]
        ),
        say("Nice to meet you, Alice."),
    )
    result = agent.step("Hi, my name is Alice")
    assert result.replies == ["Nice to meet you, Alice."]
    assert len(fake_llm.chat_requests) == 2
    assert "Name: Alice" in fake_llm.chat_requests[1]["messages"][0]["content"]
    assert "Name: Alice" in agent.block("human").value


def test_no_heartbeat_ends_the_step_without_reply(fake_llm, tmp_path):
    agent = make_agent(fake_llm, tmp_path)
    fake_llm.enqueue(
        reply(tool_calls=[call("archival_memory_insert", content="x", request_heartbeat=False)])
    )
    result = agent.step("remember x")
    assert result.replies == [] and result.stop_reason == "no_heartbeat"
    assert len(fake_llm.chat_requests) == 1


def test_plain_text_reply_is_the_answer(fake_llm, tmp_path):
    agent = make_agent(fake_llm, tmp_path)
    fake_llm.enqueue(reply(content="Hello there, I answer without tools."))
    result = agent.step("hi")
    assert result.replies == ["Hello there, I answer without tools."]
    assert result.stop_reason == "text_reply"
    assert agent.context_messages()[-1].content == "Hello there, I answer without tools."


@pytest.mark.parametrize(
    ("bad_call", "expected"),
    [
        (call_raw("core_memory_append", '{"label": "human", '), "not valid JSON"),
        (call_raw("core_memory_append", "[1, 2]"), "must be a JSON object"),
        (call("no_such_tool", x=1), "no tool named 'no_such_tool'"),
        (call("core_memory_append", label="human"), "content: Field required"),
        (call("core_memory_append", label=5, content="x"), "label: Input should be a valid string"),
        (call("core_memory_append", label="human", content="x", colour="red"), "colour: Extra"),
        (
            call("conversation_search_date", start_date="last week", end_date="2026-01-01"),
            "start_date must be a date as YYYY-MM-DD",
        ),
    ],
    ids=[
        "invalid-json",
        "not-an-object",
        "unknown-tool",
        "missing-arg",
        "wrong-type",
        "extra-arg",
        "bad-date",
    ],
)
def test_bad_calls_become_readable_errors_and_the_loop_goes_on(
    fake_llm, tmp_path, bad_call, expected
):
    agent = make_agent(fake_llm, tmp_path)
    fake_llm.enqueue(reply(tool_calls=[bad_call]), say("sorry"))
    result = agent.step("do it")
    assert result.tool_results[0].ok is False
    assert expected in result.tool_results[0].content
    assert result.tool_results[0].content.startswith("Error:")
    # A failed call earns another turn, and that request passes validation.
    assert result.replies == ["sorry"]
    second = fake_llm.chat_requests[1]
    assert answered_ids(second) == requested_ids(second) == [result.tool_results[0].call.id]
    assert fake_llm.rejections == []


def test_exception_in_a_custom_tool_is_reported_not_raised(fake_llm, tmp_path):
    @tool
    def divide(a: int, b: int) -> float:
        """Divide a by b."""
        return a / b

    agent = make_agent(fake_llm, tmp_path, tools=[divide])
    fake_llm.enqueue(
        reply(tool_calls=[call("divide", a=1, b=0, request_heartbeat=False)]), say("oops")
    )
    result = agent.step("divide")
    assert (
        result.tool_results[0].content
        == "Error: divide failed: ZeroDivisionError: division by zero"
    )
    assert result.replies == ["oops"]
    assert fake_llm.rejections == []


def test_parallel_calls_all_answered_in_order(fake_llm, db_location):
    agent = make_agent_in(db_location)
    calls = [
        call("archival_memory_insert", content="one", request_heartbeat=False),
        call_raw("archival_memory_insert", "{broken"),
        call("nope"),
        call("send_message", message="done"),
    ]
    fake_llm.enqueue(reply(tool_calls=calls), say("after the failures"))
    result = agent.step("go")
    ids = [c.id for c in calls]
    assert [r.call.id for r in result.tool_results[:4]] == ids
    assert [r.ok for r in result.tool_results[:4]] == [True, False, False, True]
    assert result.replies == ["done", "after the failures"]
    assert answered_ids(fake_llm.chat_requests[1]) == ids
    assert fake_llm.rejections == []


def test_every_send_message_in_one_response_is_delivered_in_order(fake_llm, tmp_path):
    agent = make_agent(fake_llm, tmp_path)
    first, second = call("send_message", message="one"), call("send_message", message="two")
    fake_llm.enqueue(reply(tool_calls=[first, second]))
    result = agent.step("talk")
    assert result.replies == ["one", "two"]
    assert [r.ok for r in result.tool_results] == [True, True]
    assert result.stop_reason == "send_message"
    fake_llm.enqueue(say("next"))
    agent.step("again")
    assert answered_ids(fake_llm.chat_requests[1]) == [first.id, second.id]
    assert fake_llm.rejections == []


def test_an_empty_send_message_is_refused_and_the_model_tries_again(fake_llm, tmp_path):
    agent = make_agent(fake_llm, tmp_path)
    fake_llm.enqueue(reply(tool_calls=[call("send_message", message="  ")]), say("there"))
    result = agent.step("talk")
    assert result.replies == ["there"]
    assert "message is empty" in result.tool_results[0].content


def test_step_limit_answers_every_call_and_the_next_step_works(fake_llm, db_location):
    agent = make_agent_in(db_location, settings=AgentSettings(max_chained_steps=3))
    looping = [
        reply(
            tool_calls=[
                call("conversation_search", query="x", request_heartbeat=True),
                call("archival_memory_search", query="y", request_heartbeat=True),
            ]
        )
        for _ in range(3)
    ]
    fake_llm.enqueue(*looping)
    result = agent.step("loop forever")
    assert result.stop_reason == "step_limit"
    assert len(fake_llm.chat_requests) == 3
    assert len(result.tool_results) == 6
    # The dangling heartbeat did not leave any call unanswered in context.
    fake_llm.enqueue(say("back"))
    assert agent.step("hello?").replies == ["back"]
    last = fake_llm.chat_requests[-1]
    assert sorted(answered_ids(last)) == sorted(requested_ids(last))
    assert len(requested_ids(last)) == 6
    assert fake_llm.rejections == []


def test_model_retry_from_custom_tool(fake_llm, tmp_path):
    @tool
    def book(day: str) -> str:
        """Book a table."""
        raise ModelRetry(f"{day} is full, pick another day")

    agent = make_agent(fake_llm, tmp_path, tools=[book])
    fake_llm.enqueue(
        reply(tool_calls=[call("book", day="monday", request_heartbeat=False)]), say("ok")
    )
    result = agent.step("book monday")
    assert result.tool_results[0].content == "Error: monday is full, pick another day"
    assert len(fake_llm.chat_requests) == 2


def test_long_results_are_truncated_with_a_note(fake_llm, tmp_path):
    @tool
    def dump() -> str:
        """Return a lot."""
        return "x" * 50_000

    agent = make_agent(
        fake_llm, tmp_path, tools=[dump], settings=AgentSettings(tool_result_max_chars=1000)
    )
    fake_llm.enqueue(reply(tool_calls=[call("dump", request_heartbeat=False)]))
    result = agent.step("dump")
    content = result.tool_results[0].content
    assert len(content) == 1000
    assert "truncated: the result was 50000 characters" in content


class TestCoreMemoryRules:
    def run_call(self, fake_llm, agent, tool_call):
        fake_llm.enqueue(reply(tool_calls=[tool_call]), say("ok"))
        return agent.step("edit").tool_results[0]

    def test_edit_over_the_limit_fails_and_leaves_the_block(self, fake_llm, tmp_path):
        blocks = [Block(label="persona", value="p"), Block(label="human", value="abc", limit=10)]
        agent = make_agent(fake_llm, tmp_path, blocks=blocks)
        result = self.run_call(
            fake_llm,
            agent,
            call(
                "core_memory_append", label="human", content="0123456789", request_heartbeat=False
            ),
        )
        assert not result.ok
        assert (
            "over its limit of 10" in result.content and "archival_memory_insert" in result.content
        )
        assert agent.block("human").value == "abc"
        result = self.run_call(
            fake_llm,
            agent,
            call(
                "core_memory_replace",
                label="human",
                old_content="abc",
                new_content="y" * 11,
                request_heartbeat=False,
            ),
        )
        assert not result.ok and agent.block("human").value == "abc"

    def test_read_only_block_refuses(self, fake_llm, tmp_path):
        blocks = [Block(label="rules", value="be kind", read_only=True)]
        agent = make_agent(fake_llm, tmp_path, blocks=blocks)
        result = self.run_call(
            fake_llm,
            agent,
            call("core_memory_append", label="rules", content="be rude", request_heartbeat=False),
        )
        assert not result.ok and "read-only" in result.content
        assert agent.block("rules").value == "be kind"
        assert 'read_only="true"' in fake_llm.chat_requests[0]["messages"][0]["content"]

    def test_old_content_not_found(self, fake_llm, tmp_path):
        agent = make_agent(fake_llm, tmp_path, blocks=[Block(label="human", value="Name: Bob")])
        result = self.run_call(
            fake_llm,
            agent,
            call(
                "core_memory_replace",
                label="human",
                old_content="Name: Alice",
                new_content="x",
                request_heartbeat=False,
            ),
        )
        assert not result.ok and "was not found" in result.content
        assert agent.block("human").value == "Name: Bob"

    def test_replace_works(self, fake_llm, tmp_path):
        agent = make_agent(fake_llm, tmp_path, blocks=[Block(label="human", value="Name: Bob")])
        result = self.run_call(
            fake_llm,
            agent,
            call(
                "core_memory_replace",
                label="human",
                old_content="Bob",
                new_content="Robert",
                request_heartbeat=False,
            ),
        )
        assert result.ok and agent.block("human").value == "Name: Robert"

    def test_appending_a_held_line_is_a_no_op(self, fake_llm, tmp_path):
        agent = make_agent(fake_llm, tmp_path, blocks=[Block(label="human", value="Likes tea")])
        result = self.run_call(
            fake_llm,
            agent,
            call("core_memory_append", label="human", content="Likes tea", request_heartbeat=False),
        )
        assert result.ok and "already holds" in result.content
        assert agent.block("human").value == "Likes tea"

    def test_unknown_label(self, fake_llm, tmp_path):
        agent = make_agent(fake_llm, tmp_path)
        result = self.run_call(
            fake_llm,
            agent,
            call("core_memory_append", label="pets", content="a cat", request_heartbeat=False),
        )
        assert not result.ok and "persona, human" in result.content


def test_system_message_shows_blocks_and_metadata(fake_llm, db_location):
    blocks = [
        Block(label="persona", value="I am Sam.", description="who I am"),
        Block(label="human", value="", limit=100),
    ]
    agent = make_agent_in(db_location, blocks=blocks)
    fake_llm.enqueue(
        reply(
            tool_calls=[call("archival_memory_insert", content="fact one", request_heartbeat=True)]
        ),
        say("saved"),
    )
    agent.step("save a fact")
    first, second = (r["messages"][0]["content"] for r in fake_llm.chat_requests)
    assert '<block label="persona" chars="9/5000">' in first
    assert "<description>who I am</description>" in first
    assert '<block label="human" chars="0/100">' in first
    assert "1 messages in recall memory" in first and "0 passages in archival memory" in first
    assert "Memory last modified: never" in first
    # Recompiled after the edit: the passage count and the modification time moved.
    assert "1 passages in archival memory" in second
    assert "Memory last modified: never" not in second


def test_conversation_search_leaves_out_the_current_step(fake_llm, db_location):
    agent = make_agent_in(db_location)
    fake_llm.enqueue(say("I like zebras too"))
    agent.step("I love zebras")
    fake_llm.enqueue(
        reply(tool_calls=[call("conversation_search", query="zebras", request_heartbeat=False)])
    )
    result = agent.step("what about zebras?")
    content = result.tool_results[0].content
    assert "of 2 results" in content
    assert "user: I love zebras" in content and "assistant: I like zebras too" in content
    assert "what about zebras" not in content


def test_tool_arguments_reach_the_function_typed(fake_llm, tmp_path):
    seen = {}

    @tool
    def plan(days: int, places: list[str]) -> dict:
        """Plan a trip."""
        seen.update(days=days, places=places)
        return {"ok": True}

    agent = make_agent(fake_llm, tmp_path, tools=[plan])
    fake_llm.enqueue(
        reply(tool_calls=[call("plan", days="3", places=["Rome"], request_heartbeat=False)])
    )
    result = agent.step("plan")
    assert seen == {"days": 3, "places": ["Rome"]}
    assert json.loads(result.tool_results[0].content) == {"ok": True}


def test_custom_tool_not_given_on_load_is_hidden_and_answered(fake_llm, db_location, caplog):
    @tool
    def weather(city: str) -> str:
        """Tell the weather."""
        return "sunny"

    make_agent_in(db_location, tools=[weather])
    agent = Agent.load("sam", db=db_location)
    assert "tools weather were not given" in caplog.text
    fake_llm.enqueue(reply(tool_calls=[call("weather", city="Oslo")]), say("no idea"))
    result = agent.step("weather?")
    assert "weather" not in {t["function"]["name"] for t in fake_llm.chat_requests[0]["tools"]}
    assert "no tool named 'weather'" in result.tool_results[0].content
    assert Agent.load("sam", db=db_location, tools=[weather]).state.tool_names == ["weather"]


def test_saved_state_changes_reach_the_next_request(fake_llm, db_location):
    agent = make_agent_in(db_location)
    agent.state.llm.model = "gpt-4.1-mini"
    agent.state.llm.temperature = 0.2
    agent.save()
    fake_llm.enqueue(say("ok"))
    Agent.load("sam", db=db_location).step("hi")
    assert fake_llm.chat_requests[0]["model"] == "gpt-4.1-mini"
    assert fake_llm.chat_requests[0]["temperature"] == 0.2


def test_an_empty_reply_is_asked_again_with_a_reminder_and_never_stored(fake_llm, tmp_path):
    agent = make_agent(fake_llm, tmp_path)
    fake_llm.enqueue(reply(), say("there you are"))
    result = agent.step("hello?")
    assert result.replies == ["there you are"]
    reminder = fake_llm.chat_requests[1]["messages"][-1]
    assert reminder["role"] == "system" and "send_message" in reminder["content"]
    stored = [(m.role, m.content, len(m.tool_calls)) for m in agent.context_messages()]
    assert stored[:2] == [("user", "hello?", 0), ("assistant", None, 1)]
    assert result.usage.requests == 2
    fake_llm.enqueue(say("fine"))
    agent.step("again")
    assert fake_llm.rejections == []
    assert all(m["role"] != "system" for m in fake_llm.chat_requests[-1]["messages"][1:])


def test_two_empty_replies_fail_cleanly_and_the_agent_stays_valid(fake_llm, db_location):
    agent = make_agent_in(db_location)
    fake_llm.enqueue(reply(content="   "), reply())
    with pytest.raises(LLMError, match="empty message"):
        agent.step("hello?")
    assert [m.role for m in agent.context_messages()] == ["user"]
    fake_llm.enqueue(say("back"))
    assert agent.step("hello again").replies == ["back"]
    assert fake_llm.rejections == []
