"""The real `memgpt-lite serve` process, as users start it: a subprocess on a
free port of 127.0.0.1 with a SQLite database, a key made by `memgpt-lite
keys create`, and the fake model, driven over the socket with httpx, raw
server-sent events, the `openai` client and Letta's `letta-client`.

One server serves the module (starting one takes about a second); the tests
that need their own (a refused command line, a stop with a step in flight)
start theirs."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.serving import cli, environment, free_port, make_key, start_serve

from memgpt_lite.testing import FakeOpenAIServer, reply, say
from memgpt_lite.testing.script import call

MODEL = "gpt-4o-mini"
# A user message with this word is answered after SLOW_SECONDS: a step still
# in flight when the client leaves or the server is told to stop.
SLOW_WORD = "slowly"
SLOW_SECONDS = 1.5


def answer(body: dict[str, Any]) -> Any:
    """The model: `send_message` repeating the last user message's text
    (a summary request, without tools, gets a plain summary)."""
    if "tools" not in body:
        return reply(content="They talked.")
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    text = str(users[-1].get("content") or "") if users else ""
    if SLOW_WORD in text:
        return reply(
            "Taking my time.",
            [call("send_message", message=f"You said: {text}")],
            delay=SLOW_SECONDS,
        )
    return say(f"You said: {text}", content="Echoing.")


@dataclass
class Served:
    """A running `memgpt-lite serve` and what its clients need."""

    process: subprocess.Popen[bytes]
    url: str
    key: str
    log: Path
    model: FakeOpenAIServer

    def client(self, key: str | None = "own") -> httpx.Client:
        """A client sending this server's key, `key` instead, or none (None)."""
        secret = self.key if key == "own" else key
        headers = {} if secret is None else {"Authorization": f"Bearer {secret}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def stop(self, sig: int = signal.SIGINT) -> int:
        """Stop the server with `sig` and wait for it; its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout=60)


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        server.responder = answer
        yield server


@pytest.fixture(scope="module")
def served(model: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("serve")
    env = environment(model, folder / "home")
    db = folder / "agents.db"
    key = make_key(env, db, "alice")
    log = folder / "serve.log"
    process, url = start_serve(env, db, log)
    server = Served(process, url, key, log, model)
    try:
        yield server
    finally:
        status = server.stop(signal.SIGINT)
        assert status in (0, 130, -signal.SIGINT), log.read_text()


def send(http: httpx.Client, agent: str, message: str) -> dict[str, Any]:
    response = http.post(f"/api/agents/{agent}/messages", json={"message": message})
    assert response.status_code == 200, response.text
    return response.json()


def create(http: httpx.Client, name: str) -> dict[str, Any]:
    response = http.post("/api/agents", json={"name": name, "model": MODEL})
    assert response.status_code == 201, response.text
    return response.json()


def sse_events(lines: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """The (event, data) of each server-sent event, read from the raw lines."""
    events = []
    kind: str | None = None
    data: list[str] = []
    for line in [*lines, ""]:
        if line == "":
            if data:
                events.append((kind or "message", json.loads("\n".join(data))))
            kind, data = None, []
        elif line.startswith("event: "):
            kind = line.removeprefix("event: ")
        elif line.startswith("data: "):
            data.append(line.removeprefix("data: "))
        else:
            raise AssertionError(f"not a server-sent event line: {line!r}")
    return events


def user_and_replies(http: httpx.Client, agent: str) -> list[tuple[str, str]]:
    """The stored history as (role, text): user messages and send_message replies."""
    response = http.get(f"/api/agents/{agent}/messages", params={"limit": 1000})
    assert response.status_code == 200, response.text
    found = []
    for message in response.json()["messages"]:
        if message["role"] == "user":
            found.append(("user", message["content"]))
        for tool_call in message.get("tool_calls") or []:
            if tool_call["name"] == "send_message":
                found.append(("reply", json.loads(tool_call["arguments"])["message"]))
    return found


# Keys and health


def test_health_answers_without_a_key(served: Served) -> None:
    with served.client(key=None) as http:
        response = http.get("/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


@pytest.mark.parametrize("key", [None, "not-a-key"])
def test_the_api_without_a_valid_key_is_401(served: Served, key: str | None) -> None:
    with served.client(key=key) as http:
        listed = http.get("/api/agents")
        created = http.post("/api/agents", json={"name": "intruder", "model": MODEL})
    for response in (listed, created):
        assert response.status_code == 401, response.text
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json()["detail"]
    with served.client() as http:
        assert "intruder" not in [a["name"] for a in http.get("/api/agents").json()]


# Sending


def test_create_an_agent_and_send(served: Served) -> None:
    with served.client() as http:
        created = create(http, "sam")
        assert created["name"] == "sam"
        result = send(http, "sam", "Hello <json-1>")
        assert result["replies"] == ["You said: Hello <json-1>"]
        assert result["llm_seconds"] > 0
        assert [a["name"] for a in http.get("/api/agents").json()] == ["sam"]
        assert user_and_replies(http, "sam")[-2:] == [
            ("user", "Hello <json-1>"),
            ("reply", "You said: Hello <json-1>"),
        ]


def test_a_streamed_send_is_raw_server_sent_events_ending_with_step_finished(
    served: Served,
) -> None:
    with served.client() as http:
        create(http, "streamer")
        body = {"message": "Stream to me <sse-1>", "stream": True}
        with http.stream("POST", "/api/agents/streamer/messages", json=body) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            lines = list(response.iter_lines())
    events = sse_events(lines)
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "step_started"
    assert kinds[-1] == "step_finished"
    assert "request_sent" in kinds and "reply_delivered" in kinds
    assert all(data["type"] == kind for kind, data in events)  # `event:` names its data
    assert len({data["step_id"] for _, data in events}) == 1
    delivered = [data["text"] for kind, data in events if kind == "reply_delivered"]
    assert delivered == ["You said: Stream to me <sse-1>"]
    assert events[-1][1]["result"]["replies"] == delivered


def test_the_openai_client_talks_to_an_agent(served: Served) -> None:
    import openai

    with served.client() as http:
        create(http, "openai-sam")
    client = openai.OpenAI(base_url=f"{served.url}/v1", api_key=served.key, max_retries=0)
    completion = client.chat.completions.create(
        model="openai-sam", messages=[{"role": "user", "content": "Hi there <oai-1>"}]
    )
    assert completion.choices[0].message.content == "You said: Hi there <oai-1>"
    chunks = client.chat.completions.create(
        model="openai-sam",
        messages=[{"role": "user", "content": "Stream it <oai-2>"}],
        stream=True,
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "You said: Stream it <oai-2>"
    stranger = openai.OpenAI(base_url=f"{served.url}/v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        stranger.chat.completions.create(
            model="openai-sam", messages=[{"role": "user", "content": "Hi"}]
        )


def test_letta_client_talks_to_an_agent(served: Served) -> None:
    from letta_client import Letta, NotFoundError

    client = Letta(base_url=served.url, api_key=served.key, max_retries=0)
    agent = client.agents.create(
        name="letta-sam",
        model="openai/gpt-4o-mini",
        memory_blocks=[{"label": "human", "value": "Name: Alice", "limit": 200}],
    )
    response = client.agents.messages.create(
        agent.id, messages=[{"role": "user", "content": "Hi from Letta <letta-1>"}]
    )
    said = [m.content for m in response.messages if m.message_type == "assistant_message"]
    assert said == ["You said: Hi from Letta <letta-1>"]
    streamed = client.agents.messages.create(
        agent.id, messages=[{"role": "user", "content": "Stream <letta-2>"}], streaming=True
    )
    kinds = [getattr(m, "message_type", None) for m in streamed]
    assert "assistant_message" in kinds and kinds[-1] == "usage_statistics"
    block = client.agents.blocks.retrieve("human", agent_id=agent.id)
    assert block.value == "Name: Alice"
    client.agents.delete(agent.id)
    with pytest.raises(NotFoundError):
        client.agents.retrieve(agent.id)


def test_a_client_that_leaves_mid_stream_leaves_the_agent_consistent(served: Served) -> None:
    with served.client() as http:
        create(http, "leaver")
        body = {"message": f"Answer me {SLOW_WORD} <left-1>", "stream": True}
        with http.stream("POST", "/api/agents/leaver/messages", json=body) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                if line == "event: request_sent":
                    break  # the model has the request and takes its time: leave now
        left_at = time.monotonic()
        result = send(http, "leaver", "And now <left-2>")
        # The second send waited for the first step, which finished and was stored.
        assert time.monotonic() - left_at > SLOW_SECONDS / 3
        assert result["replies"] == ["You said: And now <left-2>"]
        assert user_and_replies(http, "leaver") == [
            ("user", f"Answer me {SLOW_WORD} <left-1>"),
            ("reply", f"You said: Answer me {SLOW_WORD} <left-1>"),
            ("user", "And now <left-2>"),
            ("reply", "You said: And now <left-2>"),
        ]


# Who may run code on the server


def test_allow_user_code_reaches_the_workers(
    served: Served, model: FakeOpenAIServer, tmp_path: Path
) -> None:
    tool = {"source_code": 'def shout(text: str) -> str:\n    """Louder."""\n    return text\n'}
    with served.client() as http:  # a key that is not an admin's
        refused = http.post("/api/tools", json=tool)
    assert refused.status_code == 403 and "--allow-user-code" in refused.json()["detail"]
    env = environment(model, tmp_path / "home")
    db = tmp_path / "agents.db"
    key = make_key(env, db, "alice")
    process, url = start_serve(env, db, tmp_path / "serve.log", "--allow-user-code")
    try:
        headers = {"Authorization": f"Bearer {key}"}
        created = httpx.post(f"{url}/api/tools", json=tool, headers=headers, timeout=60)
        assert created.status_code == 201, created.text
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(60)


# The command line refuses what cannot work


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--no-auth", "--host", "0.0.0.0"], "--no-auth"),
        (["--workers", "2"], "PostgreSQL"),
    ],
)
def test_serve_refuses_in_one_line(
    model: FakeOpenAIServer, tmp_path: Path, args: list[str], says: str
) -> None:
    env = environment(model, tmp_path / "home")
    db = tmp_path / "agents.db"
    done = cli(env, "serve", "--port", str(free_port()), "--db", str(db), *args, timeout=30)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert says in lines[0]
    assert done.stdout == ""


# Stopping


def test_sigterm_lets_the_step_in_flight_finish_and_be_stored(
    model: FakeOpenAIServer, tmp_path: Path
) -> None:
    env = environment(model, tmp_path / "home")
    db = tmp_path / "agents.db"
    key = make_key(env, db, "bob")
    log = tmp_path / "serve.log"
    process, url = start_serve(env, db, log)
    server = Served(process, url, key, log, model)
    outcome: dict[str, Any] = {}

    def slow_send() -> None:
        with server.client() as http:
            outcome["response"] = http.post(
                "/api/agents/late/messages", json={"message": f"Reply {SLOW_WORD} <stop-1>"}
            )

    with server.client() as http:
        create(http, "late")
    requests_before = len(model.chat_requests)
    sender = threading.Thread(target=slow_send)
    sender.start()
    deadline = time.monotonic() + 10
    while len(model.chat_requests) == requests_before:  # the step is at the model
        assert time.monotonic() < deadline, "the send never reached the model"
        time.sleep(0.01)
    status = server.stop(signal.SIGTERM)
    sender.join(30)
    assert status in (0, -signal.SIGTERM), log.read_text()
    assert outcome["response"].status_code == 200
    assert outcome["response"].json()["replies"] == [f"You said: Reply {SLOW_WORD} <stop-1>"]
    from memgpt_lite.storage.open import open_storage

    with open_storage(str(db)) as store:
        stored = store.messages_from(store.get_agent("late").id, 0)
    assert [m.content for m in stored if m.role == "user"] == [f"Reply {SLOW_WORD} <stop-1>"]
    assert any(c.sent_message() for m in stored for c in m.tool_calls)


def test_workers_on_postgresql_share_the_agents_and_keep_each_in_order(
    model: FakeOpenAIServer, pg_url: str, tmp_path: Path
) -> None:
    env = environment(model, tmp_path / "home")
    key = make_key(env, pg_url, "alice")
    process, url = start_serve(env, pg_url, tmp_path / "serve.log", "--workers", "2")
    server = Served(process, url, key, tmp_path / "serve.log", model)
    replies: dict[str, list[str]] = {}
    try:
        with server.client() as http:
            for name in ("pg-a", "pg-b"):
                create(http, name)

        def client(who: int) -> None:
            with server.client() as http:  # a connection each: the workers share them out
                for i in range(3):
                    text = f"<w{who}-{i}>"
                    replies[text] = send(http, f"pg-{'ab'[who % 2]}", text)["replies"]

        threads = [threading.Thread(target=client, args=(who,)) for who in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        with server.client() as http:
            histories = {name: user_and_replies(http, name) for name in ("pg-a", "pg-b")}
    finally:
        assert server.stop(signal.SIGINT) in (0, 130, -signal.SIGINT), server.log.read_text()
    assert replies == {text: [f"You said: {text}"] for text in replies} and len(replies) == 12
    for history in histories.values():
        assert len(history) == 12  # six exchanges, none lost, none doubled
        for user, answered in zip(history[::2], history[1::2], strict=True):
            assert user[0] == "user" and answered == ("reply", f"You said: {user[1]}")
