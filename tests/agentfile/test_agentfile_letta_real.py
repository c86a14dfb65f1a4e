"""Letta's own agent files (in ../shared/letta-af, written by Letta): each one
imports, its history in time order with every tool call answered once (but
for a last answer that waits for approval), and the imported agent takes a
step the fake server accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.paths import LETTA_AF

from memgpt_lite.agent import Agent
from memgpt_lite.agentfile.native import ImportReport, import_agent
from memgpt_lite.storage.sqlite.store import Store
from memgpt_lite.testing import say
from memgpt_lite.tools.rules import needs_approval

pytestmark = pytest.mark.skipif(not LETTA_AF.is_dir(), reason=f"no Letta files in {LETTA_AF}")


def imported(tmp_path: Path, name: str) -> tuple[ImportReport, Agent]:
    db = tmp_path / "a.db"
    with Store(db) as store:
        report = import_agent(store, LETTA_AF / name)
    agent = Agent.load(report.name, db=db)
    agent.state.llm.base_url = None  # the fake server, whatever endpoint Letta used
    return report, agent


def assert_steps_cleanly(agent: Agent, fake_llm) -> list[dict]:
    # Every answer is the same reply: a file's tool rules may make
    # send_message go on (mock_alice ends only with a tool of its own).
    fake_llm.responder = lambda body: say("Hello again.")
    if agent.pending_approvals():  # the file's last answer waits: it is denied first
        assert agent.deny("not now").replies[0] == "Hello again."
        assert agent.pending_approvals() == []
    assert agent.step("hello").replies[0] == "Hello again."
    assert fake_llm.rejections == []
    return fake_llm.chat_requests[-1]["messages"]


def assert_every_call_answered_right_after(messages, waiting: bool = False) -> None:
    """Each call answered once, right after it; with `waiting`, but for the
    last message: an answer whose calls all wait for approval."""
    if waiting:
        assert messages[-1].role == "assistant" and messages[-1].tool_calls
        messages = messages[:-1]
    i = 0
    while i < len(messages):
        calls = [c.id for c in messages[i].tool_calls]
        results = [m.tool_call_id for m in messages[i + 1 : i + 1 + len(calls)]]
        assert results == calls, (i, calls, results)
        assert all(m.role == "tool" for m in messages[i + 1 : i + 1 + len(calls)])
        i += 1 + len(calls)
        assert i >= len(messages) or messages[i].role != "tool", f"result without call at {i}"


def test_the_history_is_in_time_order_with_results_after_their_calls(fake_llm, tmp_path):
    report, agent = imported(tmp_path, "agent-file-memgpt_agent_with_convo.af")
    stored = agent.store.messages_from(agent.state.id, 0)
    heads = [m.created_at for m in stored if m.role != "tool"]
    assert heads == sorted(heads)
    assert_every_call_answered_right_after(stored)
    users = [m.content for m in stored if m.role == "user"]
    # In the file, the answer to "how old are you?" is listed before the question.
    assert users.index("how old are you? ") < users.index("how long ago was your first memory? ")
    assert report.messages == 75 and sum(len(m.tool_calls) for m in stored) == 25
    assert any("out of time order" in note for note in report.notes)
    assert not any("no result" in note or "dropped" in note for note in report.notes)
    assert_steps_cleanly(agent, fake_llm)


def test_heartbeats_logins_and_alerts_become_short_notes(fake_llm, tmp_path):
    report, agent = imported(tmp_path, "agent-file-memgpt_agent_with_convo.af")
    stored = agent.store.messages_from(agent.state.id, 0)
    notes = [m.content or "" for m in stored if m.role == "system"]
    assert len(notes) == 6 and not any(n.lstrip().startswith("{") for n in notes)
    assert "The user logged in (last login: Never (first login))." in notes
    assert (
        notes.count("Heartbeat: Function called using request_heartbeat=true, returning control")
        == 4
    )
    assert any(n.startswith("System alert: The user has logged off.") for n in notes)
    assert not any(m.role == "user" and "heartbeat" in (m.content or "") for m in stored)
    assert "heartbeat messages became short system notes (x4)" in report.notes


def test_approval_messages_become_tool_calls_and_results(fake_llm, tmp_path):
    report, agent = imported(tmp_path, "test_agent.af")
    stored = agent.store.messages_from(agent.state.id, 0)
    assert_every_call_answered_right_after(stored, waiting=True)
    calls = [c for m in stored for c in m.tool_calls]
    results = {m.tool_call_id: m.content for m in stored if m.role == "tool"}
    # 11 of Letta's calls (8 answered, 3 still waiting) and 2 replies sent with send_message
    assert len(calls) == 13 and len(results) == 10
    assert "User reason: just stop" in results["toolu_015tVWP6wVnhm41R2MMc9KuG"]
    # The file's last answer asks to run Bash 3 times: it waits here too.
    waiting = agent.pending_approvals()
    assert waiting == stored[-1].tool_calls and [c.name for c in waiting] == ["Bash"] * 3
    assert "3 tool calls waiting for approval: approve or deny them" in report.notes
    assert not any("got an error result" in note for note in report.notes)
    assert any(n.startswith("approval messages") and "(x9)" in n for n in report.notes)
    assert agent.state.settings.tool_rules[0] == needs_approval("Bash")
    assert len(agent.state.settings.tool_rules) == 12
    # Reasoning is the thought; the reply that went with it is sent as MemGPT sends it.
    hi = next(m for m in stored if m.content and m.content.startswith("The user is just saying"))
    assert [c.name for c in hi.tool_calls] == ["send_message"]
    assert json.loads(hi.tool_calls[0].arguments) == {"message": "Hi! How can I help you?"}
    sent = assert_steps_cleanly(agent, fake_llm)
    # 10 results from the file, the 3 denials and the reply that followed them
    assert sum(1 for m in sent if m["role"] == "tool") == 14
    denied = [m["content"] for m in sent if m.get("tool_call_id") in {c.id for c in waiting}]
    assert denied == ["Error: the user denied this call of Bash; it did not run. "
                      "Their reason: not now"] * 3  # fmt: skip


@pytest.mark.parametrize("name", sorted(p.name for p in LETTA_AF.glob("*.af")))
def test_every_letta_file_imports_and_steps(fake_llm, tmp_path, name):
    report, agent = imported(tmp_path, name)
    assert report.source == "letta"
    waiting = bool(agent.pending_approvals())
    assert waiting == (name == "test_agent.af")  # the one file whose last answer waits
    assert_every_call_answered_right_after(agent.store.messages_from(agent.state.id, 0), waiting)
    assert_steps_cleanly(agent, fake_llm)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "agent-file-memgpt_agent_with_convo.af",
            ["tool rules (4: continue_loop, exit_loop): imported, enforced by the loop"],
        ),
        ("deep-thought.af", ["MCP tools (2: web_search_exa, crawling_exa)", "as 'Deep-Thought'"]),
        ("knowledge-base.af", ["tool rules (5: exit_loop, constrain_child_tools"]),
        ("lettabot.af", ["skills (46: voice-memo"]),
        (
            "mock_alice.af",
            [
                "tool rules (11: run_first",
                "'required_before_exit' (2): not supported here",
                "'max_count_per_step' (1): not valid (tool rule 'max_count_per_step' on '': ",
            ],
        ),
        (
            "test_agent.af",
            ["tools that require approval (12: ", "memory tools (memory): the letta-v1 tool set"],
        ),
        ("test_agent_with_files_and_sources.af", ["files (2) and folders (1): not imported"]),
    ],
)
def test_what_a_letta_file_holds_beyond_the_import_is_named(tmp_path, name, expected):
    with Store(tmp_path / "a.db") as store:
        report = import_agent(store, LETTA_AF / name)
    for text in expected:
        assert any(text in note for note in report.notes), (text, report.notes)


def test_path_style_labels_of_a_letta_file_are_imported(fake_llm, tmp_path):
    report, agent = imported(tmp_path, "lettabot.af")
    labels = [b.label for b in agent.blocks]
    assert len(labels) == 11 and "system/human/family" in labels
    sent = assert_steps_cleanly(agent, fake_llm)
    assert '<block label="system/persona/soul"' in sent[0]["content"]
