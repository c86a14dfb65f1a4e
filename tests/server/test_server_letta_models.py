"""What Letta's clients ask first: the models (`GET /v1/models/`, Letta's
shape; `/v1/models` stays OpenAI's), Letta's hosted model names, the base
tools and the health route without its slash, and a display name such as
Letta Code's (which a user's agents may share). Driven by letta-client,
openai and httpx against a real server on a socket, with the fake OpenAI
server as the model endpoint."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from letta_client import Letta, UnprocessableEntityError
from support.serving import live_server, new_key

from memgpt_lite.server.endpoints import AllowedEndpoints
from memgpt_lite.server.model_list import ModelList
from memgpt_lite.testing.script import error, html
from memgpt_lite.testing.server import FakeOpenAIServer

DEFAULT = "gpt-4o-mini"


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "letta.db")


@pytest.fixture
def listing(fake_llm: FakeOpenAIServer) -> FakeOpenAIServer:
    """The fake endpoint listing a model of our table, one that reports its
    window (as OpenRouter and LM Studio do) and an embedding model."""
    fake_llm.models = [
        {"id": "gpt-4.1-mini", "object": "model", "created": 0, "owned_by": "x"},
        {"id": "local-7b", "object": "model", "created": 0, "context_length": 4096},
        {"id": "text-embedding-3-small", "object": "model", "created": 0},
    ]
    return fake_llm


@pytest.fixture
def server(db: str, listing: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("MEMGPT_LITE_MODEL", DEFAULT)  # the server's default model
    with live_server(db) as url:
        yield url


def models_asked(fake: FakeOpenAIServer) -> int:
    return sum(1 for r in fake.requests if r.path == "/v1/models")


def test_models_are_listed_in_lettas_shape(client: Letta, listing: FakeOpenAIServer) -> None:
    models = client.models.list()
    assert [m.handle for m in models] == [
        "openai/gpt-4o-mini",  # the server's default first, though the endpoint omits it
        "openai/gpt-4.1-mini",
        "openai/local-7b",
    ]
    default, known, local = models
    assert (default.name, default.model, default.context_window) == (DEFAULT, DEFAULT, 128_000)
    assert known.max_context_window == 1_047_576  # our table of well-known models
    assert local.context_window == local.max_context_window == 4096  # as the endpoint says
    for model in models:
        assert (model.provider_type, model.model_endpoint_type) == ("openai", "openai")
        assert model.provider_name == "openai" and model.provider_category == "base"
        assert model.model_endpoint == listing.base_url
    [embedding] = client.models.embeddings.list()
    assert (embedding.handle, embedding.embedding_model) == (
        "openai/text-embedding-3-small",
        "text-embedding-3-small",
    )
    assert embedding.embedding_endpoint == listing.base_url
    assert [m.handle for m in client.models.list(provider_name="openai")] == [
        m.handle for m in models
    ]
    assert client.models.list(provider_name="anthropic") == []
    assert models_asked(listing) == 1  # the endpoint's answer is kept
    [asked] = [r for r in listing.requests if r.path == "/v1/models"]
    assert asked.headers["authorization"] == f"Bearer {listing.api_key}"  # the server's key


def test_models_need_a_key(server: str) -> None:
    assert httpx.get(f"{server}/v1/models/").status_code == 401


def test_without_the_slash_the_list_stays_openais(
    db: str, client: Letta, server: str, listing: FakeOpenAIServer
) -> None:
    agent = client.agents.create(name="sam", model="openai/gpt-4o-mini")
    openai_client = openai.OpenAI(base_url=f"{server}/v1", api_key=client.api_key, max_retries=0)
    assert [m.id for m in openai_client.models.list()] == [agent.name]  # the user's agents
    assert models_asked(listing) == 0


@pytest.mark.parametrize("failure", [html(), error(500, "down")])
def test_an_endpoint_that_does_not_answer_lists_the_default_model(
    client: Letta, listing: FakeOpenAIServer, failure: object
) -> None:
    listing.enqueue_models(failure)  # type: ignore[arg-type]
    assert [m.handle for m in client.models.list()] == ["openai/gpt-4o-mini"]
    assert client.models.embeddings.list() == []  # the failure is kept too: not asked again
    assert models_asked(listing) == 1


def test_allowed_endpoints_list_their_models_under_their_own_provider(
    db: str, fake_llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMGPT_LITE_MODEL", DEFAULT)
    with FakeOpenAIServer(api_key="not-needed") as other, FakeOpenAIServer() as silent:
        other.models = [{"id": "llama3.2", "object": "model", "created": 0}]
        silent.enqueue_models(html())
        allowed = [other.base_url, silent.base_url]
        with live_server(db, allow_endpoints=allowed) as url:
            client = Letta(base_url=url, api_key=new_key(db, "alice"), max_retries=0)
            models = client.models.list()
            provider = other.base_url.split("/")[2]  # 127.0.0.1:PORT
            assert [m.handle for m in models] == [
                "openai/gpt-4o-mini",
                "openai/fake-model",
                f"{provider}/llama3.2",  # the silent endpoint lists nothing
            ]
            assert models[2].model_endpoint == other.base_url
            assert models[2].provider_name == provider
            assert client.models.list(provider_name=provider)[0].name == "llama3.2"
            agent = client.agents.create(name="llama", model=f"{provider}/llama3.2")
            assert agent.llm_config.model == "llama3.2"
            assert agent.llm_config.model_endpoint == other.base_url
            back = client.agents.update(agent.id, model="letta/auto")
            assert (back.llm_config.model, back.llm_config.model_endpoint) == (DEFAULT, None)
        # The server's key went to its own endpoint only.
        [asked] = [r for r in other.requests if r.path == "/v1/models"]
        assert asked.headers["authorization"] == "Bearer not-needed"
        assert other.rejections == []


def test_hosted_names_are_the_servers_default_model(client: Letta) -> None:
    free = client.agents.create(model="letta/letta-free")
    assert free.llm_config.model == DEFAULT  # the view says which model it is
    assert free.llm_config.model_endpoint is None  # at the server's own endpoint
    auto = client.agents.create(llm_config={"model": "letta/auto"})
    assert auto.llm_config.model == DEFAULT
    other = client.agents.create(model="openai/gpt-4.1-mini")
    changed = client.agents.update(other.id, model="letta/letta-free")
    assert changed.llm_config.model == DEFAULT
    changed = client.agents.update(other.id, llm_config={"model": "letta/auto"})
    assert changed.llm_config.model == DEFAULT
    with pytest.raises(UnprocessableEntityError, match="hosted"):
        client.agents.create(model="letta/letta-premium")  # no such model here


def test_without_a_default_model_hosted_names_say_how_to_set_one(
    db: str, fake_llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMGPT_LITE_MODEL", raising=False)
    with live_server(db) as url:
        client = Letta(base_url=url, api_key=new_key(db, "alice"), max_retries=0)
        with pytest.raises(UnprocessableEntityError, match="MEMGPT_LITE_MODEL"):
            client.agents.create(model="letta/letta-free")
        agent = client.agents.create(model="openai/gpt-4o-mini")
        with pytest.raises(UnprocessableEntityError, match="MEMGPT_LITE_MODEL"):
            client.agents.update(agent.id, llm_config={"model": "letta/auto"})
        assert client.agents.retrieve(agent.id).llm_config.model == "gpt-4o-mini"
        assert [m.handle for m in client.models.list()] == ["openai/fake-model"]


def test_add_base_tools_answers_the_built_in_tools(client: Letta, server: str) -> None:
    headers = {"Authorization": f"Bearer {client.api_key}"}
    answer = httpx.post(f"{server}/v1/tools/add-base-tools", headers=headers)
    assert answer.status_code == 200
    added = answer.json()
    listed = [t for t in client.tools.list() if t.tool_type.startswith("letta_")]
    assert sorted(t["id"] for t in added) == sorted(t.id for t in listed)
    send = next(t for t in added if t["name"] == "send_message")
    assert (send["id"], send["tool_type"]) == ("tool-send_message", "letta_core")
    assert send["json_schema"]["name"] == "send_message"
    assert httpx.post(f"{server}/v1/tools/add-base-tools").status_code == 401


def test_health_answers_with_and_without_the_slash(client: Letta, server: str) -> None:
    with_slash = httpx.get(f"{server}/v1/health/")
    without = httpx.get(f"{server}/v1/health")
    assert with_slash.status_code == without.status_code == 200
    assert without.json() == with_slash.json() == client.health().model_dump()


def test_letta_codes_agent_name(client: Letta, server: str) -> None:
    """The name Letta Code gives its agents, through letta-client and as its
    own create request sends it (Letta's fields we do not use included)."""
    agent = client.agents.create(name="Letta Code", model="letta/auto")
    assert client.agents.retrieve(agent.id).name == "Letta Code"
    headers = {"Authorization": f"Bearer {client.api_key}"}
    body = {
        "agent_type": "letta_v1_agent",
        "name": "Letta Code Helper",
        "description": "A coding agent.",
        "model": "openai/gpt-4o-mini",
        "system": "You are a coding agent.",
        "memory_blocks": [{"label": "persona", "value": "I code.", "description": "Who I am."}],
        "tags": ["origin:letta-code"],
        "tools": [],
        "include_base_tools": False,
        "include_base_tool_rules": False,
        "initial_message_sequence": [],
        "parallel_tool_calls": True,
        "compaction_settings": {"model": "openai/gpt-4o-mini"},
    }
    made = httpx.post(f"{server}/v1/agents/", json=body, headers=headers)
    assert made.status_code == 200, made.text
    assert made.json()["name"] == "Letta Code Helper"
    assert [a.id for a in client.agents.list(name="Letta Code")] == [agent.id]
    # A user's second `letta --new-agent`: the display name repeats, the CLI name does not.
    second = client.agents.create(name="Letta Code", model="letta/auto")  # no longer a 409
    assert second.id != agent.id and second.name == "Letta Code"
    assert {a.id for a in client.agents.list(name="Letta Code")} == {agent.id, second.id}
    cli_names = [
        httpx.get(f"{server}/api/agents/{agent_id}", headers=headers).json()["name"]
        for agent_id in (agent.id, second.id)
    ]
    assert cli_names == ["letta-code", "letta-code-2"]


def test_endpoints_on_one_host_and_port_get_providers_of_their_own() -> None:
    endpoints = AllowedEndpoints.of(
        "http://127.0.0.1:8000/v1",
        ["http://localhost:11434/v1", "http://localhost:11434/other/v1", "http://10.0.0.5/v1"],
    )
    models = ModelList(endpoints, default_model=None, own_key=None)
    assert models.providers() == {
        "openai": "http://127.0.0.1:8000/v1",
        "localhost:11434": "http://localhost:11434/v1",
        "localhost:11434-2": "http://localhost:11434/other/v1",
        "10.0.0.5:80": "http://10.0.0.5/v1",
    }
    assert models.endpoint_of("localhost:11434-2/qwen3:8b") == (
        "qwen3:8b",
        "http://localhost:11434/other/v1",
    )
    assert models.endpoint_of("openai/gpt-4o-mini") is None  # the server's own: as before
    assert models.endpoint_of("elsewhere:1/m") is None
