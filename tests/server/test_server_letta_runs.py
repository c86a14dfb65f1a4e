"""Letta's asynchronous sends: `agents.messages.create_async` answers with a
run at once, `runs.retrieve` is polled until it ends, `runs.messages.list`
gives what its step stored; driven by letta-client 1.x against a real server."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from letta_client import Letta, NotFoundError, UnprocessableEntityError
from support.serving import new_key

from memgpt_lite.testing.script import call, error, reply
from memgpt_lite.testing.server import FakeOpenAIServer

# How long a poll may wait for a run to end: a bound on a hang, not a measure.
POLL_LIMIT_SECONDS = 60


def ended(client: Letta, run_id: str) -> Any:
    """The run, polled until it is no longer running."""
    deadline = time.monotonic() + POLL_LIMIT_SECONDS
    while (run := client.runs.retrieve(run_id)).status in ("created", "running"):
        assert time.monotonic() < deadline, f"run {run_id} still {run.status}"
        time.sleep(0.05)
    return run


def test_create_async_then_poll_the_run_and_read_its_messages(
    client: Letta, fake_llm: FakeOpenAIServer
) -> None:
    agent = client.agents.create(model="openai/gpt-4o-mini")
    release = threading.Event()

    def held_answer(body: dict[str, Any]) -> Any:
        release.wait(POLL_LIMIT_SECONDS)  # the step waits for the test to look first
        return reply("Answer her.", tool_calls=[call("send_message", message="Hello Alice")])

    fake_llm.responder = held_answer
    run = client.agents.messages.create_async(
        agent.id, messages=[{"role": "user", "content": "hi, I am Alice"}]
    )
    assert (run.agent_id, run.status) == (agent.id, "running")
    assert client.runs.retrieve(run.id).status == "running"  # the step waits: still going
    release.set()
    done = ended(client, run.id)
    assert (done.status, done.stop_reason) == ("completed", "end_turn")
    assert done.completed_at is not None

    messages = list(client.runs.messages.list(run.id))
    assert [m.message_type for m in messages] == [
        "user_message",
        "reasoning_message",
        "assistant_message",
        "tool_return_message",
    ]
    assert messages[0].content == "hi, I am Alice" and messages[2].content == "Hello Alice"
    stored = {m.id for m in client.agents.messages.list(agent.id)}
    assert {m.id for m in messages} == stored
    assert [r.id for r in client.runs.list(agent_id=agent.id)] == [run.id]


def test_a_failing_run_is_failed_with_its_reason(client: Letta, fake_llm: FakeOpenAIServer) -> None:
    agent = client.agents.create(model="openai/gpt-4o-mini")
    fake_llm.enqueue(*[error(400, "the model refuses")] * 5)
    run = client.agents.messages.create_async(agent.id, messages=[{"role": "user", "content": "x"}])
    done = ended(client, run.id)
    assert (done.status, done.stop_reason) == ("failed", "llm_api_error")
    assert "the model refuses" in done.metadata["error"]


def test_a_bad_async_request_makes_no_run(client: Letta, db: str, server: str) -> None:
    agent = client.agents.create(model="openai/gpt-4o-mini")
    with pytest.raises(UnprocessableEntityError, match="at least one user message"):
        client.agents.messages.create_async(agent.id, messages=[])
    with pytest.raises(UnprocessableEntityError, match="callback_url"):
        client.agents.messages.create_async(
            agent.id,
            messages=[{"role": "user", "content": "x"}],
            callback_url="http://127.0.0.1:9/done",
        )
    assert list(client.runs.list()) == []


def test_another_users_run_is_not_found(
    client: Letta, db: str, server: str, fake_llm: FakeOpenAIServer
) -> None:
    agent = client.agents.create(model="openai/gpt-4o-mini")
    fake_llm.enqueue(reply("", tool_calls=[call("send_message", message="ok")]))
    run = client.agents.messages.create_async(agent.id, messages=[{"role": "user", "content": "x"}])
    ended(client, run.id)
    bob = Letta(base_url=server, api_key=new_key(db, "bob"), max_retries=0)
    with pytest.raises(NotFoundError):
        bob.runs.retrieve(run.id)
    with pytest.raises(NotFoundError):
        list(bob.runs.messages.list(run.id))
    with pytest.raises(NotFoundError):
        bob.agents.messages.create_async(agent.id, messages=[{"role": "user", "content": "x"}])
    assert list(bob.runs.list()) == []
