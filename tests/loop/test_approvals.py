"""Approvals (human in the loop): a call of a tool that requires approval
waits, stored, until the user approves or denies it; nothing runs before,
across restarts too. A denial is the call's result, with the reason, and the
step goes on. Checked against the validating fake server and both backends,
and in-process for the loop's finer points."""

from __future__ import annotations

import asyncio

import pytest

from memgpt_lite import Agent, AgentSettings, Approval, ApprovalError, tool
from memgpt_lite.events import ApprovalRequested, StepFinished, StepStarted
from memgpt_lite.testing import call, reply, say
from memgpt_lite.testing.model import ScriptedModel
from memgpt_lite.tools.rules import at_most, needs_approval, runs_first

DELETED: list[str] = []


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: The file to delete.
    """
    DELETED.append(path)
    return f"deleted {path}"


@tool
def lookup(query: str) -> str:
    """Look something up.

    Args:
        query: What to look up.
    """
    return f"found {query}"


@pytest.fixture(autouse=True)
def _nothing_deleted():
    DELETED.clear()


def make_agent(db, model=None, *rules) -> Agent:
    return Agent.create(
        "sam",
        "gpt-4o-mini",
        db=db,
        llm=model,
        tools=[delete_file, lookup],
        settings=AgentSettings(tool_rules=list(rules)),
    )


def load(db, model=None) -> Agent:
    return Agent.load("sam", db=db, llm=model, tools=[delete_file, lookup])


def test_a_call_that_requires_approval_waits_unrun_and_is_stored(fake_llm, db_location):
    agent = make_agent(db_location)
    fake_llm.enqueue(
        reply(content="tidy up", tool_calls=[call("delete_file", path="/tmp/a")]),
    )
    result = agent.step("delete /tmp/a")
    assert result.stop_reason == "approval_required"
    assert [c.name for c in result.pending_approvals] == ["delete_file"]
    assert DELETED == [] and result.tool_results == []
    assert result.thoughts == ["tidy up"]
    newest = agent.store.last_messages(agent.state.id, 1)[0]
    assert newest.role == "assistant" and newest.tool_calls == result.pending_approvals
    assert [(u.step_id, u.prompt_tokens > 0) for u in agent.store.agent_usage(agent.state.id)] == [
        (newest.step_id, True)
    ]


def test_approve_runs_the_call_and_the_step_goes_on(fake_llm, db_location):
    agent = make_agent(db_location)
    fake_llm.enqueue(
        reply(tool_calls=[call("delete_file", path="/tmp/a", request_heartbeat=True)]),
        say("Deleted."),
    )
    waiting = agent.step("delete /tmp/a")
    result = agent.approve()
    assert DELETED == ["/tmp/a"]
    assert result.replies == ["Deleted."] and result.stop_reason == "send_message"
    assert result.tool_results[0].content == "deleted /tmp/a" and result.tool_results[0].ok
    assert result.pending_approvals == []
    # The second request (validated like the real API) shows the call answered.
    second = fake_llm.chat_requests[1]["messages"]
    assert second[-1] == {
        "role": "tool",
        "content": "deleted /tmp/a",
        "tool_call_id": waiting.pending_approvals[0].id,
    }
    # The turn is one step: the answer and its result share the step id.
    assert {m.step_id for m in result.messages} == {waiting.messages[0].step_id}
    assert agent.pending_approvals() == []


def test_deny_gives_the_reason_as_the_result_and_nothing_runs(fake_llm, tmp_path):
    agent = make_agent(tmp_path / "a.db")
    fake_llm.enqueue(reply(tool_calls=[call("delete_file", path="/etc")]), say("Understood."))
    agent.step("delete /etc")
    result = agent.deny("that is the system's folder")
    assert DELETED == []
    denied = result.tool_results[0]
    assert not denied.ok
    assert denied.content == (
        "Error: the user denied this call of delete_file; it did not run. "
        "Their reason: that is the system's folder"
    )
    assert fake_llm.chat_requests[1]["messages"][-1]["content"] == denied.content
    assert result.replies == ["Understood."]


def test_a_new_message_while_waiting_is_refused_and_stores_nothing(fake_llm, tmp_path):
    agent = make_agent(tmp_path / "a.db")
    fake_llm.enqueue(reply(tool_calls=[call("delete_file", path="/tmp/a")]))
    agent.step("delete it")
    before = agent.store.agent_stats(agent.state.id).message_count
    with pytest.raises(ApprovalError) as refused:
        agent.step("never mind, hello")
    assert str(refused.value) == (
        "agent 'sam' is waiting for approval of a tool call (delete_file): "
        "approve or deny it before sending a new message"
    )
    assert agent.store.agent_stats(agent.state.id).message_count == before
    assert len(fake_llm.chat_requests) == 1


def test_the_wait_survives_a_restart_and_nothing_ran(fake_llm, db_location):
    agent = make_agent(db_location)
    fake_llm.enqueue(reply(tool_calls=[call("delete_file", path="/tmp/a")]), say("Done."))
    call_id = agent.step("delete it").pending_approvals[0].id
    agent.store.close()
    again = load(db_location)
    assert [c.id for c in again.pending_approvals()] == [call_id]
    with pytest.raises(ApprovalError):
        again.step("hello?")
    assert DELETED == []
    result = again.approve(call_id)
    assert DELETED == ["/tmp/a"] and result.tool_results[0].ok


def test_an_approval_with_nothing_waiting_is_refused(tmp_path):
    agent = make_agent(tmp_path / "a.db", ScriptedModel())
    with pytest.raises(ApprovalError, match="agent 'sam' has no tool call waiting for approval"):
        agent.approve()


def test_a_rule_makes_a_builtin_tool_wait_too(tmp_path):
    model = ScriptedModel(
        reply(tool_calls=[call("archival_memory_insert", content="secret")]),
    )
    agent = make_agent(tmp_path / "a.db", model, needs_approval("archival_memory_insert"))
    result = agent.step("remember the secret")
    assert result.stop_reason == "approval_required"
    assert agent.archival.count() == 0
    agent.approve()
    assert agent.archival.count() == 1


def test_the_whole_answer_waits_and_then_runs_in_the_models_order(tmp_path):
    model = ScriptedModel(
        reply(
            tool_calls=[
                call("lookup", query="a"),
                call("delete_file", path="/tmp/a"),
                call("send_message", message="Done."),
            ]
        )
    )
    agent = make_agent(tmp_path / "a.db", model)
    events = list(agent.stream("tidy"))
    asked = [e for e in events if isinstance(e, ApprovalRequested)]
    assert [c.name for c in asked[0].calls] == ["delete_file"]  # only it needs a word
    assert isinstance(events[-1], StepFinished)
    assert events[-1].result.replies == [] and events[-1].result.tool_results == []
    result = agent.approve()
    assert [r.call.name for r in result.tool_results] == ["lookup", "delete_file", "send_message"]
    assert result.replies == ["Done."] and result.stop_reason == "send_message"


def test_two_waiting_calls_are_answered_one_by_one(tmp_path):
    model = ScriptedModel(
        reply(tool_calls=[call("delete_file", path="/a"), call("delete_file", path="/b")]),
        say("Deleted /a only."),
    )
    agent = make_agent(tmp_path / "a.db", model)
    first, second = agent.step("delete both").pending_approvals
    with pytest.raises(ApprovalError, match=f"tool call '{second.id}' \\(delete_file\\) is not"):
        agent.step(Approval(approve=True, tool_call_id=first.id))
    with pytest.raises(ApprovalError, match="is not waiting for approval"):
        agent.step(Approval(approve=True, tool_call_id="call_nope"))
    with pytest.raises(ApprovalError, match="answered twice"):
        agent.step([Approval(approve=True, tool_call_id=first.id)] * 2)
    assert DELETED == []
    result = agent.step(
        [
            Approval(approve=True, tool_call_id=first.id),
            Approval(approve=False, reason="keep b", tool_call_id=second.id),
        ]
    )
    assert DELETED == ["/a"]
    assert [r.ok for r in result.tool_results] == [True, False, True]  # then send_message
    assert result.replies == ["Deleted /a only."]


def test_tool_rules_count_the_whole_turn_across_the_wait(tmp_path):
    model = ScriptedModel(
        reply(tool_calls=[call("lookup", query="a", request_heartbeat=True)]),
        reply(tool_calls=[call("delete_file", path="/a", request_heartbeat=True)]),
        reply(tool_calls=[call("lookup", query="b", request_heartbeat=True)]),
        say("Done."),
    )
    agent = make_agent(tmp_path / "a.db", model, runs_first("lookup"), at_most("lookup", 1))
    assert agent.step("go").stop_reason == "approval_required"
    result = agent.approve()
    # delete_file is not refused as a first call, and lookup already ran once.
    assert result.tool_results[0].ok and DELETED == ["/a"]
    assert result.tool_results[1].content.startswith(
        "Error: lookup was not run: lookup already ran 1 times in this step"
    )
    assert result.replies == ["Done."]


def test_astream_reports_the_approvals_it_carries(tmp_path):
    model = ScriptedModel(reply(tool_calls=[call("delete_file", path="/a")]), say("No."))
    agent = make_agent(tmp_path / "a.db", model)
    answer = Approval(approve=False, reason="no")

    async def both() -> list:
        await agent.astep("delete")
        return [e async for e in agent.astream(answer)]

    events = asyncio.run(both())
    assert isinstance(events[0], StepStarted) and events[0].approvals == [answer]
    assert events[0].user_message == ""
    assert events[-1].result.replies == ["No."]


def test_a_compaction_while_waiting_keeps_the_waiting_answer_answerable(fake_llm, tmp_path):
    agent = make_agent(tmp_path / "a.db")
    for n in range(3):
        fake_llm.enqueue(say(f"Reply {n}."))
        agent.step(f"message {n}")
    fake_llm.enqueue(reply(tool_calls=[call("delete_file", path="/a", request_heartbeat=True)]))
    agent.step("delete /a")
    fake_llm.enqueue(say("Summary of the talk."))
    assert agent.runner.summarize().evicted > 0
    assert agent.pending_approvals()[0].name == "delete_file"
    fake_llm.enqueue(say("Deleted."))
    assert agent.approve().replies == ["Deleted."]  # the fake server validated the request
    last = fake_llm.chat_requests[-1]["messages"]
    assert [m["role"] for m in last[-3:]] == ["user", "assistant", "tool"]
