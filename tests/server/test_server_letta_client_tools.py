"""Letta's client-side tools through Letta's own client: `client_tools`
declared on a send are offered to the model; a call of one ends the send
with an approval_request_message; the client's result, sent back as an
approval of type "tool" (or as a tool_return message), goes on with the
step. A wrong or missing result is a 409 and stores nothing; a bad schema
is a 422."""

from __future__ import annotations

from typing import Any

import pytest
from letta_client import ConflictError, Letta, UnprocessableEntityError
from support.client_tools import BASH

from memgpt_lite.testing.script import call, reply, say
from memgpt_lite.testing.server import FakeOpenAIServer


def ask(client: Letta, agent_id: str, **body: Any) -> Any:
    return client.agents.messages.create(agent_id, client_tools=[BASH], **body)


def stored(client: Letta, agent_id: str) -> list[tuple[str, str]]:
    return [(m.id, m.message_type) for m in client.agents.messages.list(agent_id)]


def waiting_bash(client: Letta, fake_llm: FakeOpenAIServer) -> tuple[str, Any]:
    """An agent whose Bash call waits; its id and the approval request."""
    agent = client.agents.create(model="openai/gpt-4o-mini")
    fake_llm.enqueue(reply("let me look", [call("Bash", command="ls")]))
    asked = ask(client, agent.id, messages=[{"role": "user", "content": "what files?"}])
    assert asked.stop_reason.stop_reason == "requires_approval"
    return agent.id, asked.messages[-1]


def test_a_client_tool_call_is_an_approval_request_and_its_result_goes_on(
    client: Letta, fake_llm: FakeOpenAIServer
) -> None:
    agent_id, request = waiting_bash(client, fake_llm)
    assert request.message_type == "approval_request_message"
    assert request.tool_call.name == "Bash"
    assert "Bash" in [t["function"]["name"] for t in fake_llm.chat_requests[-1]["tools"]]
    call_id = request.tool_call.tool_call_id

    fake_llm.enqueue(say("You have a.txt."))
    result = {"type": "tool", "tool_call_id": call_id, "tool_return": "a.txt", "status": "success"}
    answered = ask(client, agent_id, messages=[{"type": "approval", "approvals": [result]}])
    kinds = [m.message_type for m in answered.messages]
    assert kinds[0] == "tool_return_message" and "assistant_message" in kinds
    assert answered.messages[0].tool_return == "a.txt"
    assert answered.messages[0].status == "success"
    assert fake_llm.chat_requests[-1]["messages"][-1] == {
        "role": "tool",
        "content": "a.txt",
        "tool_call_id": call_id,
    }
    stored = client.agents.messages.list(agent_id, order="asc")
    returns = [m for m in stored if m.message_type == "tool_return_message"]
    assert returns[0].tool_return == "a.txt"
    assert fake_llm.rejections == []


def test_a_tool_return_message_and_an_error_status(
    client: Letta, fake_llm: FakeOpenAIServer
) -> None:
    agent_id, request = waiting_bash(client, fake_llm)
    fake_llm.enqueue(say("It failed."))
    failed = {
        "type": "tool",
        "tool_call_id": request.tool_call.tool_call_id,
        "tool_return": [{"type": "text", "text": "no such command"}],
        "status": "error",
        "stdout": [],
        "stderr": ["no such command"],
    }
    answered = client.agents.messages.create(
        agent_id, messages=[{"type": "tool_return", "tool_returns": [failed]}]
    )
    returned = answered.messages[0]
    assert (returned.tool_return, returned.status) == ("Error: no such command", "error")


@pytest.mark.parametrize(
    ("approvals", "detail"),
    [
        (
            [
                {
                    "type": "tool",
                    "tool_call_id": "call-nope",
                    "tool_return": "x",
                    "status": "success",
                }
            ],
            "tool call 'call-nope' is not waiting",
        ),
        (
            [{"type": "approval", "approve": False, "tool_call_id": "call-nope"}],
            "tool call 'call-nope' is not waiting",
        ),
    ],
)
def test_a_result_for_another_call_is_a_409_and_stores_nothing(
    client: Letta, fake_llm: FakeOpenAIServer, approvals: list[dict[str, Any]], detail: str
) -> None:
    agent_id, request = waiting_bash(client, fake_llm)
    before = stored(client, agent_id)
    with pytest.raises(ConflictError) as refused:
        ask(client, agent_id, messages=[{"type": "approval", "approvals": approvals}])
    assert refused.value.body["detail"].startswith(detail)  # type: ignore[index]
    assert stored(client, agent_id) == before
    pending = client.agents.retrieve(agent_id, include=["agent.pending_approval"])
    assert pending.pending_approval is not None
    assert pending.pending_approval.id == request.id


def test_approving_a_client_call_is_a_409(client: Letta, fake_llm: FakeOpenAIServer) -> None:
    agent_id, request = waiting_bash(client, fake_llm)
    approve = {"type": "approval", "approve": True, "tool_call_id": request.tool_call.tool_call_id}
    with pytest.raises(ConflictError) as refused:
        ask(client, agent_id, messages=[{"type": "approval", "approvals": [approve]}])
    assert "client-side tool's: the client runs it" in refused.value.body["detail"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("tool", "detail"),
    [
        (
            {"name": "Bash", "parameters": {"type": "array"}},
            'client_tools.0.parameters: an object schema (type "object") is needed',
        ),
        ({"name": "bad name"}, "client_tools.0.name: String should match pattern"),
        ({"name": "send_message"}, "client_tools.0.name: the agent has a tool named"),
    ],
)
def test_a_bad_client_tool_is_a_422_and_stores_nothing(
    client: Letta, fake_llm: FakeOpenAIServer, tool: dict[str, Any], detail: str
) -> None:
    agent = client.agents.create(model="openai/gpt-4o-mini")
    with pytest.raises(UnprocessableEntityError) as refused:
        client.agents.messages.create(
            agent.id, messages=[{"role": "user", "content": "hi"}], client_tools=[tool]
        )
    assert refused.value.body["detail"].startswith(detail)  # type: ignore[index]
    assert stored(client, agent.id) == []
    assert fake_llm.chat_requests == []


@pytest.mark.filterwarnings("ignore:deprecated:DeprecationWarning")  # messages.stream
def test_a_streamed_send_ends_with_the_approval_request(
    client: Letta, fake_llm: FakeOpenAIServer
) -> None:
    agent = client.agents.create(model="openai/gpt-4o-mini")
    fake_llm.enqueue(reply("", [call("Bash", command="pwd")]))
    with client.agents.messages.stream(
        agent.id, messages=[{"role": "user", "content": "where?"}], client_tools=[BASH]
    ) as stream:
        chunks = list(stream)
    kinds = [c.message_type for c in chunks]
    assert "approval_request_message" in kinds
    assert chunks[kinds.index("stop_reason")].stop_reason == "requires_approval"
    request = chunks[kinds.index("approval_request_message")]
    fake_llm.enqueue(say("In /home."))
    result = {
        "type": "tool",
        "tool_call_id": request.tool_call.tool_call_id,
        "tool_return": "/home",
        "status": "success",
    }
    with client.agents.messages.stream(
        agent.id, messages=[{"type": "approval", "approvals": [result]}], client_tools=[BASH]
    ) as again:
        kinds = [c.message_type for c in again]
    assert kinds[0] == "tool_return_message" and "assistant_message" in kinds


@pytest.mark.filterwarnings("ignore:deprecated:DeprecationWarning")  # messages.stream
def test_a_client_tool_named_as_the_agent_s_is_a_422_on_a_stream_too(
    client: Letta, fake_llm: FakeOpenAIServer
) -> None:
    agent = client.agents.create(model="openai/gpt-4o-mini")
    with pytest.raises(UnprocessableEntityError) as refused:  # noqa: SIM117 - opened to raise
        with client.agents.messages.stream(
            agent.id,
            messages=[{"role": "user", "content": "hi"}],
            client_tools=[BASH, {"name": "conversation_search"}],
        ) as stream:
            list(stream)
    detail = refused.value.body["detail"]  # type: ignore[index]
    assert detail.startswith("client_tools.1.name: the agent has a tool named")
    assert fake_llm.chat_requests == []
