"""Client-side tools: tools a step's sender declares and runs itself. They
are offered to the model for that step only; a call of one waits, stored,
as an approval does; the client's result (`ToolReturn`) is the call's
result and the step goes on. Checked against the validating fake server
(every call gets exactly one result) and both backends."""

from __future__ import annotations

import pytest

from memgpt_lite import (
    Agent,
    AgentSettings,
    Approval,
    ApprovalError,
    ClientTool,
    ConfigError,
    StepWithClientTools,
    ToolReturn,
    tool,
)
from memgpt_lite.testing import call, reply, say
from memgpt_lite.tools.rules import at_most

RAN: list[str] = []

BASH = ClientTool(
    name="Bash",
    description="Run a shell command on the user's machine.",
    parameters={
        "type": "object",
        "properties": {"command": {"type": "string", "description": "The command."}},
        "required": ["command"],
    },
)


@tool
def lookup(query: str) -> str:
    """Look something up.

    Args:
        query: What to look up.
    """
    RAN.append(query)
    return f"found {query}"


@pytest.fixture(autouse=True)
def _nothing_ran():
    RAN.clear()


def make_agent(db, *rules) -> Agent:
    settings = AgentSettings(tool_rules=list(rules))
    return Agent.create("sam", "gpt-4o-mini", db=db, tools=[lookup], settings=settings)


def with_bash(message) -> StepWithClientTools:
    return StepWithClientTools(message=message, client_tools=[BASH])


def offered(request: dict) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools", [])]


def test_a_client_tool_is_offered_for_its_step_alone(fake_llm, tmp_path):
    agent = make_agent(tmp_path / "a.db")
    fake_llm.enqueue(say("Hi."), say("Hi again."))
    agent.step(with_bash("hello"))
    agent.step("hello again")
    first, second = fake_llm.chat_requests
    assert "Bash" in offered(first) and "lookup" in offered(first)
    bash = next(t for t in first["tools"] if t["function"]["name"] == "Bash")
    # As declared: no request_heartbeat added to what the client runs.
    assert bash["function"]["parameters"] == {**BASH.parameters}
    assert bash["function"]["description"] == BASH.description
    assert "Bash" not in offered(second)
    assert "Bash" not in agent.tools  # never one of the agent's tools


def test_a_client_call_waits_and_its_result_goes_on_with_the_step(fake_llm, db_location):
    agent = make_agent(db_location)
    fake_llm.enqueue(
        reply(content="look", tool_calls=[call("Bash", command="ls")]),
        say("You have two files."),
    )
    waiting = agent.step(with_bash("what files?"))
    assert waiting.stop_reason == "approval_required"
    [pending] = waiting.pending_approvals
    assert (pending.name, pending.client) == ("Bash", True)
    assert agent.pending_approvals() == [pending]  # as stored: a restart keeps it
    result = agent.step(with_bash([ToolReturn(tool_call_id=pending.id, content="a.txt\nb.txt")]))
    assert result.replies == ["You have two files."]
    assert result.tool_results[0].content == "a.txt\nb.txt" and result.tool_results[0].ok
    second = fake_llm.chat_requests[1]
    assert second["messages"][-1] == {
        "role": "tool",
        "content": "a.txt\nb.txt",
        "tool_call_id": pending.id,
    }
    assert "Bash" in offered(second)  # declared again with the result: offered again
    assert fake_llm.rejections == []
    assert {m.step_id for m in result.messages} == {waiting.messages[0].step_id}


def test_the_wait_survives_a_restart(fake_llm, tmp_path):
    db = tmp_path / "a.db"
    agent = make_agent(db)
    fake_llm.enqueue(reply(tool_calls=[call("Bash", command="pwd")]), say("Done."))
    agent.step(with_bash("where am I?"))
    again = Agent.load("sam", db=db, tools=[lookup])
    [pending] = again.pending_approvals()
    assert pending.client
    # Answered without declaring the tools again: the stored mark is enough.
    result = again.step([ToolReturn(tool_call_id=pending.id, content="/home/sam")])
    assert result.replies == ["Done."]
    assert fake_llm.rejections == []


def test_a_failed_result_is_an_error_and_the_model_reads_it(fake_llm, tmp_path):
    agent = make_agent(tmp_path / "a.db")
    fake_llm.enqueue(reply(tool_calls=[call("Bash", command="nope")]), say("It failed."))
    [pending] = agent.step(with_bash("run nope")).pending_approvals
    result = agent.step([ToolReturn(tool_call_id=pending.id, content="not found", ok=False)])
    assert result.tool_results[0].content == "Error: not found"
    assert not result.tool_results[0].ok
    assert fake_llm.chat_requests[1]["messages"][-1]["content"] == "Error: not found"


def test_a_denied_client_call_gets_the_denial(fake_llm, tmp_path):
    agent = make_agent(tmp_path / "a.db")
    fake_llm.enqueue(reply(tool_calls=[call("Bash", command="rm -rf /")]), say("Fine."))
    [pending] = agent.step(with_bash("clean up")).pending_approvals
    result = agent.deny("no", tool_call_id=pending.id)
    assert result.tool_results[0].content.startswith("Error: the user denied this call of Bash")


def test_server_calls_of_the_same_answer_run_after_the_client_s_result(fake_llm, tmp_path):
    agent = make_agent(tmp_path / "a.db")
    fake_llm.enqueue(
        reply(tool_calls=[call("lookup", query="x"), call("Bash", command="ls")]),
        say("Both done."),
    )
    waiting = agent.step(with_bash("both"))
    assert RAN == []  # the answer waits whole
    assert [c.name for c in waiting.pending_approvals] == ["Bash"]
    bash = waiting.pending_approvals[0]
    result = agent.step([ToolReturn(tool_call_id=bash.id, content="ls output")])
    assert RAN == ["x"]
    assert [(r.call.name, r.content) for r in result.tool_results][:2] == [
        ("lookup", "found x"),
        ("Bash", "ls output"),
    ]
    assert fake_llm.rejections == []


@pytest.mark.parametrize(
    ("answers", "error"),
    [
        ([], "is not answered: send its result, or deny it"),
        ([ToolReturn(tool_call_id="call-nope", content="x")], "is not waiting"),
        ([Approval(approve=True)], "is a client-side tool's: the client runs it"),
    ],
)
def test_a_wrong_answer_is_refused_and_stores_nothing(fake_llm, tmp_path, answers, error):
    agent = make_agent(tmp_path / "a.db")
    fake_llm.enqueue(reply(tool_calls=[call("Bash", command="ls")]))
    agent.step(with_bash("ls"))
    before = agent.store.messages_from(agent.state.id, 0)
    with pytest.raises(ApprovalError, match=error):
        agent.step(answers)
    assert agent.store.messages_from(agent.state.id, 0) == before
    assert len(fake_llm.chat_requests) == 1


def test_a_result_for_a_server_call_is_refused(fake_llm, tmp_path):
    agent = make_agent(tmp_path / "a.db")
    fake_llm.enqueue(reply(tool_calls=[call("lookup", query="x"), call("Bash", command="ls")]))
    waiting = agent.step(with_bash("both"))
    server_call = next(c for c in waiting.messages[-1].tool_calls if c.name == "lookup")
    with pytest.raises(ApprovalError, match="is not waiting"):
        agent.step([ToolReturn(tool_call_id=server_call.id, content="forged")])


def test_a_new_message_while_a_client_call_waits_is_refused(fake_llm, tmp_path):
    agent = make_agent(tmp_path / "a.db")
    fake_llm.enqueue(reply(tool_calls=[call("Bash", command="ls")]))
    agent.step(with_bash("ls"))
    with pytest.raises(ApprovalError, match="waiting for the result of a client-side tool call"):
        agent.step("something else")


def test_tool_rules_hold_for_client_tools(fake_llm, tmp_path):
    agent = make_agent(tmp_path / "a.db", at_most("Bash", 1))
    fake_llm.enqueue(
        reply(tool_calls=[call("Bash", command="one"), call("Bash", command="two")]),
        say("Ran one."),
    )
    waiting = agent.step(with_bash("twice"))
    # The second call is over the limit: not the client's to run, and it
    # gets the rule's error once the first one's result is in.
    assert [c.client for c in waiting.messages[-1].tool_calls] == [True, False]
    [first] = waiting.pending_approvals
    result = agent.step(with_bash([ToolReturn(tool_call_id=first.id, content="1")]))
    assert [r.ok for r in result.tool_results][:2] == [True, False]
    assert "Bash already ran 1 times in this step" in result.tool_results[1].content
    assert fake_llm.rejections == []


@pytest.mark.parametrize(
    ("tools", "error"),
    [
        ([ClientTool(name="lookup")], "the agent has a tool named 'lookup'"),
        ([BASH, BASH], "'Bash' is declared twice"),
    ],
)
def test_a_client_tool_that_clashes_is_refused_before_anything_is_stored(
    fake_llm, tmp_path, tools, error
):
    agent = make_agent(tmp_path / "a.db")
    with pytest.raises(ConfigError, match=error):
        agent.step(StepWithClientTools(message="hi", client_tools=tools))
    assert agent.store.messages_from(agent.state.id, 0) == []
    assert fake_llm.chat_requests == []


@pytest.mark.parametrize(
    ("parameters", "error"),
    [
        ({"type": "string"}, 'an object schema \\(type "object"\\) is needed'),
        ({"type": "object", "properties": {"a": 1}}, "properties must map"),
        ({"type": "object", "properties": {}, "required": ["a"]}, "not in properties: a"),
    ],
)
def test_a_bad_schema_is_refused(parameters, error):
    with pytest.raises(ValueError, match=error):
        ClientTool(name="Bash", parameters=parameters)
