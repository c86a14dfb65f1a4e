"""A step asked to stop (loop/stopping.py) stops at its next safe point:
before it begins, after the model answered (its calls answered, not run),
or before the next request; what it stored is whole and the agent goes on."""

from __future__ import annotations

from typing import Any

from memgpt_lite import Agent, StopRequest
from memgpt_lite.loop.stopping import NOT_RUN
from memgpt_lite.testing import call, reply, say
from memgpt_lite.testing.model import FunctionModel, ScriptedModel


def make_agent(tmp_path, llm: Any) -> Agent:
    return Agent.create("sam", "gpt-4o-mini", db=tmp_path / "agents.db", llm=llm)


def calls_answered(agent: Agent) -> bool:
    messages = agent.context_messages()
    calls = [c.id for m in messages for c in m.tool_calls]
    return calls == [m.tool_call_id for m in messages if m.role == "tool"]


def test_a_stop_asked_while_the_model_answers_stores_its_calls_answered_not_run(tmp_path):
    stop = StopRequest()

    def answer(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        if messages[-1]["content"] == "next":
            return say("Here again.")
        stop.stop()  # the user cancels while the model writes its answer
        return reply(
            "Saving two things.",
            tool_calls=[
                call("archival_memory_insert", content="tea", request_heartbeat=True),
                call("send_message", message="saved"),
            ],
        )

    model = FunctionModel(answer)
    agent = make_agent(tmp_path, model)
    result = agent.step("remember tea", stop=stop)
    assert result.stop_reason == "cancelled" and result.replies == []
    assert [r.content for r in result.tool_results] == [NOT_RUN, NOT_RUN]
    roles = [m.role for m in agent.context_messages()]
    assert roles == ["user", "assistant", "tool", "tool"] and calls_answered(agent)
    assert agent.archival.count() == 0  # the insert did not run
    assert agent.step("next").replies == ["Here again."]
    assert model.rejections == [] and len(model.requests) == 2


def test_a_stop_between_requests_ends_the_step_before_the_next(tmp_path):
    model = ScriptedModel(
        reply(
            "Save.",
            tool_calls=[call("archival_memory_insert", content="tea", request_heartbeat=True)],
        ),
        say("not asked for"),
    )
    agent = make_agent(tmp_path, model)
    # Asked elsewhere once the first answer's call ran (as a server reads a run's row).
    stop = StopRequest(lambda: agent.archival.count() > 0)
    result = agent.step("remember tea", stop=stop)
    assert result.stop_reason == "cancelled" and len(model.requests) == 1
    assert agent.archival.count() == 1 and calls_answered(agent)


def test_a_step_stopped_before_it_begins_stores_nothing(tmp_path):
    stop = StopRequest()
    stop.stop()
    model = ScriptedModel(say("Hello."))
    agent = make_agent(tmp_path, model)
    events = list(agent.stream("hi", stop=stop))
    assert events[-1].result.stop_reason == "cancelled" and events[-1].result.messages == []
    assert agent.context_messages() == [] and model.requests == []
    assert agent.step("hi").replies == ["Hello."]
