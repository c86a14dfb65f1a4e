"""Which model endpoints an agent made over HTTP may use (server/endpoints.py):
the server's own and those its operator allows. Any other URL, from our
API's `base_url`, Letta's `llm_config.model_endpoint` or an imported file,
is refused before anything is stored, and the server never connects to it:
a local listener (tests/support/listener.py) counts the connections.
Driven by httpx and letta-client against the real app on a socket."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from letta_client import Letta, PermissionDeniedError, UnprocessableEntityError
from support.listener import SECRET_ANSWER, Listener, local_listener
from support.serving import live_server, new_key

from memgpt_lite.agentfile.letta_export import export_letta
from memgpt_lite.storage.open import open_storage
from memgpt_lite.testing.script import say
from memgpt_lite.testing.server import FakeOpenAIServer

RULE = "memgpt-lite serve --allow-endpoint URL"


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "endpoints.db")


@pytest.fixture
def listener() -> Iterator[Listener]:
    with local_listener() as target:
        yield target


@pytest.fixture
def allowed() -> Iterator[FakeOpenAIServer]:
    """Another model endpoint, which the server allows."""
    with FakeOpenAIServer() as other:
        yield other


@pytest.fixture
def server(db: str, fake_llm: FakeOpenAIServer, allowed: FakeOpenAIServer) -> Iterator[str]:
    with live_server(db, allow_endpoints=[allowed.base_url]) as url:
        yield url


def http(db: str, server: str, user: str = "alice") -> httpx.Client:
    headers = {"Authorization": f"Bearer {new_key(db, user)}"}
    return httpx.Client(base_url=server, headers=headers, timeout=30)


def letta(db: str, server: str, user: str = "alice") -> Letta:
    return Letta(base_url=server, api_key=new_key(db, user), max_retries=0)


def stored_agents(db: str) -> list[str]:
    with open_storage(db) as store:
        return [state.name for state, _ in store.list_agents(owner=None)]


def refused(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    detail = response.json()["detail"]
    assert "\n" not in detail and SECRET_ANSWER not in response.text
    return detail


def test_our_api_refuses_an_endpoint_it_does_not_allow_and_never_reaches_it(
    db: str, server: str, listener: Listener
) -> None:
    with http(db, server) as client:
        for body in (
            {"base_url": listener.url},
            {"llm_options": {"base_url": listener.url}},
            # Another spelling of the same place is not on the list either.
            {"base_url": f"http://127.1:{listener.port}/v1"},
        ):
            answer = client.post("/api/agents", json={"name": "probe", "model": "m", **body})
            assert RULE in refused(answer, 403)
        for url in ("file:///etc/passwd", "gopher://127.0.0.1/"):
            answer = client.post(
                "/api/agents", json={"name": "probe", "model": "m", "base_url": url}
            )
            assert "http:// or https://" in refused(answer, 422)
        # Modify has no base URL to change, by field or by option.
        assert client.post("/api/agents", json={"name": "sam", "model": "m"}).status_code == 201
        patched = client.patch("/api/agents/sam", json={"llm_options": {"base_url": listener.url}})
        refused(patched, 422)
    assert stored_agents(db) == ["sam"]
    assert listener.accepted == 0


def test_the_servers_own_endpoint_and_the_allowed_ones_are_used(
    db: str, server: str, fake_llm: FakeOpenAIServer, allowed: FakeOpenAIServer
) -> None:
    with http(db, server) as client:
        # The same places written another way: the scheme's case, a trailing slash.
        own = fake_llm.base_url.replace("http://", "HTTP://")
        for name, url in (("mine", own), ("theirs", allowed.base_url + "/")):
            body = {"name": name, "model": "m", "base_url": url, "api_key": allowed.api_key}
            created = client.post("/api/agents", json=body)
            assert created.status_code == 201, created.text
        allowed.enqueue(say("from the allowed endpoint"))
        sent = client.post("/api/agents/theirs/messages", json={"message": "hi"})
    assert sent.json()["replies"] == ["from the allowed endpoint"]
    assert len(allowed.chat_requests) == 1


def test_the_listener_counts_what_reaches_it(db: str, fake_llm: FakeOpenAIServer) -> None:
    """The listener's count is what the other tests rely on: an endpoint
    that is allowed is reached, and its error text is the model's to tell."""
    with local_listener() as target, live_server(db, allow_endpoints=[target.url]) as server:
        with http(db, server) as client:
            body = {"name": "sam", "model": "m", "base_url": target.url}
            assert client.post("/api/agents", json=body).status_code == 201
            client.patch("/api/agents/sam", json={"llm_options": {"max_retries": 0}})
            assert client.post("/api/agents/sam/messages", json={"message": "hi"}).is_error
        assert target.accepted >= 1


def test_letta_create_refuses_a_model_endpoint_it_does_not_allow(
    db: str, server: str, listener: Listener, fake_llm: FakeOpenAIServer, allowed: FakeOpenAIServer
) -> None:
    client = letta(db, server)

    def config(url: str) -> dict[str, Any]:
        return {"model": "gpt-4o-mini", "model_endpoint_type": "openai", "model_endpoint": url}

    for url in (listener.url, f"http://localhost:{listener.port}/v1"):
        with pytest.raises(PermissionDeniedError, match="--allow-endpoint") as caught:
            client.agents.create(name="probe", llm_config=config(url), context_window_limit=8000)
        assert SECRET_ANSWER not in str(caught.value)
    with pytest.raises(UnprocessableEntityError, match="http:// or https://"):
        client.agents.create(name="probe", llm_config=config("file:///etc/passwd"))
    assert stored_agents(db) == [] and listener.accepted == 0
    # The server's own endpoint is the server's (no base URL of the agent's);
    # an allowed one is the agent's.
    own = client.agents.create(name="own", llm_config=config(fake_llm.base_url))
    other = client.agents.create(name="other", llm_config=config(allowed.base_url))
    with open_storage(db) as store:
        assert store.get_agent(own.id).llm.base_url is None
        assert store.get_agent(other.id).llm.base_url == allowed.base_url


def letta_file_at(db: str, server: str, endpoint: str) -> bytes:
    """A Letta `.af` of an agent whose model endpoint is `endpoint`."""
    letta(db, server, "maker").agents.create(name="made", model="gpt-4o-mini")
    with open_storage(db) as store:
        raw = export_letta(store, "made")
        store.delete_agent(store.get_agent("made").id)
    for agent in raw["agents"]:
        agent["llm_config"]["model_endpoint"] = endpoint
    return json.dumps(raw).encode()


def test_an_import_with_an_endpoint_not_allowed_stores_nothing(
    db: str, server: str, listener: Listener
) -> None:
    bob = letta(db, server, "bob")
    for name in (None, "renamed"):
        with pytest.raises(PermissionDeniedError, match="--allow-endpoint"):
            bob.agents.import_file(
                file=("x.af", letta_file_at(db, server, listener.url), "application/json"),
                **({} if name is None else {"name": name}),
            )
    with pytest.raises(UnprocessableEntityError, match="http:// or https://"):
        bob.agents.import_file(
            file=("x.af", letta_file_at(db, server, "file:///etc/passwd"), "application/json")
        )
    with http(db, server, "bob") as client:
        ours = client.post("/api/agents", json={"name": "sam", "model": "m"})
        exported = client.get("/api/agents/sam/export").json()
        client.delete("/api/agents/sam")
        assert ours.status_code == 201
        for url, status in ((listener.url, 403), ("file:///etc/passwd", 422)):
            exported["llm"]["base_url"] = url
            refused(client.post("/api/agents/import", json=exported), status)
    assert stored_agents(db) == [] and listener.accepted == 0


def test_config_toml_allows_endpoints_too(
    db: str, fake_llm: FakeOpenAIServer, allowed: FakeOpenAIServer, listener: Listener
) -> None:
    home = Path(os.environ["MEMGPT_LITE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f'allow_endpoints = ["{allowed.base_url}"]\n')
    with live_server(db) as server, http(db, server) as client:
        body = {"name": "sam", "model": "m", "base_url": allowed.base_url}
        assert client.post("/api/agents", json=body).status_code == 201
        refused(client.post("/api/agents", json={**body, "base_url": listener.url}), 403)
    assert listener.accepted == 0
