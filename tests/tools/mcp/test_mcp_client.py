"""The MCP client against real servers: one written here with the `mcp` SDK
(tests/support/mcp_server.py) over stdio and over streamable HTTP on
127.0.0.1, and the published `mcp-server-time` over stdio. Listed, called,
the server's errors, a call that hangs (bounded by its timeout), a server
that dies between calls or during one, and servers stopped on close."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest
from pydantic import ValidationError
from support.mcp_server import start_http_server, stdio_command

from memgpt_lite.models import MCPServer
from memgpt_lite.tools.mcp.connections import MCPConnections, MCPServerError

TOOLS = [
    "echo",
    "add",
    "fail",
    "refuse",
    "hang",
    "crash",
    "pid",
    "env",
    "header",
    "picture",
    "text.upper",
]


def stdio_server(
    name: str,
    command: str,
    args: list[str] | None = None,
    *,
    env: dict[str, str] | None = None,
    owner: str = "local",
) -> MCPServer:
    return MCPServer(
        name=name, owner=owner, transport="stdio", command=command, args=args or [], env=env or {}
    )


def http_server(name: str, url: str, headers: dict[str, str] | None = None) -> MCPServer:
    return MCPServer(name=name, transport="http", url=url, headers=headers or {})


def ours(name: str = "tests", env: dict[str, str] | None = None, owner: str = "local") -> MCPServer:
    command, args = stdio_command()
    return stdio_server(name, command, args, env=env, owner=owner)


def time_server() -> MCPServer:
    return stdio_server(
        "time", sys.executable, ["-m", "mcp_server_time", "--local-timezone", "UTC"]
    )


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_until(condition: Callable[[], bool], what: str, seconds: float = 60) -> None:
    """Wait for `condition`, failing with `what` if it is still false after `seconds`."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"still not {what} after {seconds} s")
        time.sleep(0.02)


@pytest.fixture(scope="module")
def kept() -> Iterator[MCPConnections]:
    """Connections shared by the tests that neither stop nor break a server."""
    with MCPConnections() as connections:
        yield connections


@pytest.fixture
def connections() -> Iterator[MCPConnections]:
    with MCPConnections() as connections:
        yield connections


def pid_of(connections: MCPConnections, server: MCPServer) -> int:
    result = connections.call_tool(server, "pid", {})
    assert result.ok, result.text
    return int(result.text)


def test_lists_the_tools_with_descriptions_and_input_schemas(kept):
    tools = {tool.name: tool for tool in kept.list_tools(ours())}
    assert list(tools) == TOOLS
    assert tools["add"].description == "Add two whole numbers."
    schema = tools["add"].input_schema
    assert schema["type"] == "object" and schema["required"] == ["a", "b"]
    assert schema["properties"]["a"]["type"] == "integer"


def test_calls_return_the_text_the_server_answered(kept):
    server = ours()
    assert (kept.call_tool(server, "echo", {"text": "héllo ✓"}).text) == "héllo ✓"
    added = kept.call_tool(server, "add", {"a": 2, "b": 40})
    assert (added.text, added.ok) == ("42", True)


def test_the_server_is_started_once_and_kept(kept):
    server = ours()
    first = pid_of(kept, server)
    assert kept.is_running(server)
    assert pid_of(kept, server) == first


def test_the_servers_errors_are_failed_results_not_exceptions(kept):
    server = ours()
    failed = kept.call_tool(server, "fail", {"reason": "no coffee"})
    assert not failed.ok
    assert failed.text.startswith("Error: ") and "failed on purpose: no coffee" in failed.text
    bad = kept.call_tool(server, "add", {"a": "two"})
    assert not bad.ok and "a" in bad.text and "b" in bad.text  # both arguments named
    unknown = kept.call_tool(server, "teleport", {})
    assert not unknown.ok and "teleport" in unknown.text
    assert kept.call_tool(server, "echo", {"text": "still here"}).text == "still here"


def test_a_protocol_error_is_a_failed_result_and_a_stdio_server_is_kept(kept):
    server = ours()
    before = pid_of(kept, server)
    refused = kept.call_tool(server, "refuse", {"reason": "not today"})
    assert (refused.ok, refused.text) == (
        False,
        "Error: refuse (MCP server 'tests') refused the call: refused: not today",
    )
    assert kept.is_running(server) and pid_of(kept, server) == before


def test_content_that_is_not_text_is_described(kept):
    result = kept.call_tool(ours(), "picture", {})
    assert result.ok
    caption, image = result.text.split("\n")
    assert caption == "a single pixel"
    assert image.startswith("[image: image/png, ") and image.endswith(" bytes, not shown]")


def test_the_environment_is_the_configured_one_without_our_secrets(connections, monkeypatch):
    monkeypatch.setenv("MEMGPT_TEST_SECRET", "hunter2")
    server = ours(env={"GREETING": "hello"})
    assert connections.call_tool(server, "env", {"name": "GREETING"}).text == "hello"
    assert connections.call_tool(server, "env", {"name": "MEMGPT_TEST_SECRET"}).text == "<unset>"
    assert connections.call_tool(server, "env", {"name": "PATH"}).text == os.environ["PATH"]


def test_a_hung_call_fails_after_its_timeout_and_the_session_is_reset(connections):
    server = ours()
    hung_pid = pid_of(connections, server)
    result = connections.call_tool(server, "hang", {"seconds": 3600}, timeout=0.5)
    assert not result.ok
    assert result.text == (
        "Error: hang (MCP server 'tests') did not answer within 0.5 s; the server's session "
        "was reset, and the next call starts it again."
    )
    assert not connections.is_running(server)
    wait_until(lambda: not alive(hung_pid), "stopped")
    assert pid_of(connections, server) != hung_pid


def test_a_server_that_died_between_calls_is_started_again(connections):
    server = ours()
    dead = pid_of(connections, server)
    os.kill(dead, signal.SIGKILL)
    wait_until(lambda: not connections.is_running(server), "seen as gone")
    again = connections.call_tool(server, "echo", {"text": "back"})
    assert (again.text, again.ok) == ("back", True)
    assert pid_of(connections, server) != dead


def test_a_server_that_dies_during_a_call_fails_that_call_only(connections):
    server = ours()
    crashed = connections.call_tool(server, "crash", {})
    assert not crashed.ok
    assert crashed.text == (
        "Error: crash (MCP server 'tests'): the server went away during the call; its last "
        "output: crashing on purpose; the next call starts it again."
    )
    assert connections.call_tool(server, "add", {"a": 1, "b": 1}).text == "2"


def test_stop_and_close_stop_the_servers(connections):
    first, second = ours("one"), ours("two")
    pids = [pid_of(connections, first), pid_of(connections, second)]
    assert all(alive(pid) for pid in pids)
    connections.stop(first)  # returns once it has exited
    assert not alive(pids[0]) and alive(pids[1])
    assert not connections.is_running(first) and connections.is_running(second)
    connections.close()
    assert not any(alive(pid) for pid in pids)  # close returns once they have exited
    assert not connections.is_running(first)
    assert pid_of(connections, first) not in pids  # used again: a new loop, a new server


def test_two_users_servers_of_one_name_are_apart(connections):
    alices, bobs = ours(env={"WHO": "alice"}, owner="alice"), ours(env={"WHO": "bob"}, owner="bob")
    for _ in range(2):  # neither restarts the other's: each is kept
        assert connections.call_tool(alices, "env", {"name": "WHO"}).text == "alice"
        assert connections.call_tool(bobs, "env", {"name": "WHO"}).text == "bob"
    pids = pid_of(connections, alices), pid_of(connections, bobs)
    assert pids == (pid_of(connections, alices), pid_of(connections, bobs))
    assert pids[0] != pids[1]
    connections.stop(alices)
    assert not connections.is_running(alices) and connections.is_running(bobs)


def test_a_changed_configuration_starts_the_server_anew(connections):
    before = pid_of(connections, ours(env={"GREETING": "a"}))
    changed = ours(env={"GREETING": "b"})
    assert connections.call_tool(changed, "env", {"name": "GREETING"}).text == "b"
    assert pid_of(connections, changed) != before
    wait_until(lambda: not alive(before), "stopped")


def test_a_server_that_cannot_start_is_one_clear_line(connections, tmp_path):
    missing = stdio_server("missing", str(tmp_path / "no-such-server"))
    with pytest.raises(MCPServerError) as raised:
        connections.list_tools(missing)
    assert str(raised.value).startswith("MCP server 'missing' could not start: ")
    assert "\n" not in str(raised.value)
    said = stdio_server(
        "quits", sys.executable, ["-c", "import sys; print('no licence found', file=sys.stderr)"]
    )
    result = connections.call_tool(said, "anything", {})
    assert not result.ok and "\n" not in result.text
    assert result.text.startswith("Error: MCP server 'quits' could not start: ")
    assert result.text.endswith("; its last output: no licence found")


def test_bad_configurations_are_refused():
    with pytest.raises(ValidationError, match="a stdio server needs a command"):
        stdio_server("x", " ")
    with pytest.raises(ValidationError, match="must be http:// or https://"):
        http_server("x", "ftp://127.0.0.1/mcp")
    with pytest.raises(ValidationError, match="must be http:// or https://"):
        http_server("x", "http:///mcp")  # no host
    with pytest.raises(ValidationError, match="needs a name"):
        http_server("", "http://127.0.0.1/mcp")


def test_streamable_http_server_with_headers(connections):
    with start_http_server() as url:
        server = http_server("web", url, headers={"X-Team": "blue"})
        assert [tool.name for tool in connections.list_tools(server)] == TOOLS
        assert connections.call_tool(server, "header", {"name": "X-Team"}).text == "blue"
        failed = connections.call_tool(server, "fail", {"reason": "over http"})
        assert not failed.ok and "failed on purpose: over http" in failed.text
        assert connections.is_running(server)
        # A protocol error may be a session the server no longer knows (it
        # restarted): the next call opens a new one.
        refused = connections.call_tool(server, "refuse", {"reason": "over http"})
        assert not refused.ok and refused.text.endswith("refused the call: refused: over http")
        assert not connections.is_running(server)
        result = connections.call_tool(server, "hang", {"seconds": 3600}, timeout=0.5)
        assert not result.ok and "did not answer within 0.5 s" in result.text
        assert connections.call_tool(server, "echo", {"text": "again"}).text == "again"


def test_an_http_server_that_is_not_there(connections):
    with start_http_server() as url:
        pass  # started and stopped: nothing listens at url now
    result = connections.call_tool(http_server("gone", url), "echo", {"text": "x"})
    assert not result.ok and result.text.startswith("Error: MCP server 'gone' could not start: ")


def test_the_published_time_server(kept):
    server = time_server()
    names = [tool.name for tool in kept.list_tools(server)]
    assert "get_current_time" in names and "convert_time" in names
    now = kept.call_tool(server, "get_current_time", {"timezone": "Asia/Tokyo"})
    assert now.ok and json.loads(now.text)["timezone"] == "Asia/Tokyo"
    converted = kept.call_tool(
        server,
        "convert_time",
        {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
    )
    assert converted.ok and json.loads(converted.text)["target"]["datetime"].endswith(
        "21:00:00+09:00"
    )
    wrong = kept.call_tool(server, "get_current_time", {"timezone": "Mars/Olympus_Mons"})
    assert not wrong.ok and "Mars/Olympus_Mons" in wrong.text


def test_a_program_that_exits_stops_its_servers():
    """The process's shared connections are closed at exit (atexit): checked
    by the program's own exit handler, registered first so that it runs
    last, while the program still holds the server's pipes (without the
    close, the server would still be running then)."""
    command, args = stdio_command()
    program = (
        "import atexit, os\n"
        "from memgpt_lite.models import MCPServer\n"
        "from memgpt_lite.tools.mcp.connections import shared_connections\n"
        "pids = []\n"
        "def check():\n"
        "    try:\n"
        "        os.kill(pids[0], 0)\n"
        "        print('still running')\n"
        "    except ProcessLookupError:\n"
        "        print('stopped')\n"
        "atexit.register(check)\n"
        f"server = MCPServer(name='tests', transport='stdio', command={command!r}, args={args!r})\n"
        "pids.append(int(shared_connections().call_tool(server, 'pid', {}).text))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout) == (0, "stopped\n"), done.stderr
