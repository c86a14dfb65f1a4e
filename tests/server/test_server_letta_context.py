"""Letta's context window and core memory views and its reset of an
agent's messages, against a real server: reset through letta-client 1.x,
the two views (which 1.x has no call for; 0.1.x has,
test_server_letta_old_client.py) through httpx as Letta's server answers them."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from letta_client import Letta, NotFoundError, UnprocessableEntityError
from support.serving import new_key

from memgpt_lite.testing.script import call, reply, say
from memgpt_lite.testing.server import FakeOpenAIServer


@pytest.fixture
def alice_key(db: str) -> str:
    return new_key(db, "alice")


@pytest.fixture
def client(server: str, alice_key: str) -> Letta:
    return Letta(base_url=server, api_key=alice_key, max_retries=0)


def get(server: str, key: str, path: str) -> httpx.Response:
    return httpx.get(f"{server}{path}", headers={"Authorization": f"Bearer {key}"})


def new_agent(client: Letta) -> Any:
    blocks = [
        {"label": "human", "value": "Alice keeps bees.", "limit": 100},
        {"label": "persona", "value": "I am Sam.", "limit": 2000},
    ]
    return client.agents.create(memory_blocks=blocks, model="openai/gpt-4o-mini")


def talk(client: Letta, agent_id: str, fake: FakeOpenAIServer, text: str) -> None:
    fake.enqueue(reply("Answer.", tool_calls=[call("send_message", message=f"re: {text}")]))
    client.agents.messages.create(agent_id, messages=[{"role": "user", "content": text}])


def test_context_window_view(
    client: Letta, server: str, alice_key: str, fake_llm: FakeOpenAIServer
) -> None:
    agent = new_agent(client)
    talk(client, agent.id, fake_llm, "hello there")
    client.agents.passages.create(agent.id, text="Alice likes honey.")
    answer = get(server, alice_key, f"/v1/agents/{agent.id}/context")
    assert answer.status_code == 200, answer.text
    view = answer.json()
    # The window the agent works in (a part of the model's), as our API says.
    ours = get(server, alice_key, f"/api/agents/{agent.id}/context").json()
    assert view["context_window_size_max"] == ours["context_window"]
    assert view["context_window_size_max"] <= agent.llm_config.context_window
    assert view["num_messages"] == len(view["messages"]) == 3  # user, answer, tool return
    assert [m["role"] for m in view["messages"]] == ["user", "assistant", "tool"]
    assert view["messages"][0]["content"] == [{"type": "text", "text": "hello there"}]
    assert view["messages"][1]["tool_calls"][0]["function"]["name"] == "send_message"
    assert (view["num_recall_memory"], view["num_archival_memory"]) == (3, 1)
    assert "Alice keeps bees." in view["core_memory"] and "I am Sam." in view["core_memory"]
    assert view["num_tokens_core_memory"] > 0 and view["num_tokens_messages"] > 0
    assert view["num_tokens_system"] > 0 and view["system_prompt"]
    names = {tool["function"]["name"] for tool in view["functions_definitions"]}
    assert "send_message" in names and view["num_tokens_functions_definitions"] > 0
    parts = [
        "num_tokens_system",
        "num_tokens_external_memory_summary",
        "num_tokens_core_memory",
        "num_tokens_summary_memory",
        "num_tokens_functions_definitions",
        "num_tokens_messages",
    ]
    # The parts are what fills the window, and no more than it.
    assert sum(view[p] for p in parts) <= view["context_window_size_current"]
    assert view["context_window_size_current"] < view["context_window_size_max"]


def test_core_memory_view(client: Letta, server: str, alice_key: str) -> None:
    agent = new_agent(client)
    answer = get(server, alice_key, f"/v1/agents/{agent.id}/core-memory")
    assert answer.status_code == 200, answer.text
    memory = answer.json()
    assert [(b["label"], b["value"]) for b in memory["blocks"]] == [
        ("human", "Alice keeps bees."),
        ("persona", "I am Sam."),
    ]
    assert memory["file_blocks"] == []


def test_views_of_another_users_agent_are_not_found(
    db: str, client: Letta, server: str, fake_llm: FakeOpenAIServer
) -> None:
    agent = new_agent(client)
    bob = new_key(db, "bob")
    for path in ("context", "core-memory"):
        assert get(server, bob, f"/v1/agents/{agent.id}/{path}").status_code == 404
    bobs = Letta(base_url=server, api_key=bob, max_retries=0)
    talk(client, agent.id, fake_llm, "keep this")
    with pytest.raises(NotFoundError):
        bobs.agents.messages.reset(agent.id)
    assert len(client.agents.messages.list(agent.id).items) == 4


def test_reset_deletes_the_messages_and_keeps_memory(
    client: Letta, server: str, alice_key: str, fake_llm: FakeOpenAIServer
) -> None:
    agent = new_agent(client)
    client.agents.passages.create(agent.id, text="Alice likes honey.")
    for n in range(2):
        talk(client, agent.id, fake_llm, f"message {n}")
    assert len(client.agents.messages.list(agent.id).items) == 8
    with pytest.raises(UnprocessableEntityError, match="add_default_initial_messages"):
        client.agents.messages.reset(agent.id, add_default_initial_messages=True)
    assert len(client.agents.messages.list(agent.id).items) == 8

    after = client.agents.messages.reset(agent.id)
    assert after.id == agent.id
    assert client.agents.messages.list(agent.id).items == []
    view = get(server, alice_key, f"/v1/agents/{agent.id}/context").json()
    assert (view["num_messages"], view["num_recall_memory"], view["messages"]) == (0, 0, [])
    assert [p.text for p in client.agents.passages.list(agent.id)] == ["Alice likes honey."]
    assert client.agents.blocks.retrieve("human", agent_id=agent.id).value == "Alice keeps bees."

    # The agent goes on from nothing: the model is sent the new message alone.
    fake_llm.enqueue(say("Hi again."))
    client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "fresh"}])
    sent = fake_llm.chat_requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user"] and sent[-1]["content"] == "fresh"
    assert len(client.agents.messages.list(agent.id).items) == 3


def test_reset_drops_a_waiting_approval(client: Letta, fake_llm: FakeOpenAIServer) -> None:
    agent = client.agents.create(
        model="openai/gpt-4o-mini",
        tool_rules=[{"type": "requires_approval", "tool_name": "archival_memory_insert"}],
    )
    fake_llm.enqueue(
        reply("store it", [call("archival_memory_insert", content="x", request_heartbeat=True)])
    )
    asked = client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "x"}])
    assert asked.stop_reason.stop_reason == "requires_approval"
    client.agents.messages.reset(agent.id)
    wanted = ["agent.pending_approval"]
    assert client.agents.retrieve(agent.id, include=wanted).pending_approval is None
    fake_llm.enqueue(say("Hello."))
    done = client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "hi"}])
    assert done.stop_reason.stop_reason == "end_turn"


def test_recompile_gives_the_system_message_with_the_blocks_as_they_are(
    client: Letta, server: str, db: str
) -> None:
    agent = new_agent(client)
    assert "Alice keeps bees." in json.loads(client.agents.recompile(agent.id))
    client.agents.blocks.update("human", agent_id=agent.id, value="Alice keeps wasps.")
    system = json.loads(client.agents.recompile(agent.id, dry_run=True))
    assert "Alice keeps wasps." in system and "Alice keeps bees." not in system
    bob = Letta(base_url=server, api_key=new_key(db, "bob"), max_retries=0)
    with pytest.raises(NotFoundError):
        bob.agents.recompile(agent.id)


def test_tags_are_the_users_agents_tags_each_once(client: Letta, server: str, db: str) -> None:
    client.agents.create(model="openai/gpt-4o-mini", tags=["bees", "garden"])
    client.agents.create(model="openai/gpt-4o-mini", tags=["garden", "Work"])
    bob = Letta(base_url=server, api_key=new_key(db, "bob"), max_retries=0)
    bob.agents.create(model="openai/gpt-4o-mini", tags=["secret"])
    assert list(client.tags.list()) == ["Work", "bees", "garden"]
    assert list(client.tags.list(query_text="GAR")) == ["garden"]
    assert list(client.tags.list(order="desc", limit=2)) == ["garden", "bees"]
    assert list(client.tags.list(after="bees")) == ["garden"]
    assert list(bob.tags.list()) == ["secret"]


def test_compact_folds_the_older_messages_into_the_summary(
    client: Letta, fake_llm: FakeOpenAIServer
) -> None:
    agent = new_agent(client)
    for text in ("We keep bees.", "They make honey."):
        talk(client, agent.id, fake_llm, text)
    fake_llm.enqueue(reply("Alice keeps bees for honey."))
    compacted = client.agents.messages.compact(agent.id)
    assert compacted.summary == "Alice keeps bees for honey."
    assert compacted.num_messages_before > compacted.num_messages_after
    listed = [getattr(m, "content", None) for m in client.agents.messages.list(agent.id).items]
    assert "We keep bees." in listed  # folded into the summary, still in the history


def test_preview_raw_payload_is_the_next_request_sent_and_stores_nothing(
    client: Letta, server: str, alice_key: str, db: str, fake_llm: FakeOpenAIServer
) -> None:
    agent = new_agent(client)
    fake_llm.enqueue(say("Hello Alice."))
    client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "hi"}])
    stored = len(list(client.agents.messages.list(agent.id)))
    requests = len(fake_llm.chat_requests)

    def preview(path: str, body: dict[str, Any], key: str = alice_key) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key}"}
        return httpx.post(f"{server}{path}", json=body, headers=headers, timeout=30)

    asked = {"messages": [{"role": "user", "content": "what do I keep?"}]}
    shown = preview(f"/v1/agents/{agent.id}/messages/preview-raw-payload", asked)
    assert shown.status_code == 200, shown.text
    payload = shown.json()
    assert payload["model"] == "gpt-4o-mini" and payload["tool_choice"] == "required"
    assert payload["messages"][0]["role"] == "system"
    assert "Alice keeps bees." in payload["messages"][0]["content"]
    assert payload["messages"][-1] == {"role": "user", "content": "what do I keep?"}
    assert "send_message" in {t["function"]["name"] for t in payload["tools"]}
    assert len(list(client.agents.messages.list(agent.id))) == stored
    assert len(fake_llm.chat_requests) == requests  # the model was not asked

    fake_llm.enqueue(say("Bees."))
    client.agents.messages.create(agent.id, messages=asked["messages"])
    sent = fake_llm.chat_requests[-1]
    assert sent["messages"][1:] == payload["messages"][1:]
    assert sent["tools"] == payload["tools"] and sent["model"] == payload["model"]

    conversation = client.conversations.create(agent_id=agent.id)
    path = f"/v1/conversations/{conversation.id}/messages/preview-raw-payload"
    fresh = preview(path, asked).json()
    assert [m["role"] for m in fresh["messages"]] == ["system", "user"]
    approval = {"messages": [{"type": "approval", "approve": True}]}
    assert (
        preview(f"/v1/agents/{agent.id}/messages/preview-raw-payload", approval).status_code == 422
    )
    bob = new_key(db, "bob")
    assert (
        preview(f"/v1/agents/{agent.id}/messages/preview-raw-payload", asked, bob).status_code
        == 404
    )
    assert preview(path, asked, bob).status_code == 404
