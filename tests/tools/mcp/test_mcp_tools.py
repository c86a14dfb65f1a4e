"""An MCP server's tools as an agent's tools: the server's input schema
(plus request_heartbeat) sent to the model, calls run on the server, its
errors and a hung call as failed results after which the step goes on, and
approvals as for any tool. Against the validating fake OpenAI server and a
real MCP server (tests/support/mcp_server.py) over stdio."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.mcp_server import stdio_command

from memgpt_lite import Agent, AgentSettings
from memgpt_lite.errors import ConfigError
from memgpt_lite.models import MCPServer
from memgpt_lite.testing import call, reply, say
from memgpt_lite.tools.mcp.config import mcp_tool_name
from memgpt_lite.tools.mcp.connections import MCPConnections, MCPServerError
from memgpt_lite.tools.mcp.results import MCPToolInfo
from memgpt_lite.tools.mcp.tool import MCPTool, mcp_tools
from memgpt_lite.tools.rules import at_most


@pytest.fixture(scope="module")
def connections() -> Iterator[MCPConnections]:
    with MCPConnections() as connections:
        yield connections


@pytest.fixture(scope="module")
def server():
    command, args = stdio_command()
    return MCPServer(name="tests", transport="stdio", command=command, args=args)


@pytest.fixture(scope="module")
def tools(connections, server) -> dict[str, MCPTool]:
    return {tool.name: tool for tool in mcp_tools(server, timeout=1, connections=connections)}


def test_the_schema_is_the_servers_plus_request_heartbeat(tools):
    function = tools["add"].schema()["function"]
    assert function["name"] == "add" and function["description"] == "Add two whole numbers."
    parameters = function["parameters"]
    assert parameters["required"] == ["a", "b", "request_heartbeat"]
    assert parameters["properties"]["a"]["type"] == "integer"
    assert parameters["properties"]["request_heartbeat"]["type"] == "boolean"


def test_an_agent_calls_the_servers_tools(fake_llm, tmp_path, tools):
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db", tools=list(tools.values()))
    fake_llm.enqueue(
        reply(tool_calls=[call("add", a=2, b=40, request_heartbeat=True)]),
        reply(tool_calls=[call("fail", reason="on a Monday")]),
        say("It is 42."),
    )
    result = agent.step("what is 2 + 40?")
    assert result.replies == ["It is 42."]
    added, failed = result.tool_results[0], result.tool_results[1]
    assert (added.content, added.ok) == ("42", True)
    assert not failed.ok and "failed on purpose: on a Monday" in failed.content
    sent = [m for m in fake_llm.chat_requests[1]["messages"] if m["role"] == "tool"]
    assert sent[-1]["content"] == "42"
    assert fake_llm.rejections == []


def test_a_hung_call_is_a_failed_result_and_the_step_goes_on(fake_llm, tmp_path, tools):
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db", tools=[tools["hang"]])
    fake_llm.enqueue(reply(tool_calls=[call("hang", seconds=3600)]), say("It hung."))
    result = agent.step("wait for an hour")
    hung = result.tool_results[0]
    assert not hung.ok and "did not answer within 1 s" in hung.content
    assert result.replies == ["It hung."]


def test_approval_applies_to_an_mcp_tool(fake_llm, tmp_path, connections, server):
    listed = MCPToolInfo("echo", "Say the text back.", {"type": "object", "properties": {}})
    asking = MCPTool(server, listed, requires_approval=True, connections=connections)
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db", tools=[asking])
    fake_llm.enqueue(
        reply(tool_calls=[call("echo", text="hi", request_heartbeat=True)]), say("Done.")
    )
    waiting = agent.step("echo hi")
    assert waiting.stop_reason == "approval_required"
    result = agent.approve()
    assert result.tool_results[0].content == "hi" and result.replies == ["Done."]


def test_a_tool_can_be_renamed_and_called_from_code(connections, server, tools):
    listed = MCPToolInfo("echo", "", {"type": "object", "properties": {"text": {}}})
    renamed = MCPTool(server, listed, name="say_back", connections=connections)
    assert renamed.name == "say_back" and renamed.remote_name == "echo"
    assert renamed.description == "The tool echo of MCP server tests."
    assert renamed(arguments={"text": "from code"}) == "from code"
    with pytest.raises(MCPServerError, match="failed on purpose: from code"):
        tools["fail"](arguments={"reason": "from code"})


def test_tools_the_agent_cannot_take_are_refused(server, connections):
    dotted = MCPToolInfo("files.read", "", {"type": "object"})
    with pytest.raises(ConfigError, match="must be 1-64 letters"):
        MCPTool(server, dotted, connections=connections)
    assert MCPTool(server, dotted, name="files_read", connections=connections).name == "files_read"
    not_object = MCPToolInfo("odd", "", {"type": "array"})
    with pytest.raises(ConfigError, match="not a JSON object schema"):
        MCPTool(server, not_object, connections=connections)
    clash = MCPToolInfo("beat", "", {"type": "object", "properties": {"request_heartbeat": {}}})
    with pytest.raises(ConfigError, match="has its own request_heartbeat"):
        MCPTool(server, clash, connections=connections)


def test_tool_rules_apply_to_mcp_tools(fake_llm, tmp_path, tools):
    settings = AgentSettings(tool_rules=[at_most("add", 1)])
    agent = Agent.create(
        "sam", "gpt-4o-mini", db=tmp_path / "a.db", tools=[tools["add"]], settings=settings
    )
    twice = [call("add", a=1, b=1, request_heartbeat=True) for _ in range(2)]
    fake_llm.enqueue(reply(tool_calls=twice), say("Two, once."))
    result = agent.step("add 1 and 1, twice")
    first, second = result.tool_results[0], result.tool_results[1]
    assert (first.content, first.ok) == ("2", True)
    assert not second.ok and "add" in second.content


def test_tool_names_are_the_servers_or_prefixed(tools):
    upper = tools["tests__text_upper"]  # mcp_tools names it so: a dot is no tool name
    assert upper.remote_name == "text.upper"
    assert mcp_tool_name("time", "get_time", set()) == "get_time"
    assert mcp_tool_name("time", "get_time", {"get_time"}) == "time__get_time"
    assert mcp_tool_name("files.v2", "read.file", set()) == "files_v2__read_file"
    assert mcp_tool_name("chat", "send_message", set()) == "chat__send_message"  # built-in
    assert mcp_tool_name("time", "get_time", {"get_time", "time__get_time"}) is None
    long = mcp_tool_name("s", "x" * 70, set())
    assert long is not None and len(long) == 64 and long.startswith("s__xxx")
    assert long != mcp_tool_name("s", "x" * 71, set())
