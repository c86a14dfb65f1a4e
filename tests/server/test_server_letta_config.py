"""Letta's modify_agent of `llm_config` and `embedding_config`, the
`embedding_config` every view shows, and `include=agent.pending_approval`,
driven by letta-client 1.x against a real server, the fake OpenAI server as
the model."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from letta_client import Letta, PermissionDeniedError, UnprocessableEntityError
from support.serving import live_server, new_key

from memgpt_lite.settings.endpoint import PLACEHOLDER_KEY
from memgpt_lite.testing.script import call, reply, say
from memgpt_lite.testing.server import FakeOpenAIServer


@pytest.fixture
def alice_key(db: str) -> str:
    return new_key(db, "alice")


@pytest.fixture
def client(server: str, alice_key: str) -> Letta:
    return Letta(base_url=server, api_key=alice_key, max_retries=0)


def ours(server: str, key: str, agent_id: str) -> dict[str, Any]:
    """The agent as our own API shows it (its stored settings)."""
    answer = httpx.get(
        f"{server}/api/agents/{agent_id}", headers={"Authorization": f"Bearer {key}"}
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def hello(client: Letta, agent_id: str, fake: FakeOpenAIServer) -> None:
    fake.enqueue(say("Hello."))
    client.agents.messages.create(agent_id, messages=[{"role": "user", "content": "hi"}])


def test_llm_config_sent_back_unchanged_changes_nothing(
    client: Letta, server: str, alice_key: str
) -> None:
    agent = client.agents.create(model="openai/gpt-4o-mini")
    before = ours(server, alice_key, agent.id)
    shown = agent.llm_config.model_dump(by_alias=True, exclude_none=True)
    updated = client.agents.update(agent.id, llm_config=shown)
    assert updated.llm_config == agent.llm_config
    after = ours(server, alice_key, agent.id)
    # The window shown (the model's) is not pinned as the agent's own.
    assert after["settings"] == before["settings"] and after["llm"] == before["llm"]


def test_llm_config_changes_model_window_and_temperature(
    client: Letta, server: str, alice_key: str, fake_llm: FakeOpenAIServer
) -> None:
    agent = client.agents.create(model="openai/gpt-4o-mini")
    hello(client, agent.id, fake_llm)  # an Agent the server keeps from step to step
    config = agent.llm_config.model_dump(by_alias=True, exclude_none=True)
    config.update(model="gpt-4.1-mini", context_window=32000, temperature=0.25)
    updated = client.agents.update(agent.id, llm_config=config)
    assert (updated.llm_config.model, updated.llm_config.context_window) == ("gpt-4.1-mini", 32000)
    assert updated.llm_config.temperature == 0.25
    assert ours(server, alice_key, agent.id)["settings"]["context_window"] == 32000
    hello(client, agent.id, fake_llm)
    sent = fake_llm.chat_requests[-1]
    assert (sent["model"], sent["temperature"]) == ("gpt-4.1-mini", 0.25)
    # The temperature alone: the Agent kept since the last step is rebuilt for it.
    client.agents.update(agent.id, llm_config={**config, "temperature": 0.75})
    hello(client, agent.id, fake_llm)
    assert fake_llm.chat_requests[-1]["temperature"] == 0.75


def test_llm_config_moves_the_agent_to_another_endpoint(
    db: str, alice_key: str, fake_llm: FakeOpenAIServer
) -> None:
    with (
        FakeOpenAIServer(api_key=PLACEHOLDER_KEY) as other,
        FakeOpenAIServer(api_key=PLACEHOLDER_KEY) as not_allowed,
        live_server(db, allow_endpoints=[other.base_url]) as server,
    ):
        client = Letta(base_url=server, api_key=alice_key, max_retries=0)
        agent = client.agents.create(model="openai/gpt-4o-mini")
        hello(client, agent.id, fake_llm)
        config = agent.llm_config.model_dump(by_alias=True, exclude_none=True)
        # An endpoint the server does not allow: a 403 naming the rule, nothing changed.
        with pytest.raises(PermissionDeniedError, match="allow-endpoint"):
            client.agents.update(
                agent.id, llm_config={**config, "model_endpoint": not_allowed.base_url}
            )
        assert client.agents.retrieve(agent.id).llm_config.model_endpoint is None
        moved = client.agents.update(
            agent.id, llm_config={**config, "model_endpoint": other.base_url}
        )
        assert moved.llm_config.model_endpoint == other.base_url
        asked_before = len(fake_llm.chat_requests)
        hello(client, agent.id, other)
        assert len(other.chat_requests) == 1 and len(fake_llm.chat_requests) == asked_before
        # null: back to the server's own endpoint.
        back = client.agents.update(agent.id, llm_config={**config, "model_endpoint": None})
        assert back.llm_config.model_endpoint is None
        hello(client, agent.id, fake_llm)
        assert len(other.chat_requests) == 1 and not_allowed.chat_requests == []


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("max_tokens", 200, "llm_config.max_tokens: memgpt-lite does not honour it"),
        ("model_endpoint_type", "anthropic", "llm_config.model_endpoint_type"),
        ("reasoning_effort", "high", "llm_config.reasoning_effort"),
        ("model_endpoint", "localhost:9/v1", "has no http:// or https://"),
    ],
)
def test_llm_config_it_cannot_honour_is_a_422_and_changes_nothing(
    client: Letta, field: str, value: Any, named: str
) -> None:
    agent = client.agents.create(name="sam", model="openai/gpt-4o-mini")
    config = {
        **agent.llm_config.model_dump(by_alias=True, exclude_none=True),
        field: value,
        "context_window": 999,
    }
    with pytest.raises(UnprocessableEntityError, match=named):
        client.agents.update(agent.id, name="max", llm_config=config)
    kept = client.agents.retrieve(agent.id)
    assert (kept.name, kept.llm_config) == ("sam", agent.llm_config)


def test_embedding_config_is_never_null_and_can_be_changed(
    client: Letta, server: str, alice_key: str
) -> None:
    plain = client.agents.create(model="openai/gpt-4o-mini")
    assert plain.embedding_config is not None
    assert (plain.embedding_config.embedding_model, plain.embedding_config.embedding_dim) == (
        "none",
        0,
    )
    # Sent back as shown: nothing changes.
    same = client.agents.update(
        plain.id, embedding_config=plain.embedding_config.model_dump(by_alias=True)
    )
    assert same.embedding is None

    local = client.agents.update(
        plain.id,
        embedding_config={
            "embedding_endpoint_type": "hugging-face",
            "embedding_model": "all-MiniLM-L6-v2",
            "embedding_dim": 384,
        },
    )
    assert local.embedding == "local" and local.embedding_config.embedding_dim == 384
    assert ours(server, alice_key, plain.id)["settings"]["embedder"] == "local"

    at_endpoint = client.agents.update(
        plain.id,
        embedding_config={
            "embedding_endpoint_type": "openai",
            "embedding_model": "text-embedding-3-small",
            "embedding_dim": 1536,
        },
    )
    assert at_endpoint.embedding == "endpoint:text-embedding-3-small"
    assert at_endpoint.embedding_config.embedding_model == "text-embedding-3-small"
    none = client.agents.update(
        plain.id,
        embedding_config={
            **at_endpoint.embedding_config.model_dump(by_alias=True),
            "embedding_model": "none",
        },
    )
    assert none.embedding is None
    named = client.agents.update(plain.id, embedding="openai/text-embedding-3-small")
    assert named.embedding == "endpoint:text-embedding-3-small"


@pytest.mark.parametrize(
    ("config", "named"),
    [
        (
            {
                "embedding_endpoint_type": "hugging-face",
                "embedding_model": "bge",
                "embedding_dim": 3,
            },
            "the local embedder is all-MiniLM-L6-v2",
        ),
        (
            {"embedding_endpoint_type": "pinecone", "embedding_model": "x", "embedding_dim": 3},
            "embedding_endpoint_type",
        ),
        (
            {
                "embedding_endpoint_type": "openai",
                "embedding_model": "e",
                "embedding_dim": 8,
                "embedding_endpoint": "http://127.0.0.1:9/v1",
            },
            "embeds at the agent's model endpoint",
        ),
        (
            {
                "embedding_endpoint_type": "hugging-face",
                "embedding_model": "local",
                "embedding_dim": 8,
            },
            "gives 384 dimensions, not 8",
        ),
        (
            {
                "embedding_endpoint_type": "openai",
                "embedding_model": "e",
                "embedding_dim": 8,
                "azure_deployment": "d",
            },
            "embedding_config.azure_deployment",
        ),
    ],
)
def test_embedding_config_it_cannot_honour_is_a_422(
    client: Letta, config: dict[str, Any], named: str
) -> None:
    agent = client.agents.create(model="openai/gpt-4o-mini")
    with pytest.raises(UnprocessableEntityError, match=named):
        client.agents.update(agent.id, embedding_config=config)
    assert client.agents.retrieve(agent.id).embedding is None


def test_embedding_config_keeps_the_space_of_stored_vectors(client: Letta) -> None:
    agent = client.agents.create(model="openai/gpt-4o-mini", embedding="openai/fake-embedding")
    client.agents.passages.create(agent.id, text="Alice keeps bees.")
    embedded = client.agents.retrieve(agent.id).embedding_config
    assert embedded.embedding_dim > 0  # known once the first passage is embedded
    with pytest.raises(UnprocessableEntityError, match="has vectors from endpoint:fake-embedding"):
        client.agents.update(
            agent.id,
            embedding_config={"embedding_model": "all-MiniLM-L6-v2", "embedding_dim": 384},
        )
    assert client.agents.retrieve(agent.id).embedding == "endpoint:fake-embedding"


def test_include_pending_approval(client: Letta, fake_llm: FakeOpenAIServer) -> None:
    agent = client.agents.create(
        model="openai/gpt-4o-mini",
        tool_rules=[{"type": "requires_approval", "tool_name": "archival_memory_insert"}],
    )
    other = client.agents.create(model="openai/gpt-4o-mini")
    wanted = ["agent.pending_approval"]
    assert client.agents.retrieve(agent.id, include=wanted).pending_approval is None
    fake_llm.enqueue(
        reply(
            "store it", [call("archival_memory_insert", content="code 42", request_heartbeat=True)]
        )
    )
    asked = client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "42"}])
    request = asked.messages[-1]
    assert request.message_type == "approval_request_message"

    pending = client.agents.retrieve(agent.id, include=wanted).pending_approval
    assert pending is not None and pending.message_type == "approval_request_message"
    assert (pending.id, pending.tool_call.tool_call_id) == (
        request.id,
        request.tool_call.tool_call_id,
    )
    assert client.agents.retrieve(agent.id).pending_approval is None  # not asked for
    listed = {a.id: a.pending_approval for a in client.agents.list(include=wanted)}
    assert listed[agent.id].id == request.id and listed[other.id] is None

    fake_llm.enqueue(say("Stored."))
    client.agents.messages.create(
        agent.id,
        messages=[{"type": "approval", "approve": True, "approval_request_id": request.id}],
    )
    assert client.agents.retrieve(agent.id, include=wanted).pending_approval is None
