"""`memgpt-lite tools add|list|show|attach|detach|remove|trust`, and the
chat's `/tools`, which says where each tool comes from."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner
from support.backends import open_db, without_notices

from memgpt_lite import Agent
from memgpt_lite.cli.main import cli
from memgpt_lite.models import MCPServer, ToolDefinition
from memgpt_lite.testing import call, reply, say

WEATHER = '''__requirements__ = ["packaging"]


def weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: Where.
    """
    return f"{city}: sunny"
'''


def run(*args: str, db=None):
    prefix = ["--db", str(db)] if db else []
    return CliRunner().invoke(cli, [*prefix, *args], catch_exceptions=False)


def test_add_attach_list_detach_remove(db_location, tmp_path):
    (tmp_path / "weather.py").write_text(WEATHER)
    Agent.create("sam", "gpt-4o-mini", db=db_location).store.close()
    added = run("tools", "add", str(tmp_path / "weather.py"), db=db_location)
    assert added.exit_code == 0, added.output
    assert added.stdout == "Registered tool 'weather': The weather in a city.\n"
    assert without_notices(added.stderr) == (
        "Give it to an agent with: memgpt-lite tools attach AGENT weather\n"
    )
    attached = run("tools", "attach", "sam", "weather", db=db_location)
    assert attached.stdout == "Agent 'sam' has tools: weather.\n"
    listed = run("tools", "list", db=db_location).stdout
    assert listed == "weather\tpython\tsource, 10 lines\tyes\tsam\n"
    refused = run("tools", "remove", "weather", db=db_location)
    assert (refused.exit_code, refused.stderr) == (
        1,
        "Error: tool 'weather' is attached to agent 'sam'; detach it first "
        "(memgpt-lite tools detach AGENT TOOL); nothing was deleted\n",
    )
    detached = run("tools", "detach", "sam", "weather", db=db_location)
    assert detached.stdout == "Agent 'sam' has tools: none but its built-in ones.\n"
    assert run("tools", "remove", "weather", db=db_location).stdout == "Removed tool 'weather'.\n"
    assert run("tools", "list", db=db_location).stdout == (
        "No registered tools. Add one with: memgpt-lite tools add FILE.py\n"
    )


def test_show_and_trust_an_imported_tool(tmp_path):
    db = tmp_path / "agents.db"
    with open_db(str(db)) as store:
        store.add_tool(
            ToolDefinition(
                name="scrape",
                description="Read a page.",
                kind="python",
                source_code="def scrape(url: str) -> str:\n    return 'page'\n",
                json_schema={"parameters": {"type": "object", "properties": {}}},
            )
        )
    shown = run("tools", "show", "scrape", db=db).stdout
    assert shown.startswith(
        "name: scrape\nkind: python (source, 2 lines)\n"
        "trusted: no (memgpt-lite tools trust scrape)\ndescription: Read a page.\n"
        "requirements: -\n"
    )
    assert shown.endswith("source:\ndef scrape(url: str) -> str:\n    return 'page'\n")
    trusted = run("tools", "trust", "scrape", db=db)
    assert trusted.stdout == "Tool 'scrape' is trusted: agents may call it.\n"
    assert "trusted: yes" in run("tools", "show", "scrape", db=db).stdout


def test_a_module_tool_and_one_line_errors(tmp_path, monkeypatch):
    db = tmp_path / "agents.db"
    (tmp_path / "weather.py").write_text(WEATHER)
    (tmp_path / "broken.py").write_text("def broken(x: int):\n    return x +\n")
    (tmp_path / "clock_tools.py").write_text(
        'def now() -> str:\n    """The time."""\n    return "noon"\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = run("tools", "add", "--module", "clock_tools:now", "--name", "clock", db=db)
    assert module.stdout == "Registered tool 'clock': The time.\n"
    assert run("tools", "list", db=db).stdout == "clock\tmodule\tclock_tools:now\tyes\t-\n"
    errors = {
        ("tools", "add"): "give a FILE.py or --module PKG.MOD:FUNC (one of them)",
        ("tools", "add", str(tmp_path / "broken.py")): (
            f"cannot add the tool in {tmp_path / 'broken.py'}: line 2: invalid syntax"
        ),
        ("tools", "add", str(tmp_path / "weather.py"), "--name", "send_message"): (
            "'send_message' is the name of a built-in tool; choose another (--name)"
        ),
        ("tools", "add", "--module", "clock_tools:now", "--name", "clock"): (
            "a tool named 'clock' already exists; add it with --replace to replace it, or "
            "with --name to add it under another name"
        ),
        ("tools", "add", "--module", "clock_tools"): "'clock_tools' is not pkg.module:function",
        ("tools", "add", "--module", "clock_tools:later"): (
            "cannot add tool clock_tools:later: module clock_tools has no 'later'"
        ),
        ("tools", "attach", "ghost", "clock"): "no agent named 'ghost'",
        ("tools", "trust", "ghost"): "no tool named 'ghost'",
    }
    for args, error in errors.items():
        result = run(*args, db=db)
        assert (result.exit_code, without_notices(result.stderr)) in (
            (1, f"Error: {error}\n"),
            (2, f"Error: {error}\n"),
        ), args
    replaced = run(
        "tools", "add", "--module", "clock_tools:now", "--name", "clock", "--replace", db=db
    )
    assert replaced.exit_code == 0
    Agent.create("sam", "gpt-4o-mini", db=db).store.close()
    detached = run("tools", "detach", "sam", "clock", db=db)
    assert detached.stderr == "Error: agent 'sam' has no tool 'clock'; nothing was changed\n"


def test_the_chats_tools_command_says_where_each_tool_comes_from(fake_llm, chat_env, tmp_path):
    db = tmp_path / "chat.db"
    (tmp_path / "weather.py").write_text(WEATHER)
    assert run("tools", "add", str(tmp_path / "weather.py"), db=db).exit_code == 0
    with open_db(str(db)) as store:
        store.add_mcp_server(
            MCPServer(
                name="time",
                transport="stdio",
                command=sys.executable,
                args=["-m", "mcp_server_time", "--local-timezone", "UTC"],
            )
        )
        store.add_tool(
            ToolDefinition(
                name="get_time",
                description="The time now.",
                kind="mcp",
                mcp_server="time",
                json_schema={"name": "get_current_time"},
                trusted=True,
            )
        )
    Agent.create("sam", "gpt-4o-mini", db=db, tools=["weather", "get_time"]).store.close()
    fake_llm.enqueue(
        reply(tool_calls=[call("get_time", timezone="Asia/Tokyo", request_heartbeat=True)]),
        say("It is late in Tokyo."),
    )
    finished = subprocess.run(
        [sys.executable, "-m", "memgpt_lite", "--db", str(db), "chat", "sam"],
        input="/tools\nwhat time is it?\n",
        capture_output=True,
        text=True,
        env=chat_env,
        timeout=60,
    )
    assert finished.returncode == 0, finished.stderr
    lines = finished.stdout.splitlines()
    assert lines[0].startswith("send_message: Send a message to the user.")
    assert lines[0].endswith(" [built-in, memgpt set]")
    for expected in (
        "weather: The weather in a city. [registry: python source]",
        "get_time: The time now. [registry: MCP server time]",
    ):
        assert expected in lines
    assert "It is late in Tokyo." in lines
    # The call reached the published time server, and its answer the model.
    answered = json.loads(fake_llm.chat_requests[1]["messages"][-1]["content"])
    assert answered["timezone"] == "Asia/Tokyo" and answered["datetime"].endswith("+09:00")
