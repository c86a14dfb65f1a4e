"""`x-should-retry: false` on the failures a retry cannot fix, driven by the
real openai and letta-client SDKs with their default retries (two): a send
to a failing endpoint is tried once and stored once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import letta_client
import openai
import pytest
from support.serving import live_server, new_key

import memgpt_lite
from memgpt_lite.testing import FakeOpenAIServer
from memgpt_lite.testing.script import error


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "server.db")


@pytest.fixture
def served(db: str, fake_llm: FakeOpenAIServer) -> Iterator[tuple[str, str, str]]:
    """The server's URL, alice's key and her agent's id."""
    agent = memgpt_lite.Agent.create("sam", "fake-model", db=db, owner="alice")
    with live_server(db) as url:
        yield url, new_key(db, "alice"), agent.state.id


def stored_user_messages(url: str, key: str) -> list[str]:
    page = httpx.get(
        f"{url}/api/agents/sam/messages", headers={"Authorization": f"Bearer {key}"}
    ).json()
    return [m["content"] for m in page["messages"] if m["role"] == "user"]


def test_a_failing_endpoint_is_tried_once_by_the_openai_client(
    served: tuple[str, str, str], fake_llm: FakeOpenAIServer
) -> None:
    url, key, _ = served
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=key)  # the default: 2 retries
    for stream in (False, True):
        fake_llm.enqueue(*[error(400, "the model is on strike")] * 3)
        before = len(fake_llm.requests)
        with pytest.raises(openai.APIStatusError) as caught:
            client.chat.completions.create(
                model="sam", messages=[{"role": "user", "content": f"hi {stream}"}], stream=stream
            )
        assert caught.value.status_code == 502
        assert caught.value.response.headers["x-should-retry"] == "false"
        assert len(fake_llm.requests) == before + 1
    assert stored_user_messages(url, key) == ["hi False", "hi True"]


def test_a_failing_endpoint_is_tried_once_by_letta_client(
    served: tuple[str, str, str], fake_llm: FakeOpenAIServer
) -> None:
    url, key, agent_id = served
    client = letta_client.Letta(base_url=url, api_key=key)  # the default: 2 retries
    fake_llm.enqueue(*[error(400, "the model is on strike")] * 3)
    with pytest.raises(letta_client.APIStatusError) as caught:
        client.agents.messages.create(agent_id, messages=[{"role": "user", "content": "hello"}])
    assert caught.value.status_code == 502
    assert len(fake_llm.requests) == 1
    assert stored_user_messages(url, key) == ["hello"]


def test_refusals_say_no_retry_and_a_success_says_nothing(
    served: tuple[str, str, str],
) -> None:
    url, key, agent_id = served
    client = letta_client.Letta(base_url=url, api_key=key)
    with pytest.raises(letta_client.APIStatusError) as caught:  # a Letta route we do not build
        client.agents.files.close_all(agent_id)
    assert caught.value.status_code == 501
    assert caught.value.response.headers["x-should-retry"] == "false"
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as http:
        for method, path, status in [
            ("GET", "/api/agents/nobody", 404),
            ("POST", "/api/agents/sam/messages", 422),  # no body
            ("GET", "/v1/no-such-route", 404),
        ]:
            answer = http.request(method, path)
            assert (answer.status_code, answer.headers["x-should-retry"]) == (status, "false")
        assert "x-should-retry" not in http.get("/health").headers
    unknown = httpx.get(f"{url}/api/agents", headers={"Authorization": "Bearer nope"})
    assert (unknown.status_code, unknown.headers["x-should-retry"]) == (401, "false")
