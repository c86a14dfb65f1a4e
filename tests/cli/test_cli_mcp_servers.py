"""`memgpt-lite mcp add|list|tools|refresh|remove`: MCP servers whose tools
agents use, against the test server (tests/support/mcp_server.py) over
stdio and streamable HTTP; secrets never shown; one-line errors."""

from __future__ import annotations

import json
import shlex

from click.testing import CliRunner
from support.backends import without_notices
from support.mcp_server import start_http_server, stdio_command

from memgpt_lite import Agent
from memgpt_lite.cli.main import cli

TOOL_NAMES = "add, crash, echo, env, fail, hang, header, picture, pid, refuse, tests__text_upper"


def run(*args: str, db=None):
    prefix = ["--db", str(db)] if db else []
    return CliRunner().invoke(cli, [*prefix, *args], catch_exceptions=False)


def test_add_list_tools_attach_refresh_remove(db_location, tmp_path):
    command, args = stdio_command()
    changes = tmp_path / "changes.json"
    env = f"MCP_TEST_CHANGES={changes}"
    added = run("mcp", "add", "tests", "--env", env, "--", command, *args, db=db_location)
    assert added.exit_code == 0, added.output
    where = shlex.join([command, *args])
    assert (
        added.stdout == f"Added MCP server 'tests' (stdio: {where}) with 11 tools: {TOOL_NAMES}.\n"
    )
    assert without_notices(added.stderr) == (
        "Give one to an agent with: memgpt-lite tools attach AGENT add\n"
    )
    listed = run("mcp", "list", db=db_location).stdout
    assert listed == f"tests\tstdio\t{where}\tMCP_TEST_CHANGES=***\t11\n"
    assert str(changes) not in listed
    Agent.create("sam", "gpt-4o-mini", db=db_location).store.close()
    attached = run("tools", "attach", "sam", "add", "tests__text_upper", db=db_location)
    assert attached.stdout == "Agent 'sam' has tools: add, tests__text_upper.\n"
    tools = run("mcp", "tools", "tests", db=db_location).stdout.splitlines()
    assert tools[0] == "add\tadd\tAdd two whole numbers.\tsam"
    assert "tests__text_upper\ttext.upper\tThe text in capitals.\tsam" in tools
    assert "pid\tpid\tThe server's process id.\t-" in tools
    assert "add\tmcp\tMCP server tests\tyes\tsam" in run("tools", "list", db=db_location).stdout
    changes.write_text(json.dumps({"hide": ["text.upper", "pid"], "describe": {"add": "Sum."}}))
    refreshed = run("mcp", "refresh", "tests", db=db_location)
    assert refreshed.stdout == (
        "Refreshed MCP server 'tests': 1 updated (add), 1 removed (pid), 8 unchanged.\n"
    )
    assert without_notices(refreshed.stderr) == (
        "Tool 'tests__text_upper' is no longer listed by the server; kept, as agent sam has it "
        "(its calls fail): detach it, then refresh again to remove it.\n"
    )
    refused = run("mcp", "remove", "tests", db=db_location)
    assert (refused.exit_code, refused.stderr) == (
        1,
        "Error: MCP server 'tests' has tools attached to agents: add (sam); tests__text_upper "
        "(sam); detach them first (memgpt-lite tools detach AGENT TOOL); nothing was deleted\n",
    )
    assert run("tools", "detach", "sam", "add", "tests__text_upper", db=db_location).exit_code == 0
    removed = run("mcp", "remove", "tests", db=db_location)
    assert removed.stdout == "Removed MCP server 'tests' and its 10 tools.\n"
    assert run("mcp", "list", db=db_location).stdout == (
        "No MCP servers. Add one with: memgpt-lite mcp add NAME -- COMMAND ARGS...\n"
    )
    assert "MCP server" not in run("tools", "list", db=db_location).stdout


def test_an_http_server_with_a_header(tmp_path):
    db = tmp_path / "agents.db"
    with start_http_server() as url:
        added = run("mcp", "add", "web", "--url", url, "--header", "X-Team=blue", db=db)
        assert added.exit_code == 0, added.output
        assert added.stdout.startswith(f"Added MCP server 'web' (http: {url}) with 11 tools: ")
        listed = run("mcp", "list", db=db).stdout
        assert listed == f"web\thttp\t{url}\tX-Team=***\t11\n"
        assert "blue" not in listed


def test_one_line_errors(tmp_path):
    db = tmp_path / "agents.db"
    command, args = stdio_command()
    assert run("mcp", "add", "tests", "--", command, *args, db=db).exit_code == 0
    errors = {
        ("mcp", "add", "tests", "--", command, *args): (
            1,
            "an MCP server named 'tests' already exists; remove it first "
            "(memgpt-lite mcp remove tests) or choose another name",
        ),
        ("mcp", "add", "ghost", "--", str(tmp_path / "no-such-server")): (
            1,
            "MCP server 'ghost' could not start: FileNotFoundError: [Errno 2] No such file or "
            f"directory: '{tmp_path / 'no-such-server'}'",
        ),
        ("mcp", "add", "x"): (2, "give a COMMAND after --, or --url (one of them)"),
        ("mcp", "add", "x", "--url", "http://127.0.0.1:9/mcp", "--", "cmd"): (
            2,
            "give a COMMAND after --, or --url (one of them)",
        ),
        ("mcp", "add", "x", "--env", "TOKEN", "--", "cmd"): (2, "--env 'TOKEN' is not NAME=VALUE"),
        ("mcp", "add", "x", "--url", "http://127.0.0.1:9/mcp", "--env", "A=b"): (
            2,
            "--env is for a server started as a COMMAND; an --url takes --header",
        ),
        ("mcp", "add", "x", "--header", "A=b", "--", "cmd"): (
            2,
            "--header is for an --url; a COMMAND's server takes --env",
        ),
        ("mcp", "add", "x", "--url", "ftp://127.0.0.1/mcp"): (
            2,
            "MCP server 'x': the URL must be http:// or https://, got 'ftp://127.0.0.1/mcp'",
        ),
        ("mcp", "add", "no good", "--", "cmd"): (
            2,
            "MCP server name 'no good' must be 1-64 letters, digits, '_', '.' or '-', starting "
            "with a letter or digit",
        ),
        ("mcp", "tools", "ghost"): (1, "no MCP server named 'ghost'"),
        ("mcp", "refresh", "ghost"): (1, "no MCP server named 'ghost'"),
        ("mcp", "remove", "ghost"): (1, "no MCP server named 'ghost'"),
    }
    for given, (status, error) in errors.items():
        result = run(*given, db=db)
        assert (result.exit_code, without_notices(result.stderr)) == (
            status,
            f"Error: {error}\n",
        ), given
    assert run("mcp", "list", db=db).stdout.startswith("tests\t")  # nothing else was added
    assert run("mcp", "list", "--user", "bob", db=db).stdout.startswith("No MCP servers.")
