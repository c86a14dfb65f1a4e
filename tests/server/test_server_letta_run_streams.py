"""Every Letta send is a run: its chunks carry `run_id`, `seq_id` and
`otid`; a background stream dropped halfway is resumed from its last
seq_id; a run cancelled mid-step ends `cancelled` with every call answered
and the agent usable. Driven by letta-client 1.x against a real server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from letta_client import Letta, NotFoundError
from support.held_model import POLL_LIMIT_SECONDS, Held, ended, save_then_reply

from memgpt_lite.server.letta.run_stream import RunChunks, pinged
from memgpt_lite.testing.script import call, reply, say
from memgpt_lite.testing.server import FakeOpenAIServer

HI: Any = [{"role": "user", "content": "hi"}]


def test_every_send_is_a_run_and_its_chunks_carry_run_id_seq_id_and_otid(
    client: Letta, fake_llm: FakeOpenAIServer
) -> None:
    agent = client.agents.create(model="openai/gpt-4o-mini")
    fake_llm.enqueue(
        say("Hello."),
        reply("Thinking it over.", tool_calls=[call("send_message", message="hello there, Alice")]),
    )
    answer = client.agents.messages.create(agent.id, messages=HI)
    run_id = answer.usage.run_ids[0]
    assert {m.run_id for m in answer.messages} == {run_id} and all(m.otid for m in answer.messages)
    done = client.runs.retrieve(run_id)
    assert (done.status, done.stop_reason, done.background) == ("completed", "end_turn", False)

    with client.agents.messages.create(
        agent.id, messages=HI, streaming=True, stream_tokens=True
    ) as stream:
        chunks = list(stream)
    streamed = chunks[0].run_id
    assert {c.run_id for c in chunks} == {streamed} != {run_id}
    assert [c.seq_id for c in chunks] == list(range(1, len(chunks) + 1))
    messages = [c for c in chunks if c.message_type not in ("stop_reason", "usage_statistics")]
    assert all(m.otid for m in messages)
    said = [m for m in messages if m.message_type == "assistant_message"]
    assert len(said) > 1 and len({m.otid for m in said}) == 1  # pieces of one message
    thought = {m.otid for m in messages if m.message_type == "reasoning_message"}
    assert thought.isdisjoint({said[0].otid})
    listed = {m.id: m.otid for m in client.agents.messages.list(agent.id)}
    assert all(listed[m.id] == m.otid for m in answer.messages)  # the same wherever shown
    assert [r.id for r in client.runs.list(agent_id=agent.id)] == [streamed, run_id]
    assert client.runs.retrieve(streamed).status == "completed"


def test_a_background_stream_dropped_halfway_resumes_from_its_last_seq_id(
    client: Letta, fake_llm: FakeOpenAIServer
) -> None:
    agent = client.agents.create(model="openai/gpt-4o-mini")
    held = Held(fake_llm, save_then_reply(), at=2)  # the reply waits
    first: list[Any] = []
    with client.agents.messages.create(
        agent.id, messages=HI, streaming=True, background=True
    ) as stream:
        for chunk in stream:
            first.append(chunk)
            if chunk.message_type == "tool_return_message":
                break  # the connection drops, halfway
    assert [c.message_type for c in first] == [
        "reasoning_message",
        "tool_call_message",
        "tool_return_message",
    ]
    run_id = first[-1].run_id
    assert client.runs.retrieve(run_id).background is True
    assert [r.id for r in client.runs.list(background=True)] == [run_id]
    held.release.set()
    rest = list(client.runs.messages.stream(run_id, starting_after=first[-1].seq_id))
    assert [c.message_type for c in rest] == [
        "reasoning_message",
        "assistant_message",
        "tool_return_message",
        "stop_reason",
        "usage_statistics",
    ]
    assert [c.seq_id for c in first + rest] == list(range(1, 9))
    assert rest[1].content == "saved" and rest[-2].stop_reason == "end_turn"
    whole = list(client.runs.messages.stream(run_id))
    assert [c.model_dump() for c in whole] == [c.model_dump() for c in first + rest]
    assert ended(client, run_id).status == "completed"


def test_a_run_cancelled_mid_step_ends_cancelled_with_every_call_answered(
    client: Letta, fake_llm: FakeOpenAIServer
) -> None:
    agent = client.agents.create(model="openai/gpt-4o-mini")
    held = Held(fake_llm, [save_then_reply()[0], say("Back again.")])
    run = client.agents.messages.create_async(agent.id, messages=HI)
    assert held.asked.wait(POLL_LIMIT_SECONDS)  # the model is answering
    assert [r.id for r in client.runs.list(active=True)] == [run.id]
    assert client.agents.messages.cancel(agent.id) == {run.id: "cancelled"}
    assert list(client.runs.list(active=True)) == []
    assert client.runs.retrieve(run.id).status == "cancelled"
    held.release.set()
    done = ended(client, run.id)  # the step stopped at its next safe point
    assert (done.status, done.stop_reason) == ("cancelled", "cancelled")
    kinds = [m.message_type for m in client.runs.messages.list(run.id)]
    assert kinds == [
        "user_message",
        "reasoning_message",
        "tool_call_message",
        "tool_return_message",
    ]
    returned = list(client.runs.messages.list(run.id))[-1]
    assert returned.status == "error" and "not run" in returned.tool_return
    assert list(client.agents.passages.list(agent.id)) == []  # the insert never ran
    after = client.agents.messages.create(agent.id, messages=HI)
    assert [m.content for m in after.messages if m.message_type == "assistant_message"] == [
        "Back again."
    ]
    assert fake_llm.rejections == []  # every call had its result in the next request
    finished = after.usage.run_ids[0]
    assert client.agents.messages.cancel(agent.id, run_ids=[finished]) == {finished: "completed"}
    assert client.runs.retrieve(finished).status == "completed"
    assert client.delete(f"/v1/runs/{finished}", cast_to=object) is None
    with pytest.raises(NotFoundError):
        client.runs.retrieve(finished)


def test_a_quiet_stream_is_pinged_with_the_last_seq_id() -> None:
    gate = asyncio.Event()
    chunks = RunChunks("run-1")

    async def items() -> Any:
        yield chunks.stamp({"message_type": "reasoning_message"})
        await gate.wait()  # quiet until a ping was sent
        yield chunks.stamp({"message_type": "stop_reason"})

    async def read() -> list[Any]:
        seen = []
        async for item in pinged(items(), 0.001):
            if item is None:
                item = chunks.ping()
                gate.set()
            seen.append(item)
        return seen

    seen = asyncio.run(read())
    pings = [c for c in seen if c["message_type"] == "ping"]
    assert pings and all((p["run_id"], p["seq_id"]) == ("run-1", 1) for p in pings)
    assert pings[0]["id"] and pings[0]["date"]
    assert [(c["message_type"], c["seq_id"]) for c in seen if c not in pings] == [
        ("reasoning_message", 1),
        ("stop_reason", 2),
    ]
