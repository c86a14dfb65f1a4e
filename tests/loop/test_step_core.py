"""The one step core behind step, astep, stream and astream: its events, its
drivers, async tools, many agents in one event loop, and a step stopped at
any event leaving the stored agent consistent."""

from __future__ import annotations

import asyncio
import threading

import pytest

from memgpt_lite import Agent, LLMError, tool
from memgpt_lite.events import (
    STEP_EVENT,
    MessageDelta,
    ReplyDelivered,
    RequestSent,
    StepFailed,
    StepFinished,
    StepStarted,
    ThoughtDelta,
    ToolCallStarted,
    ToolReturned,
    UsageReported,
)
from memgpt_lite.testing import FakeOpenAIServer, call, error, reply, say
from memgpt_lite.testing.model import ScriptedModel


def make_agent(tmp_path, name: str = "sam", **kwargs) -> Agent:
    return Agent.create(name, "gpt-4o-mini", db=tmp_path / "agents.db", **kwargs)


def kinds(events) -> list[str]:
    return [e.type for e in events]


def save_then_say(text: str = "Saved.") -> list:
    return [
        reply(
            content="Worth keeping.",
            tool_calls=[call("archival_memory_insert", content="Tea", request_heartbeat=True)],
        ),
        say(text),
    ]


def tea_then_hello(body: dict) -> object:
    """Answers the tea exchange of `save_then_say`, and anything else with a
    greeting: for steps that may have been stopped anywhere."""
    users = [m for m in body["messages"] if m["role"] == "user"]
    if users[-1]["content"] != "I like tea":
        return say("Still here.")
    return save_then_say()[body["messages"][-1]["role"] == "tool"]


def test_stream_yields_each_event_in_order_and_step_returns_the_same_result(fake_llm, tmp_path):
    agent = make_agent(tmp_path)
    fake_llm.enqueue(*save_then_say())
    events = list(agent.stream("I like tea"))
    deltas = [e for e in events if e.type in ("thought_delta", "message_delta")]
    # The model's words, as the fake server streamed them in pieces.
    thought = "".join(e.text for e in deltas if isinstance(e, ThoughtDelta))
    assert thought == "Worth keeping."
    assert "".join(e.text for e in deltas if isinstance(e, MessageDelta)) == "Saved."
    assert len(deltas) > 3
    events = [e for e in events if e not in deltas]
    assert kinds(events) == [
        "step_started",
        "request_sent",
        "usage",
        "tool_call_started",
        "tool_returned",
        "request_sent",
        "usage",
        "tool_call_started",
        "tool_returned",
        "reply_delivered",
        "step_finished",
    ]
    started, finished = events[0], events[-1]
    assert isinstance(started, StepStarted) and started.user_message == "I like tea"
    assert {e.step_id for e in events} == {started.step_id}
    assert isinstance(finished, StepFinished)
    assert finished.result.replies == ["Saved."]
    assert [e.text for e in events if isinstance(e, ReplyDelivered)] == ["Saved."]
    calls = [e.call.name for e in events if isinstance(e, ToolCallStarted)]
    assert calls == ["archival_memory_insert", "send_message"]
    assert all(e.ok for e in events if isinstance(e, ToolReturned))
    sent = [e for e in events if isinstance(e, RequestSent)]
    assert sent[1].messages == sent[0].messages + 2  # the call and its result
    # Each request names what the step had stored before it went: the user's
    # message, then also the first answer and its tool's result.
    stored = [m.id for m in finished.result.messages]
    assert (sent[0].stored, sent[1].stored) == (stored[:1], stored[:3])
    usage = [e.usage.requests for e in events if isinstance(e, UsageReported)]
    assert usage == [1, 1] and finished.result.usage.requests == 2

    fake_llm.enqueue(*save_then_say())
    assert agent.step("Again").replies == ["Saved."]
    assert fake_llm.rejections == []


def test_events_round_trip_through_json(fake_llm, tmp_path):
    agent = make_agent(tmp_path)
    fake_llm.enqueue(*save_then_say())
    for event in agent.stream("I like tea"):
        again = STEP_EVENT.validate_json(event.model_dump_json())
        assert again == event


def test_a_failed_step_ends_the_stream_with_its_error_and_step_raises_it(fake_llm, tmp_path):
    agent = make_agent(tmp_path, llm_options={"max_retries": 0})
    fake_llm.enqueue(error(400, "the model is on a break"))
    events = list(agent.stream("hello"))
    assert kinds(events) == ["step_started", "request_sent", "step_failed"]
    failed = events[-1]
    assert isinstance(failed, StepFailed) and failed.error_type == "LLMError"
    assert "on a break" in failed.message and "error" not in failed.model_dump()
    assert [m.content for m in agent.history.unanswered()] == ["hello"]

    fake_llm.enqueue(error(400, "still on a break"))
    with pytest.raises(LLMError, match="still on a break"):
        agent.step("hello again")


@pytest.mark.parametrize("stop_after", range(1, 10))
def test_leaving_the_stream_at_any_event_keeps_the_agent_consistent(fake_llm, tmp_path, stop_after):
    agent = make_agent(tmp_path)
    fake_llm.responder = tea_then_hello
    seen = []
    for event in agent.stream("I like tea"):
        seen.append(event)
        if len(seen) == stop_after:
            break
    messages = agent.context_messages()
    calls = {c.id for m in messages for c in m.tool_calls}
    answers = {m.tool_call_id for m in messages if m.role == "tool"}
    assert calls == answers  # never a call without its result
    assert agent.step("Are you there?").replies == ["Still here."]  # the lock was released
    assert fake_llm.rejections == []


def test_astep_runs_async_tools_and_sync_tools_in_worker_threads(fake_llm, tmp_path):
    threads: dict[str, int] = {}

    @tool
    async def look_up(word: str) -> str:
        """Look a word up.

        Args:
            word: The word.
        """
        await asyncio.sleep(0)
        threads["async"] = threading.get_ident()
        return f"{word}: a drink"

    @tool
    def count_letters(word: str) -> int:
        """Count a word's letters.

        Args:
            word: The word.
        """
        threads["sync"] = threading.get_ident()
        return len(word)

    agent = make_agent(tmp_path, tools=[look_up, count_letters])
    fake_llm.enqueue(
        reply(
            tool_calls=[
                call("look_up", word="tea", request_heartbeat=True),
                call("count_letters", word="tea", request_heartbeat=True),
            ]
        ),
        say("Tea is a drink of 3 letters."),
    )

    async def main() -> list[str]:
        threads["loop"] = threading.get_ident()
        result = await agent.astep("What is tea?")
        return [r.content for r in result.tool_results]

    assert asyncio.run(main())[:2] == ["tea: a drink", "3"]
    assert threads["async"] == threads["loop"] != threads["sync"]

    fake_llm.enqueue(
        reply(tool_calls=[call("count_letters", word="milk", request_heartbeat=True)]),
        say("4."),
    )
    threads.clear()
    agent.step("And milk?")  # a plain step runs a sync tool in the caller's thread
    assert threads["sync"] == threading.get_ident()
    assert fake_llm.rejections == []


def test_many_agents_step_at_once_in_one_event_loop(tmp_path):
    with FakeOpenAIServer() as server:
        server.responder = lambda body: say("Hello.")
        agents = [
            make_agent(tmp_path, f"a{i}", base_url=server.base_url, api_key=server.api_key)
            for i in range(6)
        ]

        async def main() -> list[list[str]]:
            async def chat(agent: Agent) -> list[str]:
                replies = []
                for turn in range(3):
                    replies += (await agent.astep(f"turn {turn}")).replies
                return replies

            return await asyncio.gather(*(chat(a) for a in agents))

        assert asyncio.run(main()) == [["Hello."] * 3] * 6
        assert server.rejections == []
        for agent in agents:
            assert [m.role for m in agent.context_messages()].count("user") == 3


def test_two_asteps_of_one_agent_take_turns(fake_llm, tmp_path):
    agent = make_agent(tmp_path)
    fake_llm.responder = lambda body: say("Yes.")

    async def main() -> None:
        await asyncio.gather(agent.astep("one"), agent.astep("two"))

    asyncio.run(main())
    roles = [m.role for m in agent.context_messages()]
    # Each step's exchange is whole: user, answer, result; never interleaved.
    assert roles == ["user", "assistant", "tool"] * 2
    assert fake_llm.rejections == []


@pytest.mark.parametrize("cancel_after", range(1, 9))
def test_a_cancelled_astream_leaves_the_agent_consistent(fake_llm, tmp_path, cancel_after):
    agent = make_agent(tmp_path)
    fake_llm.responder = tea_then_hello

    async def main() -> None:
        count = 0

        async def consume() -> None:
            nonlocal count
            async for _ in agent.astream("I like tea"):
                count += 1
                if count == cancel_after:
                    task.cancel()
                    await asyncio.sleep(1)  # cancelled here

        task = asyncio.create_task(consume())
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert agent.step("Hello?").replies == ["Still here."]
    assert fake_llm.rejections == []


# ------------------------------------------------- the loop with an in-process model


def test_the_loop_with_a_scripted_model_streams_thought_and_message(tmp_path):
    model = ScriptedModel(
        reply(content="They like tea.", tool_calls=[call("send_message", message="Tea it is!")]),
        piece_chars=3,
    )
    agent = make_agent(tmp_path, llm=model)
    events = list(agent.stream("I like tea"))
    thought = [e.text for e in events if isinstance(e, ThoughtDelta)]
    words = [e.text for e in events if isinstance(e, MessageDelta)]
    assert "".join(thought) == "They like tea." and len(thought) == 5
    assert "".join(words) == "Tea it is!" and len(words) > 1
    # The message streams before the tool runs and the reply is delivered.
    order = [e.type for e in events]
    assert order.index("message_delta") < order.index("tool_call_started")
    assert order.index("tool_returned") < order.index("reply_delivered")
    assert events[-1].result.replies == ["Tea it is!"]
    assert len(model.requests) == 1 and model.rejections == []
    assert model.requests[0].messages[-1] == {"role": "user", "content": "I like tea"}


def test_an_endpoint_that_cannot_stream_is_remembered(tmp_path):
    model = ScriptedModel(say("One."), say("Two."), streaming=False)
    agent = make_agent(tmp_path, llm=model)
    assert agent.state.llm.stream is True
    assert agent.step("first").replies == ["One."]
    assert agent.state.llm.stream is False
    assert Agent.load("sam", db=tmp_path / "agents.db").state.llm.stream is False  # stored
    assert agent.step("second").replies == ["Two."]
    assert [r.config.stream for r in model.requests] == [True, False]


@pytest.mark.parametrize("kind", ["refuse", "ignore"])
def test_a_server_that_cannot_stream_is_remembered(fake_llm, tmp_path, kind):
    fake_llm.streaming = kind
    agent = make_agent(tmp_path)
    fake_llm.enqueue(say("One."), say("Two."))
    events = list(agent.stream("first"))
    assert events[-1].result.replies == ["One."]
    assert not any(isinstance(e, MessageDelta) for e in events)  # it came whole
    assert Agent.load("sam", db=tmp_path / "agents.db").state.llm.stream is False
    assert agent.step("second").replies == ["Two."]
    last = fake_llm.chat_requests[-1]
    assert "stream" not in last and "stream_options" not in last
    refused = [r.error for r in fake_llm.rejections]
    # Asked once (refused, or ignored), never again.
    assert len(refused) == (kind == "refuse") and all("stream" in e for e in refused)


def test_a_model_error_fails_the_step_with_nothing_half_stored(tmp_path):
    model = ScriptedModel(LLMError("the model is tired"))
    agent = make_agent(tmp_path, llm=model)
    with pytest.raises(LLMError, match="tired"):
        agent.step("hello")
    assert [m.role for m in agent.context_messages()] == ["user"]
    assert [m.content for m in agent.history.unanswered()] == ["hello"]
