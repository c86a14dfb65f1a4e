"""Agents with registered tools (`Agent.create(tools=["name"])`, `tools
attach`): offered to the model, called in a process of their own, under the
same approvals and tool rules as any tool; a function given in code wins."""

from __future__ import annotations

import pytest

from memgpt_lite import Agent, AgentSettings, ConfigError, tool
from memgpt_lite.agent.workspace import Workspace
from memgpt_lite.models import ToolDefinition
from memgpt_lite.settings.resolve import resolve_settings
from memgpt_lite.testing import call, reply, say
from memgpt_lite.tools.external import ExternalTool
from memgpt_lite.tools.rules import ends_step, needs_approval
from memgpt_lite.tools.sets import tool_origin

WEATHER = '''
def weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: Where.
    """
    return f"{city}: sunny"
'''


@pytest.fixture
def workspace(tmp_path):
    with Workspace.open(tmp_path / "agents.db", resolve_settings()) as opened:
        opened.tools.add_source(WEATHER, name=None, owner="local", what="weather.py")
        yield opened


def offered(request: dict) -> dict[str, dict]:
    return {t["function"]["name"]: t["function"] for t in request["tools"]}


def test_an_agent_created_with_a_tool_name_calls_it_in_its_own_process(fake_llm, workspace):
    agent = Agent.create("sam", "gpt-4o-mini", store=workspace.store, tools=["weather"])
    assert agent.state.tool_names == ["weather"]
    fake_llm.enqueue(
        reply(tool_calls=[call("weather", city="Leeds", request_heartbeat=True)]),
        say("It is sunny in Leeds."),
    )
    result = agent.step("Weather in Leeds?")
    assert [(r.call.name, r.content, r.ok) for r in result.tool_results[:1]] == [
        ("weather", "Leeds: sunny", True)
    ]
    assert result.replies == ["It is sunny in Leeds."]
    function = offered(fake_llm.chat_requests[0])["weather"]
    assert function["description"] == "The weather in a city."
    assert function["parameters"]["required"] == ["city", "request_heartbeat"]
    loaded = Agent.load("sam", store=workspace.store)
    assert isinstance(loaded.tools["weather"], ExternalTool)
    assert tool_origin(loaded.tools["weather"], "memgpt") == "registry: python source"
    assert tool_origin(loaded.tools["send_message"], "memgpt") == "built-in, memgpt set"


def test_a_function_given_in_code_wins_for_its_name(fake_llm, workspace):
    @tool
    def weather(city: str) -> str:
        """Local weather."""
        return "from code"

    Agent.create("sam", "gpt-4o-mini", store=workspace.store, tools=["weather"])
    agent = Agent.load("sam", store=workspace.store, tools=[weather])
    assert agent.tools["weather"] is weather
    assert tool_origin(weather, "memgpt") == "code: given to Agent.create or Agent.load"
    fake_llm.enqueue(reply(tool_calls=[call("weather", city="Oslo")]))
    assert agent.step("weather?").tool_results[0].content == "from code"


def test_a_name_not_registered_is_refused_before_anything_is_stored(workspace):
    with pytest.raises(ConfigError) as refused:
        Agent.create("sam", "gpt-4o-mini", store=workspace.store, tools=["weather", "ghost"])
    assert str(refused.value) == (
        "no registered tool named 'ghost'; add it with `memgpt-lite tools add FILE.py`, or "
        "give the function itself (the built-in tools attached by name are: "
        "send_message_to_agent_and_wait_for_reply, send_message_to_agents_matching_tags, "
        "send_message_to_all_agents_in_group)"
    )
    assert workspace.list_agents() == []


def test_another_users_tool_is_not_theirs(workspace):
    with pytest.raises(ConfigError, match="no registered tool named 'weather'"):
        Agent.create("eve", "m", store=workspace.store, tools=["weather"], owner="eve")


def test_approvals_and_tool_rules_apply_to_a_registered_tool(fake_llm, workspace):
    settings = AgentSettings(tool_rules=[needs_approval("weather"), ends_step("weather")])
    Agent.create("sam", "gpt-4o-mini", store=workspace.store, settings=settings)
    workspace.tools.attach("sam", ["weather"])
    agent = Agent.load("sam", store=workspace.store)
    fake_llm.enqueue(reply(tool_calls=[call("weather", city="Rome", request_heartbeat=True)]))
    waiting = agent.step("Weather in Rome?")
    assert waiting.stop_reason == "approval_required"
    assert [c.name for c in waiting.pending_approvals] == ["weather"]
    done = agent.approve()
    assert [r.content for r in done.tool_results] == ["Rome: sunny"]
    assert done.stop_reason == "tool_rule"  # it ended the step, heartbeat or not


def test_an_untrusted_tool_is_offered_and_its_call_says_how_to_trust_it(fake_llm, workspace):
    imported = ToolDefinition(
        name="scrape",
        kind="python",
        source_code="def scrape(url: str) -> str:\n    return 'page'\n",
        json_schema={"parameters": {"type": "object", "properties": {"url": {"type": "string"}}}},
    )
    workspace.store.add_tool(imported)
    agent = Agent.create("sam", "gpt-4o-mini", store=workspace.store, tools=["scrape"])
    fake_llm.enqueue(
        reply(tool_calls=[call("scrape", url="http://127.0.0.1/", request_heartbeat=True)]),
        say("I may not use it yet."),
    )
    result = agent.step("Read the page")
    assert (result.tool_results[0].content, result.tool_results[0].ok) == (
        "Error: tool scrape is not trusted: run `memgpt-lite tools trust scrape`",
        False,
    )
    assert "scrape" in offered(fake_llm.chat_requests[0])
    workspace.tools.trust("scrape", "local")
    trusted = Agent.load("sam", store=workspace.store)
    fake_llm.enqueue(reply(tool_calls=[call("scrape", url="http://127.0.0.1/")]))
    assert trusted.step("Now?").tool_results[0].content == "page"


def test_a_tool_detached_is_no_longer_offered(fake_llm, workspace):
    Agent.create("sam", "gpt-4o-mini", store=workspace.store, tools=["weather"])
    workspace.tools.detach("sam", ["weather"])
    agent = Agent.load("sam", store=workspace.store)
    assert "weather" not in agent.tools
    fake_llm.enqueue(say("Hi"))
    agent.step("hello")
    assert "weather" not in offered(fake_llm.chat_requests[0])
