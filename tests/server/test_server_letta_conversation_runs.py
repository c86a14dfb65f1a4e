"""A conversation's sends are runs, as an agent's are: their chunks carry
`run_id`, `seq_id` and `otid`, a background stream is resumed from a seq_id
through the conversation's stream route, and the conversation's cancel
stops its running run cleanly. Driven by letta-client 1.x against a real
server."""

from __future__ import annotations

from typing import Any

from letta_client import Letta
from support.client_tools import BASH
from support.held_model import POLL_LIMIT_SECONDS, Held, ended, save_then_reply

from memgpt_lite.testing.script import call, reply, say
from memgpt_lite.testing.server import FakeOpenAIServer

HI: Any = [{"role": "user", "content": "hi"}]


def unstreamed_send(client: Letta, conversation_id: str) -> Any:
    """A LettaResponse (which this SDK reads as a stream: asked plainly)."""
    body = {"messages": HI, "streaming": False}
    return client.post(f"/v1/conversations/{conversation_id}/messages", body=body, cast_to=object)


def test_a_conversations_sends_are_its_runs_with_run_id_seq_id_and_otid(
    client: Letta, fake_llm: FakeOpenAIServer
) -> None:
    agent = client.agents.create(model="openai/gpt-4o-mini")
    trip = client.conversations.create(agent_id=agent.id).id
    fake_llm.enqueue(
        reply("Thinking.", tool_calls=[call("send_message", message="hello")]),
        say("Hello again."),
        say("Hello from the default conversation."),
    )
    chunks = list(client.conversations.messages.create(trip, messages=HI, stream_tokens=True))
    run_id = chunks[0].run_id
    assert run_id and {c.run_id for c in chunks} == {run_id}
    assert [c.seq_id for c in chunks] == list(range(1, len(chunks) + 1))
    messages = [c for c in chunks if c.message_type not in ("stop_reason", "usage_statistics")]
    assert messages and all(m.otid for m in messages)
    run = client.runs.retrieve(run_id)
    assert (run.status, run.agent_id, run.conversation_id) == ("completed", agent.id, trip)

    answer = unstreamed_send(client, trip)
    unstreamed = answer["usage"]["run_ids"][0]
    assert {m["run_id"] for m in answer["messages"]} == {unstreamed} != {run_id}
    assert client.runs.retrieve(unstreamed).conversation_id == trip
    listed = list(client.runs.messages.list(unstreamed))  # what the run stored, in its conversation
    assert listed[0].message_type == "user_message"
    assert [m.id for m in listed[1:]] == [m["id"] for m in answer["messages"]]
    on_the_agent = client.agents.messages.create(agent.id, messages=HI)
    default_run = client.runs.retrieve(on_the_agent.usage.run_ids[0])
    assert default_run.conversation_id is None


def test_a_conversations_background_stream_resumes_and_its_cancel_stops_its_run(
    client: Letta, fake_llm: FakeOpenAIServer
) -> None:
    agent = client.agents.create(model="openai/gpt-4o-mini")
    trip = client.conversations.create(agent_id=agent.id).id
    held = Held(fake_llm, [*save_then_reply(), say("Back again.")], at=2)  # the reply waits
    first: list[Any] = []
    for chunk in client.conversations.messages.create(trip, messages=HI, background=True):
        if chunk.message_type == "ping":
            continue
        first.append(chunk)
        if chunk.message_type == "tool_return_message":
            break  # the connection drops, halfway
    run_id = first[-1].run_id
    assert client.runs.retrieve(run_id).background is True
    assert held.asked.wait(POLL_LIMIT_SECONDS)  # the model is answering
    assert client.conversations.cancel(trip) == {run_id: "cancelled"}
    assert client.conversations.cancel(trip) == {}  # nothing runs in it now
    held.release.set()
    rest = list(
        client.conversations.messages.stream(
            trip, starting_after=first[-1].seq_id, include_pings=False
        )
    )
    assert [c.seq_id for c in first + rest] == list(range(1, len(first + rest) + 1))
    assert {c.run_id for c in rest} == {run_id}
    assert [c.stop_reason for c in rest if c.message_type == "stop_reason"] == ["cancelled"]
    done = ended(client, run_id)  # the step stopped at its next safe point
    assert (done.status, done.stop_reason) == ("cancelled", "cancelled")
    # The conversation takes its next send as usual: every call had its result.
    after = unstreamed_send(client, trip)["messages"]
    assert [m["content"] for m in after if m["message_type"] == "assistant_message"] == [
        "Back again."
    ]
    assert fake_llm.rejections == []


def test_a_conversations_send_offers_client_tools_and_takes_their_results(
    client: Letta, fake_llm: FakeOpenAIServer
) -> None:
    """As Letta Code sends every turn: streamed, in a conversation, with its tools."""
    agent = client.agents.create(model="openai/gpt-4o-mini")
    trip = client.conversations.create(agent_id=agent.id).id
    fake_llm.enqueue(reply("let me look", [call("Bash", command="ls")]), say("You have a.txt."))
    asked = list(client.conversations.messages.create(trip, messages=HI, client_tools=[BASH]))
    request = [c for c in asked if c.message_type == "approval_request_message"]
    assert [r.tool_call.name for r in request] == ["Bash"]
    assert [c.stop_reason for c in asked if c.message_type == "stop_reason"] == [
        "requires_approval"
    ]
    assert "Bash" in [t["function"]["name"] for t in fake_llm.chat_requests[-1]["tools"]]
    call_id = request[0].tool_call.tool_call_id
    result = {"type": "tool", "tool_call_id": call_id, "tool_return": "a.txt", "status": "success"}
    answered = list(
        client.conversations.messages.create(
            trip, messages=[{"type": "approval", "approvals": [result]}], client_tools=[BASH]
        )
    )
    assert {c.run_id for c in answered} != {asked[0].run_id}  # each send its own run
    returned = [c for c in answered if c.message_type == "tool_return_message"]
    assert [(r.tool_call_id, r.tool_return) for r in returned][0] == (call_id, "a.txt")
    assert [c.content for c in answered if c.message_type == "assistant_message"] == [
        "You have a.txt."
    ]
    assert fake_llm.chat_requests[-1]["messages"][-1] == {
        "role": "tool",
        "content": "a.txt",
        "tool_call_id": call_id,
    }
    assert fake_llm.rejections == []
    # The agent's default conversation never saw it.
    assert [m.message_type for m in client.agents.messages.list(agent.id)] == []
