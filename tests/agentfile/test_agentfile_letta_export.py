"""Export to Letta's agent file format: a Letta file imported, exported back
to Letta's format and imported again keeps its blocks, messages, tool calls
and passages; so does an agent made here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.paths import LETTA_AF

from memgpt_lite import AgentSettings, tool
from memgpt_lite.agent import Agent
from memgpt_lite.agentfile.letta import is_letta_file
from memgpt_lite.agentfile.letta_export import export_letta
from memgpt_lite.agentfile.native import AgentFile, export_agent, import_agent, write_agent_file
from memgpt_lite.cli.main import cli
from memgpt_lite.models import Block, Message
from memgpt_lite.storage.sqlite.store import Store
from memgpt_lite.testing import call, reply, say
from memgpt_lite.testing.model import ScriptedModel
from memgpt_lite.tools.rules import at_most, needs_approval

NEW_LAYOUT = ["test_agent.af", "memgpt_agent.af", "lettabot.af"]
OLD_LAYOUT = ["agent-file-memgpt_agent_with_convo.af", "knowledge-base.af"]
# The top-level keys of Letta's newest files (lettabot.af, 2026-03).
LETTA_KEYS = {
    "agents",
    "groups",
    "blocks",
    "files",
    "sources",
    "tools",
    "mcp_servers",
    "skills",
    "metadata",
    "created_at",
}


def blocks(data: AgentFile) -> list[tuple]:
    return [(b.label, b.value, b.limit, b.description, b.read_only) for b in data.blocks]


def messages(data: AgentFile) -> list[tuple]:
    return [
        (
            m.role,
            m.content or None,
            [(c.id, c.name, c.arguments) for c in m.tool_calls],
            m.tool_call_id,
            m.name,
            m.created_at,
        )
        for m in data.messages
    ]


def passages(data: AgentFile) -> list[tuple]:
    return [(p.text, p.tags, p.created_at) for p in data.passages]


def round_trip(store: Store, name: str, tmp_path: Path) -> tuple[AgentFile, AgentFile, dict]:
    """The agent as stored, and as stored again after a trip through Letta's format."""
    before = export_agent(store, name)
    letta = export_letta(store, name)
    path = tmp_path / f"{name}.af"
    path.write_text(json.dumps(letta), encoding="utf-8")
    report = import_agent(store, path, name=f"{name}-again")
    assert report.source == "letta"
    return before, export_agent(store, report.name), letta


def assert_same_agent(before: AgentFile, after: AgentFile) -> None:
    assert blocks(after) == blocks(before)
    assert messages(after) == messages(before)
    assert after.context_start == before.context_start
    assert after.summary == before.summary
    assert passages(after) == passages(before)
    assert after.system == before.system
    assert after.llm.model == before.llm.model
    assert after.tool_names == before.tool_names


@pytest.mark.skipif(not LETTA_AF.is_dir(), reason=f"no Letta files in {LETTA_AF}")
@pytest.mark.parametrize("file", NEW_LAYOUT + OLD_LAYOUT)
def test_a_letta_file_survives_a_round_trip(tmp_path, file):
    with Store(tmp_path / "a.db") as store:
        first = import_agent(store, LETTA_AF / file)
        before, after, letta = round_trip(store, first.name, tmp_path)
    assert_same_agent(before, after)
    assert after.settings.context_window == before.settings.context_window
    assert after.settings.tool_rules == before.settings.tool_rules
    raw = json.loads((LETTA_AF / file).read_text(encoding="utf-8"))
    raw = json.loads(raw) if isinstance(raw, str) else raw
    if "agents" in raw:  # the same block labels, in the same order, as Letta wrote
        wanted = {b["id"]: b["label"] for b in raw["blocks"]}
        labels = [wanted[i] for i in raw["agents"][0]["block_ids"]]
        assert [b["label"] for b in letta["blocks"]] == labels


def make_agent(db: Path, fake_llm) -> Agent:
    """An agent with a thought, tool calls and results, a summary, notes and passages."""
    agent = Agent.create(
        "sam",
        "gpt-4o-mini",
        db=db,
        system="You are Sam.",
        blocks=[
            Block(label="persona", value="I am Sam.", description="Who you are.", limit=900),
            Block(label="system/human/family", value="", description="The user's family."),
            Block(label="rules", value="Be brief.", read_only=True, limit=50),
        ],
    )
    fake_llm.enqueue(say("Hello Alice!", content="A new user."))
    agent.step("Hi, I'm Alice")
    fake_llm.enqueue(
        reply(
            "Save her name.",
            [call("core_memory_append", label="rules", content="x", request_heartbeat=True)],
        ),
        say("Noted."),
    )
    agent.step('{"type": "not a marker", "text": "Remember my name"}')
    fake_llm.enqueue(reply(content="Alice said hello and asked me to remember."))
    assert agent.runner.summarize().summarized
    note = Message(agent_id=agent.state.id, role="system", content="Heartbeat: timer fired")
    agent.store.add_messages([note])
    fake_llm.enqueue(say("Still here."))
    agent.step("Are you there?")
    agent.archival.insert("Alice's sister Beth gardens.", tags=["family"])
    agent.archival.insert("Tea: Alice likes oolong.")
    return agent


def test_an_agent_made_here_survives_a_round_trip(fake_llm, tmp_path):
    agent = make_agent(tmp_path / "a.db", fake_llm)
    before, after, letta = round_trip(agent.store, "sam", tmp_path)
    assert_same_agent(before, after)
    assert before.summary and before.context_start > 0 and len(before.passages) == 2
    roles = [m.role for m in before.messages]
    assert "tool" in roles and "system" in roles  # a result, and a note
    assert sum(len(m.tool_calls) for m in before.messages) >= 3
    in_context = letta["agents"][0]["in_context_message_ids"]
    summary = next(m for m in letta["agents"][0]["messages"] if m["id"] == in_context[1])
    assert "The following is a summary" in summary["content"][0]["text"]


def test_the_file_is_in_letta_s_current_layout(fake_llm, tmp_path):
    agent = make_agent(tmp_path / "a.db", fake_llm)
    letta = export_letta(agent.store, "sam")
    assert is_letta_file(letta) and "format" not in letta
    assert set(letta) == LETTA_KEYS
    (only,) = letta["agents"]
    assert only["id"] == "agent-0" and only["agent_type"] == "memgpt_agent"
    assert [b["id"] for b in letta["blocks"]] == ["block-0", "block-1", "block-2"]
    assert only["block_ids"] == ["block-0", "block-1", "block-2"]
    ids = [m["id"] for m in only["messages"]]
    assert ids == [f"message-{i}" for i in range(len(ids))]
    first = only["messages"][0]
    assert first["role"] == "system" and first["content"] == [
        {"type": "text", "text": "You are Sam."}
    ]
    assert only["in_context_message_ids"][0] == "message-0"
    assert set(only["in_context_message_ids"]) <= set(ids)
    assert only["llm_config"]["model"] == "gpt-4o-mini"
    assert only["llm_config"]["context_window"] > 0
    assert only["llm_config"]["model_endpoint"].startswith("https://")
    tools = {t["name"]: t for t in letta["tools"]}
    assert set(tools) == {
        "send_message",
        "core_memory_append",
        "core_memory_replace",
        "archival_memory_insert",
        "archival_memory_search",
        "conversation_search",
    }
    assert only["tool_ids"] == [t["id"] for t in letta["tools"]]
    assert tools["send_message"]["json_schema"]["parameters"]["required"][0] == "message"
    assert all(t["tool_type"].startswith("letta_") for t in tools.values())
    for message in only["messages"]:
        assert isinstance(message["content"], list)
        assert all(part["type"] == "text" for part in message["content"])
        for tool_call in message["tool_calls"] or []:
            assert tool_call["type"] == "function" and set(tool_call["function"]) == {
                "name",
                "arguments",
            }


def test_cli_export_format_letta(fake_llm, tmp_path, monkeypatch):
    db = tmp_path / "a.db"
    make_agent(db, fake_llm)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    result = runner.invoke(cli, ["--db", str(db), "export", "sam", "--format", "letta"])
    assert result.exit_code == 0, result.output
    assert "in Letta's format: 3 blocks" in result.stdout
    assert "no place for archival passages" in result.stderr
    written = json.loads((tmp_path / "sam.af").read_text(encoding="utf-8"))
    assert is_letta_file(written) and written["agents"][0]["name"] == "sam"
    again = runner.invoke(cli, ["--db", str(db), "export", "sam", "--format", "letta"])
    assert again.exit_code == 1 and "already exists" in again.stderr
    out = runner.invoke(cli, ["--db", str(db), "export", "sam", "--format", "letta", "-o", "-"])
    assert json.loads(out.stdout)["agents"][0]["id"] == "agent-0"
    ours = runner.invoke(cli, ["--db", str(db), "export", "sam", "-o", "-"])
    assert json.loads(ours.stdout)["format"] == "memgpt_lite.agent"
    imported = runner.invoke(cli, ["--db", str(db), "import", "sam.af", "--name", "sam2"])
    assert imported.exit_code == 0, imported.output
    assert imported.stdout.startswith("Imported Letta agent 'sam2'")
    assert "2 passages" in imported.stdout


RAN: list[str] = []


@tool(name="Bash")
def bash(command: str, description: str = "") -> str:
    """Run a shell command (here: only recorded).

    Args:
        command: The command.
        description: What it does.
    """
    RAN.append(command)
    return f"ran {command}"


@pytest.mark.skipif(not LETTA_AF.is_dir(), reason=f"no Letta files in {LETTA_AF}")
def test_rules_and_a_waiting_answer_survive_a_round_trip_and_approve_runs_it(tmp_path):
    # test_agent.af: Letta's requires_approval rules, and 3 Bash calls still waiting.
    RAN.clear()
    db = tmp_path / "a.db"
    with Store(db) as store:
        first = import_agent(store, LETTA_AF / "test_agent.af")
        before, after, letta = round_trip(store, first.name, tmp_path)
    rules = letta["agents"][0]["tool_rules"]
    assert {"tool_name": "Bash", "type": "requires_approval", "prompt_template": None} in rules
    assert len(rules) == 12 and after.settings.tool_rules == before.settings.tool_rules
    bash_tool = next(t for t in letta["tools"] if t["name"] == "Bash")
    assert bash_tool["default_requires_approval"] is True
    waiting = letta["agents"][0]["messages"][-1]
    assert waiting["role"] == "approval" and len(waiting["tool_calls"]) == 3
    assert waiting["tool_call_id"] == waiting["tool_calls"][0]["id"]
    again = Agent.load(f"{first.name}-again", db=db, llm=ScriptedModel(), tools=[bash])
    calls = again.pending_approvals()
    assert calls == before.messages[-1].tool_calls and [c.name for c in calls] == ["Bash"] * 3
    assert RAN == []
    result = again.approve()
    assert RAN == [
        'echo "First parallel command"',
        'echo "Second parallel command"',
        'echo "Third parallel command"',
    ]
    assert [r.content for r in result.tool_results] == [f"ran {c}" for c in RAN]
    assert again.pending_approvals() == []


def test_an_agent_s_rules_and_waiting_answer_export_as_letta_writes_them(tmp_path):
    model = ScriptedModel(reply("Clean up.", [call("Bash", command="rm -r build")]))
    rules = [needs_approval("Bash"), at_most("conversation_search", 2)]
    agent = Agent.create(
        "sam",
        "gpt-4o-mini",
        db=tmp_path / "a.db",
        llm=model,
        tools=[bash],
        settings=AgentSettings(tool_rules=rules),
    )
    assert agent.step("clean the build").stop_reason == "approval_required"
    letta = export_letta(agent.store, "sam")
    assert letta["agents"][0]["tool_rules"] == [
        {"tool_name": "Bash", "type": "requires_approval", "prompt_template": None},
        {
            "tool_name": "conversation_search",
            "type": "max_count_per_step",
            "max_count_limit": 2,
            "prompt_template": None,
        },
    ]
    asking = {t["name"]: t["default_requires_approval"] for t in letta["tools"]}
    assert asking["Bash"] is True and asking["conversation_search"] is None
    last = letta["agents"][0]["messages"][-1]
    assert (last["role"], last["tool_call_id"]) == ("approval", last["tool_calls"][0]["id"])
    # Only a waiting answer is an approval request: once answered, it is an assistant's.
    model.enqueue(say("Done."))
    agent.deny("keep the build")
    roles = [m["role"] for m in export_letta(agent.store, "sam")["agents"][0]["messages"]]
    assert "approval" not in roles


def test_multi_agent_tools_and_tags_survive_both_formats(tmp_path):
    multi = ["send_message_to_agent_and_wait_for_reply", "send_message_to_agents_matching_tags"]
    store = Store(tmp_path / "a.db")
    Agent.create(
        "sam", "gpt-4o-mini", store=store, tools=multi, settings=AgentSettings(tags=["team"])
    )
    before, after, letta = round_trip(store, "sam", tmp_path)
    assert before.tool_names == after.tool_names == multi
    assert before.settings.tags == after.settings.tags == ["team"]
    (only,) = letta["agents"]
    assert only["tags"] == ["team"]
    exported = {t["name"]: t for t in letta["tools"] if t["name"] in multi}
    assert {t["tool_type"] for t in exported.values()} == {"letta_multi_agent_core"}
    assert exported[multi[0]]["json_schema"]["parameters"]["required"] == [
        "message",
        "other_agent_id",
        "request_heartbeat",
    ]
    write_agent_file(store, "sam", tmp_path / "sam.json")
    native = import_agent(store, tmp_path / "sam.json", name="sam-native")
    again = store.get_agent(native.name)
    assert (again.tool_names, again.settings.tags) == (multi, ["team"])
