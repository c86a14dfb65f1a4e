"""Approvals on the command line: `create --approve TOOL`, `send` on an answer
that waits, `approve` and `deny` (each a new invocation, so the wait is read
back from the database), `show`. The real CLI against the fake server; the
tool is the built-in archival_memory_insert, so what ran is the archive."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pexpect
import pytest
from click.testing import CliRunner, Result
from support.chat_terminal import CSI_SEQUENCE, spawn

from memgpt_lite import Agent, tool
from memgpt_lite.cli.main import cli
from memgpt_lite.cli.scripting import ExitStatus
from memgpt_lite.storage.sqlite.store import Store
from memgpt_lite.testing import FakeOpenAIServer, call, reply, say

INSERT = "archival_memory_insert"
WAITING = (
    "archival_memory_insert(content='Beth: 3 March', request_heartbeat=True) is waiting for "
    "approval: "
    "memgpt-lite approve sam, or memgpt-lite deny sam --reason ...\n"
)


def run(*args: str, db: Path) -> Result:
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


@pytest.fixture
def db(fake_llm: FakeOpenAIServer, tmp_path: Path) -> Path:
    path = tmp_path / "a.db"
    created = run("create", "sam", "--model", "gpt-4o-mini", "--approve", INSERT, db=path)
    assert created.exit_code == 0, created.output
    return path


def passages(db: Path) -> int:
    with Store(db) as store:
        return store.agent_stats(store.get_agent("sam").id).passage_count


def ask_to_insert(server: FakeOpenAIServer, db: Path, *args: str) -> Result:
    server.enqueue(
        reply(
            "Note her birthday",
            [call(INSERT, content="Beth: 3 March", request_heartbeat=True)],
        )
    )
    return run("send", "sam", "Beth's birthday is on 3 March", *args, db=db)


def test_send_says_what_waits_and_approve_runs_it(fake_llm, db):
    assert (
        "tool rules: archival_memory_insert asks for approval" in run("show", "sam", db=db).stdout
    )
    sent = ask_to_insert(fake_llm, db)
    assert sent.exit_code == ExitStatus.APPROVAL_REQUIRED == 5
    assert sent.stdout == "" and sent.stderr == WAITING
    assert passages(db) == 0  # nothing ran
    shown = run("show", "sam", db=db).stdout
    assert "waiting for approval: archival_memory_insert(content='Beth: 3 March'," in shown

    refused = run("send", "sam", "never mind", db=db)
    assert refused.exit_code == ExitStatus.FAILED
    assert refused.stderr == (
        "Error: agent 'sam' is waiting for approval of a tool call (archival_memory_insert): "
        "approve or deny it before sending a new message\n"
    )
    assert len(fake_llm.chat_requests) == 1 and passages(db) == 0

    fake_llm.enqueue(say("Noted Beth's birthday."))
    approved = run("approve", "sam", db=db)
    assert (approved.exit_code, approved.stdout) == (0, "Noted Beth's birthday.\n")
    assert passages(db) == 1
    assert "waiting for approval:" not in run("show", "sam", db=db).stdout
    nothing = run("approve", "sam", db=db)
    assert nothing.exit_code == ExitStatus.FAILED
    assert nothing.stderr == "Error: agent 'sam' has no tool call waiting for approval\n"
    assert fake_llm.rejections == []


def test_deny_sends_the_reason_to_the_model_and_nothing_runs(fake_llm, db):
    ask_to_insert(fake_llm, db)
    fake_llm.enqueue(say("All right, I will not."))
    denied = run("deny", "sam", "--reason", "it is a surprise party", "-v", db=db)
    assert denied.exit_code == 0 and denied.stdout == "All right, I will not.\n"
    assert f"{INSERT}(" in denied.stderr and "(failed)" in denied.stderr
    assert passages(db) == 0
    answered = fake_llm.chat_requests[-1]["messages"][-1]
    assert answered["role"] == "tool"
    assert answered["content"].endswith("Their reason: it is a surprise party")
    assert fake_llm.rejections == []


def test_json_lines_carry_the_request_and_the_answer(fake_llm, db):
    sent = ask_to_insert(fake_llm, db, "--json")
    events = [json.loads(line) for line in sent.stdout.splitlines()]
    asked = next(e for e in events if e["type"] == "approval_requested")
    assert [(c["name"], c["arguments"]) for c in asked["calls"]] == [
        (INSERT, '{"content": "Beth: 3 March", "request_heartbeat": true}')
    ]
    assert events[-1]["type"] == "step_finished"
    assert events[-1]["result"]["stop_reason"] == "approval_required"
    assert sent.exit_code == ExitStatus.APPROVAL_REQUIRED and sent.stderr == ""

    call_id = asked["calls"][0]["id"]
    fake_llm.enqueue(say("Saved."))
    approved = run("approve", "sam", "--call", call_id, "--json", db=db)
    events = [json.loads(line) for line in approved.stdout.splitlines()]
    assert events[0]["type"] == "step_started"
    assert events[0]["approvals"] == [{"approve": True, "reason": "", "tool_call_id": call_id}]
    assert any(e["type"] == "tool_returned" and e["name"] == INSERT and e["ok"] for e in events)
    assert approved.exit_code == 0 and passages(db) == 1


def test_several_calls_wait_and_call_names_each(fake_llm, db):
    fake_llm.enqueue(
        reply(tool_calls=[call(INSERT, content="one"), call(INSERT, content="two")]),
    )
    sent = run("send", "sam", "remember two things", db=db)
    assert sent.exit_code == ExitStatus.APPROVAL_REQUIRED
    with Store(db) as store:
        calls = store.last_messages(store.get_agent("sam").id, 1)[0].tool_calls
    assert sent.stderr == (
        f"archival_memory_insert(content='one') [{calls[0].id}]; "
        f"archival_memory_insert(content='two') [{calls[1].id}] are waiting for approval: "
        "memgpt-lite approve sam, or memgpt-lite deny sam --reason ...\n"
    )
    # Every waiting call is answered at once: naming one leaves the other unanswered.
    one = run("deny", "sam", "--call", calls[0].id, db=db)
    assert one.exit_code == ExitStatus.FAILED and "is not answered" in one.stderr
    wrong = run("deny", "sam", "--call", "call_nope", db=db)
    assert "'call_nope' is not waiting for approval" in wrong.stderr
    assert passages(db) == 0
    both = run("approve", "sam", "--call", calls[0].id, "--call", calls[1].id, db=db)
    # Neither asked for a heartbeat: the turn ends once they ran, without a reply.
    assert both.exit_code == ExitStatus.NO_REPLY and passages(db) == 2
    assert len(fake_llm.chat_requests) == 1


def test_a_step_that_asks_again_after_an_approval(fake_llm, db):
    fake_llm.enqueue(reply(tool_calls=[call(INSERT, content="one", request_heartbeat=True)]))
    run("send", "sam", "remember one thing, then another", db=db)
    fake_llm.enqueue(reply(tool_calls=[call(INSERT, content="two")]))
    again = run("approve", "sam", db=db)
    assert again.exit_code == ExitStatus.APPROVAL_REQUIRED
    assert again.stderr.startswith("archival_memory_insert(content='two') is waiting")
    assert passages(db) == 1


def test_approve_refuses_a_tool_the_agent_lacks(fake_llm, tmp_path):
    path = tmp_path / "a.db"
    made = run("create", "sam", "-m", "gpt-4o-mini", "--approve", "delete_file", db=path)
    assert made.exit_code == 1
    assert made.stderr.startswith("Error: --approve delete_file: the agent has no such tool;")
    assert "archival_memory_insert" in made.stderr
    assert "no agent" in run("show", "sam", db=path).stderr.lower()


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX-only")
def test_send_on_a_terminal_shows_the_thought_and_what_waits(fake_llm, chat_env, tmp_path):
    db = tmp_path / "chat.db"
    run("create", "sam", "-m", "gpt-4o-mini", "--approve", INSERT, db=db)
    fake_llm.enqueue(reply("Note her birthday", [call(INSERT, content="Beth: 3 March")]))
    child = spawn(chat_env, db, "sam", "Beth's birthday is on 3 March", command="send")
    child.expect(pexpect.EOF)
    child.close()
    shown = " ".join(CSI_SEQUENCE.sub("", child.before).split())
    assert child.exitstatus == ExitStatus.APPROVAL_REQUIRED
    assert "Note her birthday" in shown
    assert "archival_memory_insert(content='Beth: 3 March') is waiting for approval:" in shown
    assert passages(db) == 0


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: The file to delete.
    """
    return f"deleted {path}"


def test_show_lists_a_custom_tools_waiting_call(fake_llm, tmp_path):
    # `show` opens no agent, so it cannot know the custom tool asks for
    # approval: the waiting answer's calls are all listed.
    db = tmp_path / "a.db"
    agent = Agent.create("sam", "gpt-4o-mini", db=db, tools=[delete_file])
    fake_llm.enqueue(reply(tool_calls=[call("delete_file", path="/tmp/a")]))
    assert agent.step("delete /tmp/a").stop_reason == "approval_required"
    agent.store.close()
    shown = run("show", "sam", db=db)
    assert "waiting for approval: delete_file(path='/tmp/a')\n" in shown.stdout
