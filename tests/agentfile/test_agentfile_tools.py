"""Tools that travel in agent files with their code: a Letta file's custom
tools and our own exports' registered tools are registered on import, not
trusted (a call is a clear tool error) until `tools trust` or `import
--trust-tools`; a tool taking Letta's `agent_state` stays a name."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from support.paths import LETTA_AF
from test_agentfile_letta import letta_file

from memgpt_lite.agent import Agent
from memgpt_lite.agentfile.native import export_agent, import_agent, import_every_agent
from memgpt_lite.cli.main import cli
from memgpt_lite.models import ToolDefinition
from memgpt_lite.storage.sqlite.store import Store
from memgpt_lite.testing import call, reply, say

STATUS = (
    "def check_order_status(order_number: int) -> str:\n"
    '    """Check the status for an order number."""\n'
    '    return f"Order {order_number} shipped."\n'
)


def kayak_file(tmp_path, source: str = STATUS):
    raw = letta_file()
    tool = next(t for t in raw["tools"] if t["name"] == "check_order_status")
    tool["source_code"] = source
    tool["pip_requirements"] = [{"name": "packaging", "version": None}]
    tool["json_schema"] = {
        "name": "check_order_status",
        "parameters": {
            "type": "object",
            "properties": {
                "order_number": {"type": "integer", "description": "The order."},
                "request_heartbeat": {"type": "boolean", "description": "Letta's own."},
            },
            "required": ["order_number", "request_heartbeat"],
        },
    }
    path = tmp_path / "kayak.af"
    path.write_text(json.dumps(raw))
    return path


def run(*args: str, db=None):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


def test_a_letta_custom_tool_is_registered_untrusted_and_trusted_later(fake_llm, tmp_path):
    db = tmp_path / "a.db"
    assert run("import", str(kayak_file(tmp_path)), db=db).exit_code == 0
    with Store(db) as store:
        tool = store.get_tool("local", "check_order_status")
    assert (tool.kind, tool.trusted, tool.source_code, tool.requirements) == (
        "python",
        False,
        STATUS,
        ["packaging"],
    )
    assert tool.json_schema["parameters"]["required"] == ["order_number"]
    assert "request_heartbeat" not in tool.json_schema["parameters"]["properties"]
    agent = Agent.load("kayak_helper", db=db)
    agent.state.llm.base_url = None
    fake_llm.enqueue(
        reply(tool_calls=[call("check_order_status", order_number=7, request_heartbeat=True)]),
        say("I cannot check yet."),
    )
    result = agent.step("Where is order 7?")
    assert result.tool_results[0].content == (
        "Error: tool check_order_status is not trusted: run "
        "`memgpt-lite tools trust check_order_status`"
    )
    assert run("tools", "trust", "check_order_status", db=db).exit_code == 0
    agent = Agent.load("kayak_helper", db=db)
    agent.state.llm.base_url = None
    fake_llm.enqueue(reply(tool_calls=[call("check_order_status", order_number=7)]))
    assert agent.step("And now?").tool_results[0].content == "Order 7 shipped."


def test_trust_tools_trusts_them_at_import_and_a_reimport_reuses_them(tmp_path):
    db = tmp_path / "a.db"
    imported = run("import", str(kayak_file(tmp_path)), "--trust-tools", db=db)
    assert "note: tools with their code (1: check_order_status): registered and trusted " in (
        imported.stderr
    )
    again = run("import", str(kayak_file(tmp_path)), "--name", "kayak2", db=db)
    assert again.exit_code == 0
    changed = run("import", str(kayak_file(tmp_path, STATUS + "\n# v2\n")), "--name", "k3", db=db)
    assert (
        "note: tool 'check_order_status': the registered tool of that name is kept; the "
        "file's was not imported\n"
    ) in changed.stderr
    with Store(db) as store:
        [tool] = store.list_tools()
        assert tool.trusted and tool.source_code == STATUS
        assert store.get_agent("k3").tool_names == ["check_order_status"]


def test_every_agent_of_a_file_shares_the_tools_it_carries(tmp_path):
    path = kayak_file(tmp_path)
    raw = json.loads(path.read_text())
    second = json.loads(json.dumps(raw["agents"][0]))
    second["name"], second["id"] = "kayak_clerk", "agent-1"
    raw["agents"].append(second)
    path.write_text(json.dumps(raw))
    with Store(tmp_path / "a.db") as store:
        reports = import_every_agent(store, path)
        assert [r.name for r in reports] == ["kayak_helper", "kayak_clerk"]
        assert [t.name for t in store.list_tools()] == ["check_order_status"]


def test_our_own_export_carries_registered_tools_with_their_code(tmp_path):
    with Store(tmp_path / "a.db") as store:
        store.add_tool(
            ToolDefinition(
                name="weather",
                kind="python",
                source_code="def weather(city: str) -> str:\n    return 'sun'\n",
                json_schema={"name": "weather", "parameters": {"type": "object"}},
                requirements=["packaging"],
                trusted=True,
            )
        )
        store.add_tool(ToolDefinition(name="clock", kind="module", module="t:now", json_schema={}))
        Agent.create("sam", "m", store=store, tools=["weather", "clock"])
        data = export_agent(store, "sam")
    assert [(t.name, t.kind, t.requirements) for t in data.tools] == [
        ("weather", "python", ["packaging"])
    ]
    path = tmp_path / "sam.json"
    path.write_text(data.model_dump_json())
    exported = run("export", "sam", "-o", str(tmp_path / "again.json"), db=tmp_path / "a.db")
    assert exported.stderr.splitlines() == [
        "Its registered tools (weather) are exported with their code; an import registers them "
        "not trusted (import --trust-tools trusts them).",
        "Its custom tools (clock) are exported by name only: give them to Agent.load where you "
        "import it.",
    ]
    with Store(tmp_path / "b.db") as other:
        report = import_agent(other, path)
        tool = other.get_tool("local", "weather")
        assert (tool.trusted, tool.source_code) == (False, data.tools[0].source_code)
        assert other.get_agent("sam").tool_names == ["weather", "clock"]
    assert any(note.startswith("tools with their code (1: weather)") for note in report.notes)


@pytest.mark.skipif(not LETTA_AF.is_dir(), reason=f"no Letta files in {LETTA_AF}")
def test_real_letta_files_tools_mcp_tools_and_agent_state_tools(tmp_path):
    with Store(tmp_path / "a.db") as store:
        deep = import_agent(store, LETTA_AF / "deep-thought.af")
        alice = import_agent(store, LETTA_AF / "mock_alice.af")
        client_side = import_agent(store, LETTA_AF / "test_agent.af")
        registered = {t.name: (t.kind, t.mcp_server, t.trusted) for t in store.list_tools()}
        names = store.get_agent(deep.name).tool_names
        client_names = store.get_agent(client_side.name).tool_names
    assert registered == {
        "crawling_exa": ("mcp", "Exa", False),
        "web_search_exa": ("mcp", "Exa", False),
        "web_search_custom_beta": ("python", None, False),
    }
    # Those that take agent_state stay names, as before: a model is not offered them.
    assert names == ["reset_research", "web_search_exa", "crawling_exa", "create_research_plan"]
    assert (
        "tools that take Letta's agent_state (2: reset_research, create_research_plan): kept by "
        "name only, since nothing gives it here; give Agent.load an implementation, or the model "
        "will not see them"
    ) in deep.notes
    assert any(
        n.startswith("MCP tools (2: web_search_exa, crawling_exa): registered") for n in deep.notes
    )
    assert any(n.startswith("tools that take Letta's agent_state (4: ") for n in alice.notes)
    assert any(
        n.startswith("tools with their code (1: web_search_custom_beta)") for n in alice.notes
    )
    # Letta Code's client-side tools are schemas only (source_type "json"): names.
    assert len(client_names) == 12 and "Bash" in client_names and "Bash" not in registered


FORECAST = (
    "def forecast(city: str, days: int = 1) -> str:\n"
    '    """The weather to come.\n\n'
    "    Args:\n"
    "        city: Where.\n"
    "        days: How many days ahead.\n"
    '    """\n'
    '    return f"{city}: sun for {days} days"\n'
)
FORECAST_SCHEMA = {
    "name": "forecast",
    "description": "The weather to come.",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "Where."},
            "days": {"type": "integer", "description": "How many days ahead.", "default": 1},
        },
        "required": ["city"],
        "additionalProperties": False,
    },
}


def test_letta_export_carries_a_source_tool_and_an_import_registers_it_untrusted(tmp_path):
    from memgpt_lite.agentfile.letta_export import write_letta_file

    with Store(tmp_path / "a.db") as store:
        store.add_tool(
            ToolDefinition(
                name="forecast",
                description="The weather to come.",
                kind="python",
                source_code=FORECAST,
                json_schema=FORECAST_SCHEMA,
                requirements=["packaging", "pytest>=7", "rich==13.0.0"],
                trusted=True,
            )
        )
        store.add_tool(ToolDefinition(name="clock", kind="module", module="t:now", json_schema={}))
        Agent.create("sam", "m", store=store, tools=["forecast", "clock"])
        written = write_letta_file(store, "sam", tmp_path / "sam.af")
    by_name = {t["name"]: t for t in written["tools"]}
    forecast = by_name["forecast"]
    assert (forecast["tool_type"], forecast["source_type"]) == ("custom", "python")
    assert (forecast["source_code"], forecast["json_schema"]) == (FORECAST, FORECAST_SCHEMA)
    assert forecast["pip_requirements"] == [
        {"name": "packaging", "version": None},
        {"name": "pytest>=7", "version": None},
        {"name": "rich", "version": "13.0.0"},
    ]
    assert forecast["id"] in written["agents"][0]["tool_ids"]
    assert by_name["clock"]["source_code"] is None  # a module's function: its name only
    with Store(tmp_path / "b.db") as other:
        report = import_agent(other, tmp_path / "sam.af")
        tool = other.get_tool("local", "forecast")
        assert (tool.kind, tool.trusted, tool.source_code) == ("python", False, FORECAST)
        assert tool.json_schema == FORECAST_SCHEMA
        assert tool.requirements == ["packaging", "pytest>=7", "rich==13.0.0"]
        assert other.get_agent("sam").tool_names == ["forecast", "clock"]
    assert any(note.startswith("tools with their code (1: forecast)") for note in report.notes)
    again = run(
        "export", "sam", "--format", "letta", "-o", str(tmp_path / "again.af"), db=tmp_path / "a.db"
    )
    assert again.stderr.splitlines() == [
        "Its custom tools (clock) are exported by name only: Letta needs their code."
    ]


def test_letta_export_names_an_mcp_tool_s_server_and_an_import_keeps_it(tmp_path):
    from memgpt_lite.agentfile.letta_export import export_letta

    schema = {"name": "now", "description": "The time.", "parameters": {"type": "object"}}
    with Store(tmp_path / "a.db") as store:
        store.add_tool(
            ToolDefinition(
                name="now",
                description="The time.",
                kind="mcp",
                mcp_server="clock",
                json_schema=schema,
                trusted=True,
            )
        )
        Agent.create("sam", "m", store=store, tools=["now"])
        written = export_letta(store, "sam")
    [now] = [t for t in written["tools"] if t["name"] == "now"]
    assert (now["tool_type"], now["source_code"], now["tags"]) == (
        "external_mcp",
        None,
        ["mcp:clock"],
    )
    path = tmp_path / "sam.af"
    path.write_text(json.dumps(written))
    with Store(tmp_path / "b.db") as other:
        import_agent(other, path)
        tool = other.get_tool("local", "now")
        assert (tool.kind, tool.mcp_server, tool.json_schema) == ("mcp", "clock", schema)
