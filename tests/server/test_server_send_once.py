"""One send, run once: a send retried with the same Idempotency-Key (our
API, Letta's routes, OpenAI's chat completions) or Letta's otid is answered
from the first, not run again, on both backends, with the real httpx,
openai and letta-client clients and two users."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import letta_client
import openai
import pytest
from support.serving import live_server, new_key

import memgpt_lite
from memgpt_lite.testing import FakeOpenAIServer
from memgpt_lite.testing.script import call, error, reply, say


class Served:
    def __init__(self, url: str, db: str) -> None:
        self.url, self.db = url, db
        self.alice, self.bob = new_key(db, "alice"), new_key(db, "bob")

    def http(self, key: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key or self.alice}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def user_messages(self, agent: str = "sam", key: str | None = None) -> list[str]:
        page = self.http(key).get(f"/api/agents/{agent}/messages").json()
        return [m["content"] for m in page["messages"] if m["role"] == "user"]


@pytest.fixture
def served(db_location: str, fake_llm: FakeOpenAIServer) -> Iterator[Served]:
    memgpt_lite.Agent.create("sam", "fake-model", db=db_location, owner="alice")
    memgpt_lite.Agent.create("bobs", "fake-model", db=db_location, owner="bob")
    with live_server(db_location) as url:
        yield Served(url, db_location)


def keyed(key: str) -> dict[str, str]:
    return {"Idempotency-Key": key}


def test_our_send_with_a_key_runs_once_and_answers_the_same(
    served: Served, fake_llm: FakeOpenAIServer
) -> None:
    fake_llm.enqueue(say("Hello Alice!"))
    http = served.http()
    body = {"message": "hi, I am Alice"}
    first = http.post("/api/agents/sam/messages", json=body, headers=keyed("k-1"))
    assert first.status_code == 200
    again = http.post("/api/agents/sam/messages", json=body, headers=keyed("k-1"))
    assert again.status_code == 200
    assert again.json() == first.json()
    assert first.json()["replies"] == ["Hello Alice!"]
    assert len(fake_llm.requests) == 1
    assert served.user_messages() == ["hi, I am Alice"]
    # Another request under the same key is refused, and stores nothing.
    other = http.post("/api/agents/sam/messages", json={"message": "bye"}, headers=keyed("k-1"))
    assert other.status_code == 422
    assert other.json()["detail"] == (
        "the idempotency key 'k-1' was used for another request to this agent"
    )
    assert other.headers["x-should-retry"] == "false"
    # Without a key, the same message runs again.
    fake_llm.enqueue(say("Hello again!"))
    assert http.post("/api/agents/sam/messages", json=body).json()["replies"] == ["Hello again!"]
    assert served.user_messages() == ["hi, I am Alice"] * 2


def test_a_replayed_stream_is_the_steps_end_in_one_piece(
    served: Served, fake_llm: FakeOpenAIServer
) -> None:
    fake_llm.enqueue(say("Streamed hello."))
    http = served.http()
    body = {"message": "stream please", "stream": True}

    def events() -> list[dict[str, Any]]:
        import json

        answer = http.post("/api/agents/sam/messages", json=body, headers=keyed("s-1"))
        assert answer.status_code == 200
        return [
            json.loads(line[len("data: ") :])
            for line in answer.text.splitlines()
            if line.startswith("data: ")
        ]

    first, again = events(), events()
    assert [e["type"] for e in again] == ["step_started", "step_finished"]
    assert again[-1]["result"] == first[-1]["result"]
    assert again[-1]["result"]["replies"] == ["Streamed hello."]
    assert len(fake_llm.requests) == 1
    assert served.user_messages() == ["stream please"]


def test_the_openai_client_gets_the_first_completion(
    served: Served, fake_llm: FakeOpenAIServer
) -> None:
    fake_llm.enqueue(say("One answer."))
    chat = openai.OpenAI(base_url=f"{served.url}/v1", api_key=served.alice)
    messages: Any = [{"role": "user", "content": "ask once"}]
    first = chat.chat.completions.create(model="sam", messages=messages, extra_headers=keyed("o-1"))
    again = chat.chat.completions.create(model="sam", messages=messages, extra_headers=keyed("o-1"))
    assert again.choices[0].message.content == first.choices[0].message.content == "One answer."
    assert again.id == first.id
    fake_llm.enqueue(say("Streamed once."))
    streamed = chat.chat.completions.create(
        model="sam", messages=messages, extra_headers=keyed("o-2"), stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == (
        "Streamed once."
    )
    replay = chat.chat.completions.create(
        model="sam", messages=messages, extra_headers=keyed("o-2"), stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in replay if c.choices) == (
        "Streamed once."
    )
    assert len(fake_llm.requests) == 2
    assert served.user_messages() == ["ask once", "ask once"]


def test_letta_otid_and_key_answer_from_the_first_send(
    served: Served, fake_llm: FakeOpenAIServer
) -> None:
    letta = letta_client.Letta(base_url=served.url, api_key=served.alice)
    agent_id = letta.agents.list().items[0].id
    fake_llm.enqueue(say("Letta hello."))
    message: Any = [{"role": "user", "content": "hello letta", "otid": "otid-1"}]
    first = letta.agents.messages.create(agent_id, messages=message)
    again = letta.agents.messages.create(agent_id, messages=message)
    assert [m.id for m in again.messages] == [m.id for m in first.messages]
    assert [m.content for m in again.messages if m.message_type == "assistant_message"] == [
        "Letta hello."
    ]
    plain: Any = [{"role": "user", "content": "streamed letta"}]
    fake_llm.enqueue(say("Letta stream."))
    streamed = list(
        letta.agents.messages.create(
            agent_id, messages=plain, streaming=True, extra_headers=keyed("l-1")
        )
    )
    replay = list(
        letta.agents.messages.create(
            agent_id, messages=plain, streaming=True, extra_headers=keyed("l-1")
        )
    )
    assert [m.message_type for m in replay] == [m.message_type for m in streamed]
    assert len(fake_llm.requests) == 2
    assert served.user_messages() == ["hello letta", "streamed letta"]


def test_a_failed_send_is_answered_as_it_failed_without_running_again(
    served: Served, fake_llm: FakeOpenAIServer
) -> None:
    fake_llm.enqueue(error(400, "the model is on strike"))
    http = served.http()
    body = {"message": "will fail"}
    for _ in range(2):
        answer = http.post("/api/agents/sam/messages", json=body, headers=keyed("f-1"))
        assert answer.status_code == 502
        assert "the model is on strike" in answer.json()["detail"]
        assert answer.headers["x-should-retry"] == "false"
    assert len(fake_llm.requests) == 1
    assert served.user_messages() == ["will fail"]


def test_a_send_refused_before_its_step_keeps_no_claim(
    served: Served, fake_llm: FakeOpenAIServer
) -> None:
    http = served.http()
    missing = http.post("/api/agents/nobody/messages", json={"message": "x"}, headers=keyed("r"))
    assert missing.status_code == 404
    fake_llm.enqueue(say("Now it runs."))
    ran = http.post("/api/agents/sam/messages", json={"message": "x"}, headers=keyed("r"))
    assert ran.json()["replies"] == ["Now it runs."]


def test_keys_are_per_agent_and_per_user(served: Served, fake_llm: FakeOpenAIServer) -> None:
    memgpt_lite.Agent.create("tom", "fake-model", db=served.db, owner="alice")
    fake_llm.enqueue(say("Sam here."), say("Tom here."))
    http = served.http()
    for agent in ("sam", "tom"):
        sent = http.post(
            f"/api/agents/{agent}/messages", json={"message": "hi"}, headers=keyed("k")
        )
        assert sent.status_code == 200
    assert served.user_messages("sam") == served.user_messages("tom") == ["hi"]
    assert len(fake_llm.requests) == 2
    # bob's agent, under the same key: his own send.
    fake_llm.enqueue(say("Bob's agent here."))
    bob = served.http(served.bob)
    sent = bob.post("/api/agents/bobs/messages", json={"message": "hi"}, headers=keyed("k"))
    assert sent.json()["replies"] == ["Bob's agent here."]
    assert len(fake_llm.requests) == 3


def test_a_second_send_while_the_first_runs_is_a_409_to_retry(
    served: Served, fake_llm: FakeOpenAIServer
) -> None:
    fake_llm.enqueue(reply("thinking", [call("send_message", message="Slow.")], delay=1.0))
    http = served.http()
    body = {"message": "take your time"}
    first: dict[str, httpx.Response] = {}

    def send_first() -> None:
        first["answer"] = http.post("/api/agents/sam/messages", json=body, headers=keyed("w"))

    sender = threading.Thread(target=send_first)
    sender.start()
    deadline = time.monotonic() + 30
    while not fake_llm.requests:  # the first send's step reached the model
        assert time.monotonic() < deadline, "the first send never reached the model"
        time.sleep(0.01)
    second = served.http().post("/api/agents/sam/messages", json=body, headers=keyed("w"))
    sender.join(30)
    assert second.status_code == 409
    assert second.headers["x-should-retry"] == "true"
    assert second.headers["Retry-After"] == "1"
    assert "is still running" in second.json()["detail"]
    assert first["answer"].json()["replies"] == ["Slow."]
    replay = served.http().post("/api/agents/sam/messages", json=body, headers=keyed("w"))
    assert replay.json() == first["answer"].json()
    assert served.user_messages() == ["take your time"]
