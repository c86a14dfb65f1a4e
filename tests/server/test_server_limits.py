"""The server's limits: a message's size on every send route (ours, Letta's,
OpenAI's; streamed or not) and a rate per key, in the app and in the real
`memgpt-lite serve` process with its flags and config.toml."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import letta_client
import openai
import pytest
from fastapi.testclient import TestClient
from support.serving import cli, environment, live_server, make_key, new_key, start_serve

import memgpt_lite
from memgpt_lite.errors import ConfigError
from memgpt_lite.server.app import create_app
from memgpt_lite.server.limits import RateLimit, ServerLimits
from memgpt_lite.testing import FakeOpenAIServer, say


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "server.db")


@pytest.fixture
def agent_id(db: str, fake_llm: FakeOpenAIServer) -> str:
    return memgpt_lite.Agent.create("sam", "fake-model", db=db, owner="alice").state.id


def history(client: httpx.Client | TestClient) -> list[dict[str, str]]:
    return client.get("/api/agents/sam/messages").json()["messages"]


def test_a_message_over_the_limit_is_413_on_every_send_route_and_nothing_is_stored(
    db: str, agent_id: str, fake_llm: FakeOpenAIServer
) -> None:
    key = new_key(db, "alice")
    text = "é" * 501  # 1002 bytes in UTF-8: the limit counts bytes, not characters
    with live_server(db, limits=ServerLimits(max_message_bytes=1000)) as url:
        http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"})
        for stream in (False, True):
            answer = http.post("/api/agents/sam/messages", json={"message": text, "stream": stream})
            assert answer.status_code == 413
            assert answer.json()["detail"] == (
                "the message is 1002 bytes, over the server's limit of 1000 "
                "(serve --max-message-bytes)"
            )
            assert answer.headers["x-should-retry"] == "false"
        letta = letta_client.Letta(base_url=url, api_key=key)
        with pytest.raises(letta_client.APIStatusError) as caught:
            letta.agents.messages.create(agent_id, messages=[{"role": "user", "content": text}])
        assert caught.value.status_code == 413
        with pytest.raises(letta_client.APIStatusError) as caught:
            letta.agents.messages.create(
                agent_id, messages=[{"role": "user", "content": text}], streaming=True
            )
        assert caught.value.status_code == 413
        chat = openai.OpenAI(base_url=f"{url}/v1", api_key=key)
        for stream in (False, True):
            with pytest.raises(openai.APIStatusError) as refused:
                chat.chat.completions.create(
                    model="sam", messages=[{"role": "user", "content": text}], stream=stream
                )
            assert refused.value.status_code == 413
            assert "over the server's limit of 1000" in refused.value.message
        assert history(http) == []
        assert fake_llm.requests == []
        # At the limit, it is sent.
        fake_llm.enqueue(say("Got it."))
        ok = http.post("/api/agents/sam/messages", json={"message": "é" * 500})
        assert ok.status_code == 200
        assert [m["content"] for m in history(http) if m["role"] == "user"] == ["é" * 500]


def test_the_default_message_limit_is_one_mebibyte(db: str, agent_id: str) -> None:
    headers = {"Authorization": f"Bearer {new_key(db, 'alice')}"}
    with TestClient(create_app(db), headers=headers) as client:
        answer = client.post("/api/agents/sam/messages", json={"message": "x" * (1024 * 1024 + 1)})
        assert answer.status_code == 413
        assert "over the server's limit of 1048576" in answer.json()["detail"]
        assert history(client) == []


def test_the_rate_limit_is_per_key_with_retry_after(db: str, agent_id: str) -> None:
    alice, bob = new_key(db, "alice"), new_key(db, "bob")
    limits = ServerLimits(rate_limit=RateLimit.parse("2/min", "test"))
    with TestClient(create_app(db, limits=limits)) as client:
        as_alice = {"Authorization": f"Bearer {alice}"}
        assert [client.get("/api/agents", headers=as_alice).status_code for _ in range(2)] == [
            200,
            200,
        ]
        refused = client.get("/api/agents", headers=as_alice)
        assert refused.status_code == 429
        assert refused.json()["detail"].startswith(
            "the rate limit of 2/min requests per key is reached: retry after "
        )
        assert 1 <= int(refused.headers["Retry-After"]) <= 30
        assert refused.headers["x-should-retry"] == "true"
        assert client.get("/api/agents", headers={"Authorization": f"Bearer {bob}"}).is_success
        assert [client.get("/health").status_code for _ in range(5)] == [200] * 5


def test_the_openai_client_sees_a_429(db: str, agent_id: str) -> None:
    key = new_key(db, "alice")
    limits = ServerLimits(rate_limit=RateLimit.parse("1/min", "test"))
    with live_server(db, limits=limits) as url:
        chat = openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0)
        assert [m.id for m in chat.models.list()] == ["sam"]
        with pytest.raises(openai.RateLimitError):
            chat.models.list()


@pytest.mark.parametrize(
    ("text", "expected"),
    [("10/s", (10, 1.0)), ("600/min", (600, 60.0)), (" 3 / Minute ", (3, 60.0))],
)
def test_rates_are_read_per_second_or_minute(text: str, expected: tuple[int, float]) -> None:
    rate = RateLimit.parse(text, "--rate-limit")
    assert (rate.requests, rate.period_seconds) == expected


@pytest.mark.parametrize("text", ["10", "0/s", "10/h", "ten/s", "-1/s"])
def test_a_bad_rate_names_where_it_came_from(text: str) -> None:
    with pytest.raises(ConfigError, match=r"^--rate-limit: .* is not a rate: give requests"):
        RateLimit.parse(text, "--rate-limit")


@pytest.fixture
def serve_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    with FakeOpenAIServer() as model:
        yield environment(model, tmp_path / "home")


def test_serve_takes_its_limits_from_flags_over_config_toml(
    serve_env: dict[str, str], tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(
        '[serve]\nmax_message_bytes = 10\nrate_limit = "3/min"\nmax_body_bytes = 5000\n'
    )
    db = tmp_path / "serve.db"
    assert cli(serve_env, "--db", str(db), "create", "sam", "--model", "m").returncode == 0
    key = make_key(serve_env, db, "local")
    process, url = start_serve(serve_env, db, tmp_path / "log", "--max-message-bytes", "20")
    try:
        http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"})
        too_long = http.post("/api/agents/sam/messages", json={"message": "x" * 21})
        assert too_long.status_code == 413  # the flag's 20, not the file's 10
        assert "over the server's limit of 20" in too_long.json()["detail"]
        too_big = http.post("/api/agents/sam/messages", content=b"x" * 6000)
        assert too_big.status_code == 413  # the file's max_body_bytes
        # The file's 3/min: the third request is answered, the fourth refused.
        assert [http.get("/api/agents").status_code for _ in range(2)] == [200, 429]
    finally:
        process.terminate()
        process.wait(60)


def test_serve_refuses_a_bad_rate_in_one_line(serve_env: dict[str, str], tmp_path: Path) -> None:
    done = cli(serve_env, "--db", str(tmp_path / "x.db"), "serve", "--rate-limit", "lots")
    assert done.returncode != 0
    assert "--rate-limit: 'lots' is not a rate" in done.stderr
    assert "Traceback" not in done.stderr
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text("[serve]\nrate_limits = 3\n")
    done = cli(serve_env, "--db", str(tmp_path / "x.db"), "serve")
    assert done.returncode != 0
    assert "unknown key 'serve.rate_limits' (the keys are: max_body_bytes" in done.stderr
    assert "Traceback" not in done.stderr
