"""MCP servers in the application layer (`workspace.mcp`): adding a server
registers its tools (named by the server, or SERVER__TOOL), an agent given
one calls the real server and the model reads its answer, in this process
and in a new one; refreshing follows what the server lists; removing is
refused while a tool is attached; a server that cannot be reached stores
nothing; secrets are not shown. Against the test server
(tests/support/mcp_server.py) over stdio and the fake OpenAI endpoint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.mcp_server import stdio_command

from memgpt_lite import Agent
from memgpt_lite.agent.mcp_servers import REDACTED, redacted_server
from memgpt_lite.agent.workspace import Workspace
from memgpt_lite.errors import AlreadyExistsError, ConflictError
from memgpt_lite.models import MCPServer, ToolDefinition
from memgpt_lite.settings.resolve import resolve_settings
from memgpt_lite.testing import call, reply, say
from memgpt_lite.tools.mcp.connections import MCPServerError, shared_connections

SOURCE_ECHO = 'def echo(text: str) -> str:\n    """Echo, from source."""\n    return text\n'


def fixture_server(changes: Path | None = None, name: str = "tests") -> MCPServer:
    command, args = stdio_command()
    env = {"MCP_TEST_CHANGES": str(changes)} if changes else {}
    return MCPServer(name=name, transport="stdio", command=command, args=args, env=env)


@pytest.fixture
def workspace(db_location) -> Iterator[Workspace]:
    with Workspace.open(db_location, resolve_settings()) as opened:
        yield opened


def test_adding_a_server_registers_its_tools(workspace):
    workspace.tools.add_source(SOURCE_ECHO, name=None, owner="local", what="echo.py")
    added = workspace.mcp.add_server(fixture_server())
    # "echo" is taken by the source tool, "text.upper" is no tool name.
    assert added.added == [
        "tests__echo",
        "add",
        "fail",
        "refuse",
        "hang",
        "crash",
        "pid",
        "env",
        "header",
        "picture",
        "tests__text_upper",
    ]
    assert (added.updated, added.removed, added.vanished, added.skipped) == ([], [], {}, {})
    upper = workspace.store.get_tool("local", "tests__text_upper")
    assert (upper.kind, upper.mcp_server, upper.trusted) == ("mcp", "tests", True)
    assert upper.description == "The text in capitals."
    assert upper.json_schema["name"] == "text.upper"  # the server's name for it
    assert upper.json_schema["parameters"]["required"] == ["text"]
    [status] = workspace.mcp.list_servers(owner="local")
    assert (status.server.name, status.running) == ("tests", True)  # adding started it
    assert status.tools == sorted(added.added)
    Agent.create("sam", "gpt-4o-mini", store=workspace.store, tools=["add"])
    tools = dict(
        (t.name, agents) for t, agents in workspace.mcp.server_tools("tests", owner="local")
    )
    assert tools["add"] == ["sam"] and tools["pid"] == []
    assert workspace.mcp.list_servers(owner="bob") == []  # each user's own
    with pytest.raises(AlreadyExistsError, match="an MCP server named 'tests' already exists"):
        workspace.mcp.add_server(fixture_server())


def test_an_agent_calls_its_mcp_tool_here_and_after_a_restart(fake_llm, chat_env, tmp_path):
    db = tmp_path / "agents.db"
    with Workspace.open(db, resolve_settings()) as workspace:
        workspace.mcp.add_server(fixture_server(name="calc"))
        Agent.create("sam", "gpt-4o-mini", store=workspace.store)
        workspace.tools.attach("sam", ["add", "pid"])  # by the names the server gave
        agent = Agent.load("sam", store=workspace.store)
        fake_llm.enqueue(
            reply(tool_calls=[call("add", a=2, b=40, request_heartbeat=True)]), say("It is 42.")
        )
        result = agent.step("What is 2 + 40?")
        assert (result.tool_results[0].content, result.replies) == ("42", ["It is 42."])
        told = fake_llm.chat_requests[1]["messages"][-1]
        assert (told["role"], told["content"]) == ("tool", "42")
    # A new process: the command line loads sam, whose tool starts the server again.
    fake_llm.enqueue(reply(tool_calls=[call("pid", request_heartbeat=True)]), say("Done."))
    sent = subprocess.run(
        [sys.executable, "-m", "memgpt_lite", "--db", str(db), "send", "sam", "your pid?"],
        capture_output=True,
        text=True,
        env=chat_env,
        timeout=120,
    )
    assert (sent.returncode, sent.stdout) == (0, "Done.\n"), sent.stderr
    pid = int(fake_llm.chat_requests[-1]["messages"][-1]["content"])
    assert pid != os.getpid()
    deadline = time.monotonic() + 60  # stopped when the command exited
    while _alive(pid):
        assert time.monotonic() < deadline, "the server outlived the command"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_refresh_follows_what_the_server_lists(tmp_path):
    changes = tmp_path / "changes.json"
    changes.write_text(json.dumps({"hide": ["pid"]}))
    with Workspace.open(tmp_path / "agents.db", resolve_settings()) as workspace:
        added = workspace.mcp.add_server(fixture_server(changes))
        assert "pid" not in added.added and "env" in added.added
        Agent.create("sam", "gpt-4o-mini", store=workspace.store, tools=["env"])
        changes.write_text(
            json.dumps({"hide": ["env", "picture"], "describe": {"add": "Add, anew."}})
        )
        refreshed = workspace.mcp.refresh_server("tests", owner="local")
        assert (refreshed.added, refreshed.updated, refreshed.removed) == (
            ["pid"],
            ["add"],
            ["picture"],
        )
        assert refreshed.vanished == {"env": ["sam"]}  # attached: kept
        assert workspace.store.get_tool("local", "add").description == "Add, anew."
        assert "env" in [t.name for t, _ in workspace.mcp.server_tools("tests", owner="local")]
        again = workspace.mcp.refresh_server("tests", owner="local")
        assert (again.added, again.updated, again.removed) == ([], [], [])
        assert again.vanished == {"env": ["sam"]} and "pid" in again.unchanged
        workspace.tools.detach("sam", ["env"])
        assert workspace.mcp.refresh_server("tests", owner="local").removed == ["env"]


def test_a_server_with_tools_attached_is_not_removed(workspace):
    server = fixture_server(name="calc")
    workspace.mcp.add_server(server)
    Agent.create("sam", "gpt-4o-mini", store=workspace.store, tools=["add", "echo"])
    Agent.create("ada", "gpt-4o-mini", store=workspace.store, tools=["add"])
    with pytest.raises(ConflictError) as refused:
        workspace.mcp.remove_server("calc", owner="local")
    assert str(refused.value) == (
        "MCP server 'calc' has tools attached to agents: add (ada, sam); echo (sam); detach "
        "them first (memgpt-lite tools detach AGENT TOOL); nothing was deleted"
    )
    assert len(workspace.mcp.server_tools("calc", owner="local")) == 11
    workspace.tools.detach("sam", ["add", "echo"])
    workspace.tools.detach("ada", ["add"])
    workspace.mcp.remove_server("calc", owner="local")
    assert workspace.mcp.list_servers(owner="local") == []
    assert workspace.store.list_tools("local") == []
    assert not shared_connections().is_running(server)


def test_a_server_that_cannot_be_reached_stores_nothing(workspace, tmp_path):
    missing = MCPServer(name="ghost", transport="stdio", command=str(tmp_path / "no-such"))
    with pytest.raises(MCPServerError) as failed:
        workspace.mcp.add_server(missing)
    assert str(failed.value).startswith("MCP server 'ghost' could not start: ")
    assert "\n" not in str(failed.value)
    assert workspace.mcp.list_servers(owner="local") == []
    assert workspace.store.list_tools("local") == []


def test_secrets_are_redacted_for_showing():
    server = MCPServer(
        name="web",
        transport="http",
        url="https://me:hunter2@mcp.example.com/mcp?token=abc&team=blue",
        headers={"Authorization": "Bearer sk-1"},
        env={"API_KEY": "sk-2"},
    )
    shown = redacted_server(server)
    assert shown.headers == {"Authorization": REDACTED} and shown.env == {"API_KEY": REDACTED}
    assert shown.url == "https://me:***@mcp.example.com/mcp?token=***&team=***"
    assert "hunter2" not in shown.model_dump_json() and "sk-" not in shown.model_dump_json()
    assert server.headers == {"Authorization": "Bearer sk-1"}  # the server itself is kept
    plain = MCPServer(name="local", transport="http", url="http://127.0.0.1:8000/mcp")
    assert redacted_server(plain).url == "http://127.0.0.1:8000/mcp"


def test_an_imported_tool_runs_once_its_server_is_added(fake_llm, tmp_path):
    """A tool of an MCP server that came in an agent file (not trusted, its
    server not configured here) is updated from the server and trusted when
    a server of that name is added."""
    with Workspace.open(tmp_path / "agents.db", resolve_settings()) as workspace:
        imported = ToolDefinition(
            name="say",
            kind="mcp",
            mcp_server="tests",
            json_schema={"name": "echo", "parameters": {"type": "object", "properties": {}}},
        )
        workspace.store.add_tool(imported)
        Agent.create("sam", "gpt-4o-mini", store=workspace.store, tools=["say"])
        added = workspace.mcp.add_server(fixture_server())
        assert "say" in added.updated and "echo" not in added.added
        say_tool = workspace.store.get_tool("local", "say")
        assert say_tool.trusted and say_tool.description == "Say the text back."
        agent = Agent.load("sam", store=workspace.store)
        fake_llm.enqueue(reply(tool_calls=[call("say", text="hi")]))
        assert agent.step("say hi").tool_results[0].content == "hi"
