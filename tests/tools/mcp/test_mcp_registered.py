"""A registered tool of kind "mcp" (a `ToolDefinition` of the registry) as
the tool an agent gets: an `MCPTool` built from what was stored, reaching
its owner's server only at its first call, each call bounded by the tool
timeout of the settings; and the clear tool errors of a server that is not
configured, a missing `mcp` extra and a stored schema no agent can take.
Against the real test server (tests/support/mcp_server.py) over stdio."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator

import pytest
from support.mcp_server import stdio_command

from memgpt_lite.models import MCPServer, ToolDefinition
from memgpt_lite.settings.values import ToolRunSettings
from memgpt_lite.storage.open import open_storage
from memgpt_lite.storage.protocol import Storage
from memgpt_lite.tools.external import ExternalTool
from memgpt_lite.tools.mcp.connections import shared_connections
from memgpt_lite.tools.mcp.tool import MCPTool
from memgpt_lite.tools.registry import ToolBuild, registry_tool

ECHO_PARAMETERS = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}


@pytest.fixture
def owner() -> str:
    """A user of one test only: the process's connections outlive a test,
    and a server's session is its owner's and name's."""
    return f"user-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def store(tmp_path, owner) -> Iterator[Storage]:
    store = open_storage(tmp_path / "agents.db")
    command, args = stdio_command()
    store.add_mcp_server(
        MCPServer(name="tests", owner=owner, transport="stdio", command=command, args=args)
    )
    yield store
    store.close()


def echo_tool(owner: str, **fields: object) -> ToolDefinition:
    values: dict[str, object] = {
        "name": "say_back",
        "owner": owner,
        "description": "Say the text back.",
        "json_schema": {"name": "echo", "parameters": ECHO_PARAMETERS},
        "kind": "mcp",
        "mcp_server": "tests",
        "trusted": True,
    }
    return ToolDefinition.model_validate({**values, **fields})


def test_an_mcp_tool_is_built_from_the_registry_and_reaches_its_server_when_called(store, owner):
    build = ToolBuild(store, ToolRunSettings(timeout_seconds=7))
    tool = registry_tool(echo_tool(owner), build)
    assert isinstance(tool, MCPTool)
    assert (tool.name, tool.remote_name, tool.timeout) == ("say_back", "echo", 7)
    assert tool.origin == "registry: MCP server tests"
    parameters = tool.schema()["function"]["parameters"]
    assert parameters["required"] == ["text", "request_heartbeat"]
    server = store.get_mcp_server(owner, "tests")
    assert not shared_connections().is_running(server)  # built: nothing started
    outcome = tool.run(None, '{"text": "hello", "request_heartbeat": true}', 1000)  # type: ignore[arg-type]
    assert (outcome.content, outcome.ok, outcome.heartbeat) == ("hello", True, True)
    assert shared_connections().is_running(server)
    shared_connections().stop(server)


def test_the_tool_timeout_bounds_a_call(store, owner):
    build = ToolBuild(store, ToolRunSettings(timeout_seconds=0.5))
    hang = echo_tool(
        owner,
        name="hang",
        json_schema={"parameters": {"type": "object", "properties": {"seconds": {}}}},
    )
    outcome = registry_tool(hang, build).run(None, '{"seconds": 3600}', 1000)  # type: ignore[arg-type]
    assert not outcome.ok and "did not answer within 0.5 s" in outcome.content


def test_a_server_not_configured_is_each_calls_error(store, owner):
    build = ToolBuild(store, ToolRunSettings())
    tool = registry_tool(echo_tool(owner, mcp_server="clock"), build)
    assert isinstance(tool, ExternalTool) and tool.origin == "registry: MCP server clock"
    outcome = tool.run(None, '{"text": "hi"}', 1000)  # type: ignore[arg-type]
    assert (outcome.ok, outcome.content) == (
        False,
        "Error: tool say_back comes from MCP server clock, which is not configured: add it "
        "with `memgpt-lite mcp add clock ...`",
    )


def test_without_the_mcp_extra_each_call_names_it(store, owner, monkeypatch):
    monkeypatch.setitem(sys.modules, "mcp", None)  # as if it were not installed
    tool = registry_tool(echo_tool(owner), ToolBuild(store, ToolRunSettings()))
    outcome = tool.run(None, '{"text": "hi"}', 1000)  # type: ignore[arg-type]
    assert (outcome.ok, outcome.content) == (
        False,
        "Error: tool say_back cannot be called: MCP needs its extra: "
        "pip install 'memgpt-lite[mcp]'",
    )


def test_a_stored_schema_no_agent_can_take_is_each_calls_error(store, owner):
    build = ToolBuild(store, ToolRunSettings())
    beat = {"type": "object", "properties": {"request_heartbeat": {"type": "string"}}}
    odd = echo_tool(owner, json_schema={"name": "echo", "parameters": beat})
    tool = registry_tool(odd, build)
    outcome = tool.run(None, "{}", 1000)  # type: ignore[arg-type]
    assert not outcome.ok
    assert outcome.content == (
        "Error: MCP tool echo of 'tests' has its own request_heartbeat, which the agent adds "
        "for itself: give it another name"
    )
