"""Letta's routes, driven by Letta's own Python SDK (letta-client) against a
real server on a socket, with the fake OpenAI server as the model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from letta_client import (
    APIStatusError,
    AuthenticationError,
    Letta,
    NotFoundError,
    UnprocessableEntityError,
)
from support.serving import live_server, new_key

from memgpt_lite.testing.script import call, reply
from memgpt_lite.testing.server import FakeOpenAIServer


def new_agent(client: Letta, **options: Any) -> Any:
    blocks = [
        {"label": "human", "value": "Alice keeps bees.", "limit": 100},
        {"label": "persona", "value": "I am Sam.", "limit": 2000},
    ]
    return client.agents.create(memory_blocks=blocks, model="openai/gpt-4o-mini", **options)


def kinds(messages: list[Any]) -> list[str]:
    return [m.message_type for m in messages]


def test_agents_create_list_retrieve_update_delete(
    db_location: str, fake_llm: FakeOpenAIServer
) -> None:
    with live_server(db_location) as url:
        client = Letta(base_url=url, api_key=new_key(db_location, "alice"), max_retries=0)
        agent = new_agent(client, system="You are Sam.", embedding="openai/text-embedding-3-small")
        assert agent.name.startswith("agent-") and len(agent.name) == len("agent-") + 8
        assert agent.llm_config.model == "gpt-4o-mini"  # the provider prefix dropped
        assert agent.system == "You are Sam."
        assert agent.embedding == "endpoint:text-embedding-3-small"
        assert {b.label: (b.value, b.limit) for b in agent.memory.blocks} == {
            "human": ("Alice keeps bees.", 100),
            "persona": ("I am Sam.", 2000),
        }
        assert "send_message" in [t.name for t in agent.tools]
        named = client.agents.create(name="sam", model="llama3.2")
        assert named.llm_config.model == "llama3.2"

        assert {a.id for a in client.agents.list()} == {agent.id, named.id}
        assert [a.id for a in client.agents.list(limit=1, order="asc").items] == [agent.id]
        assert [a.name for a in client.agents.list(name="sam")] == ["sam"]
        assert client.agents.retrieve(agent.id).name == agent.name

        updated = client.agents.update(agent.id, name="bee-keeper", system="New prompt.")
        assert (updated.name, updated.system) == ("bee-keeper", "New prompt.")
        assert client.agents.retrieve(agent.id).name == "bee-keeper"

        client.agents.delete(agent.id)
        with pytest.raises(NotFoundError):
            client.agents.retrieve(agent.id)
        assert [a.id for a in client.agents.list()] == [named.id]


def test_create_refuses_what_it_cannot_honour(client: Letta) -> None:
    with pytest.raises(UnprocessableEntityError, match="model"):
        client.agents.create(memory_blocks=[{"label": "human", "value": "x"}])
    with pytest.raises(UnprocessableEntityError, match="hosted"):
        client.agents.create(model="letta/letta-free")
    client.agents.create(name="sam", model="gpt-4o-mini")
    with pytest.raises(APIStatusError) as taken:
        client.agents.create(name="sam", model="gpt-4o-mini")
    assert taken.value.status_code == 409


def test_send_returns_letta_messages(db_location: str, fake_llm: FakeOpenAIServer) -> None:
    with live_server(db_location) as url:
        client = Letta(base_url=url, api_key=new_key(db_location, "alice"), max_retries=0)
        agent = new_agent(client)
        fake_llm.enqueue(reply("She said hello.", tool_calls=[call("send_message", message="hi")]))
        response = client.agents.messages.create(
            agent.id, messages=[{"role": "user", "content": [{"type": "text", "text": "hello"}]}]
        )
        assert fake_llm.chat_requests[-1]["messages"][-1]["content"] == "hello"
        assert kinds(response.messages) == [
            "reasoning_message",
            "assistant_message",
            "tool_return_message",
        ]
        thought, said, returned = response.messages
        assert thought.reasoning == "She said hello." and said.content == "hi"
        assert thought.id == said.id  # one stored message, as in Letta
        assert returned.status == "success"
        assert response.stop_reason.stop_reason == "end_turn"
        assert response.usage.step_count == 1 and response.usage.total_tokens > 0

        listed = list(client.agents.messages.list(agent.id))
        assert kinds(listed) == [
            "tool_return_message",
            *kinds(response.messages[:2]),
            "user_message",
        ]
        assert listed[-1].content == "hello"
        assert [m.id for m in listed[:3]] == [returned.id, thought.id, said.id]


def test_tool_calls_and_failed_tools(client: Letta, fake_llm: FakeOpenAIServer) -> None:
    agent = new_agent(client)
    fake_llm.enqueue(
        reply("Look it up.", tool_calls=[call("no_such_tool", request_heartbeat=True)]),
        reply("", tool_calls=[call("send_message", message="sorry")]),
    )
    response = client.agents.messages.create(
        agent.id, messages=[{"role": "user", "content": "find it"}], use_assistant_message=False
    )
    assert kinds(response.messages) == [
        "reasoning_message",
        "tool_call_message",
        "tool_return_message",
        "tool_call_message",
        "tool_return_message",
    ]
    failed = response.messages[2]
    assert failed.status == "error" and failed.tool_return.startswith("Error:")
    assert response.messages[1].tool_call.name == "no_such_tool"
    assert response.messages[3].tool_call.name == "send_message"
    assert response.usage.step_count == 2
    history = list(client.agents.messages.list(agent.id, order="asc"))
    assert [m.status for m in history if m.message_type == "tool_return_message"] == [
        "error",
        "success",
    ]


def test_messages_list_pages_by_cursor(client: Letta, fake_llm: FakeOpenAIServer) -> None:
    agent = new_agent(client)
    for n in range(3):
        fake_llm.enqueue(reply(f"thought {n}", tool_calls=[call("send_message", message=f"{n}")]))
        client.agents.messages.create(agent.id, messages=[{"role": "user", "content": f"m{n}"}])
    everything = client.agents.messages.list(agent.id, order="asc").items
    assert len(everything) == 12
    paged = list(client.agents.messages.list(agent.id, order="asc", limit=2))  # follows `after`
    assert [(m.id, m.message_type) for m in paged] == [(m.id, m.message_type) for m in everything]
    first = client.agents.messages.list(agent.id, order="asc", limit=2).items
    assert kinds(first) == ["user_message"]  # the next message is two, never split
    newest = client.agents.messages.list(
        agent.id, limit=1, include_return_message_types=["user_message"]
    )
    assert [m.content for m in newest.items] == ["m2"]
    # The newest page (read from the end of the history) is the full list's start.
    for limit in (1, 3, 5, 12, 50):
        page = client.agents.messages.list(agent.id, limit=limit).items
        expected = everything[::-1][: len(page)]
        assert [m.id for m in page] == [m.id for m in expected] and page
    users = client.agents.messages.list(
        agent.id, limit=2, include_return_message_types=["user_message"]
    ).items
    assert [m.content for m in users] == ["m2", "m1"]


def stream_items(client: Letta, agent_id: str, **options: Any) -> list[Any]:
    with client.agents.messages.create(
        agent_id, messages=[{"role": "user", "content": "hello"}], streaming=True, **options
    ) as stream:
        return list(stream)


def test_streaming_sends_letta_messages_then_stop_reason_and_usage(
    client: Letta, fake_llm: FakeOpenAIServer
) -> None:
    agent = new_agent(client)
    fake_llm.enqueue(
        reply(
            "Save it.",
            tool_calls=[call("archival_memory_insert", content="bees", request_heartbeat=True)],
        ),
        reply("Now answer.", tool_calls=[call("send_message", message="saved")]),
    )
    items = stream_items(client, agent.id)
    assert kinds(items) == [
        "reasoning_message",
        "tool_call_message",
        "tool_return_message",
        "reasoning_message",
        "assistant_message",
        "tool_return_message",
        "stop_reason",
        "usage_statistics",
    ]
    assert items[4].content == "saved" and items[-2].stop_reason == "end_turn"
    assert items[-1].step_count == 2
    stored = {m.id for m in client.agents.messages.list(agent.id)}
    assert {m.id for m in items[:6]} <= stored  # the stored ids, as list shows them


@pytest.mark.filterwarnings("ignore:deprecated:DeprecationWarning")  # messages.stream
def test_stream_tokens_sends_text_in_pieces(client: Letta, fake_llm: FakeOpenAIServer) -> None:
    agent = new_agent(client)
    fake_llm.enqueue(
        reply("Thinking it over.", tool_calls=[call("send_message", message="hello there, Alice")])
    )
    with client.agents.messages.stream(
        agent.id, messages=[{"role": "user", "content": "hi"}], stream_tokens=True
    ) as stream:
        items = list(stream)
    said = [m for m in items if m.message_type == "assistant_message"]
    thought = [m for m in items if m.message_type == "reasoning_message"]
    assert len(said) > 1 and "".join(m.content for m in said) == "hello there, Alice"
    assert "".join(m.reasoning for m in thought) == "Thinking it over."
    assert len({m.id for m in said + thought}) == 1  # one answer, one id
    assert kinds(items)[-2:] == ["stop_reason", "usage_statistics"]


def test_stream_reports_a_failing_model(client: Letta, fake_llm: FakeOpenAIServer) -> None:
    from memgpt_lite.testing.script import error

    agent = new_agent(client)
    fake_llm.enqueue(
        reply(
            "First.", tool_calls=[call("conversation_search", query="x", request_heartbeat=True)]
        ),
        *[error(400, "bad request")] * 5,
    )
    items = stream_items(client, agent.id)
    assert kinds(items)[-3:] == ["error_message", "stop_reason", "usage_statistics"]
    assert items[-2].stop_reason == "llm_api_error"
    assert kinds(items)[:3] == ["reasoning_message", "tool_call_message", "tool_return_message"]


def test_blocks_by_label(client: Letta) -> None:
    agent = new_agent(client)
    block = client.agents.blocks.retrieve("human", agent_id=agent.id)
    assert (block.value, block.limit) == ("Alice keeps bees.", 100)
    updated = client.agents.blocks.update("human", agent_id=agent.id, value="Alice keeps wasps.")
    assert updated.value == "Alice keeps wasps."
    assert client.agents.retrieve(agent.id).memory.blocks[0].value == "Alice keeps wasps."
    with pytest.raises(UnprocessableEntityError, match="over its limit of 100"):
        client.agents.blocks.update("human", agent_id=agent.id, value="x" * 101)
    assert client.agents.blocks.retrieve("human", agent_id=agent.id).value == "Alice keeps wasps."
    grown = client.agents.blocks.update("human", agent_id=agent.id, limit=500, value="y" * 300)
    assert (grown.limit, len(grown.value)) == (500, 300)
    shrunk = client.agents.blocks.update("human", agent_id=agent.id, limit=20, value="Alice.")
    assert (shrunk.limit, shrunk.value) == (20, "Alice.")
    with pytest.raises(UnprocessableEntityError):
        client.agents.blocks.update("human", agent_id=agent.id, limit=3)
    assert client.agents.blocks.retrieve("human", agent_id=agent.id).limit == 20
    with pytest.raises(NotFoundError):
        client.agents.blocks.retrieve("nope", agent_id=agent.id)
    assert {b.label for b in client.agents.blocks.list(agent.id)} == {"human", "persona"}


def test_path_labels_and_attach_over_letta_routes(client: Letta) -> None:
    agent = client.agents.create(
        model="openai/gpt-4o-mini",
        memory_blocks=[{"label": "system/human/family", "value": "Two sisters.", "limit": 200}],
    )
    block = client.agents.blocks.retrieve("system/human/family", agent_id=agent.id)
    assert block.value == "Two sisters."
    changed = client.agents.blocks.update(
        "system/human/family", agent_id=agent.id, value="Two sisters, one brother."
    )
    assert changed.value == "Two sisters, one brother."
    with pytest.raises(NotFoundError, match="no block with id 'block-123'"):
        client.agents.blocks.attach("block-123", agent_id=agent.id)


def test_a_block_shared_between_agents_attach_and_detach(
    db: str, client: Letta, server: str
) -> None:
    first = new_agent(client)
    second = client.agents.create(model="openai/gpt-4o-mini")
    assert second.memory.blocks == []  # no memory_blocks given: none, as Letta makes it
    human = client.agents.blocks.retrieve("human", agent_id=first.id)
    shared = client.agents.blocks.attach(human.id, agent_id=second.id)
    assert [b.id for b in shared.memory.blocks] == [human.id]
    client.agents.blocks.update("human", agent_id=second.id, value="Alice keeps goats.")
    assert client.agents.blocks.retrieve("human", agent_id=first.id).value == "Alice keeps goats."
    with pytest.raises(APIStatusError, match="already has a block labelled 'human'") as twice:
        client.agents.blocks.attach(human.id, agent_id=first.id)
    assert twice.value.status_code == 409
    bob = Letta(base_url=server, api_key=new_key(db, "bob"), max_retries=0)
    bobs = bob.agents.create(model="openai/gpt-4o-mini")
    with pytest.raises(NotFoundError, match="no block with id"):
        bob.agents.blocks.attach(human.id, agent_id=bobs.id)
    left = client.agents.blocks.detach(human.id, agent_id=second.id)
    assert left.memory.blocks == []
    assert client.agents.blocks.retrieve("human", agent_id=first.id).value == "Alice keeps goats."
    with pytest.raises(NotFoundError, match="no block with id"):
        client.agents.blocks.detach(human.id, agent_id=second.id)


def test_read_only_block_is_refused(client: Letta) -> None:
    agent = client.agents.create(
        model="gpt-4o-mini",
        memory_blocks=[{"label": "rules", "value": "Be kind.", "read_only": True}],
    )
    with pytest.raises(UnprocessableEntityError, match="read-only"):
        client.agents.blocks.update("rules", agent_id=agent.id, value="Be rude.")
    assert client.agents.blocks.retrieve("rules", agent_id=agent.id).value == "Be kind."


def test_passages(client: Letta) -> None:
    agent = new_agent(client)
    old = datetime.now(UTC) - timedelta(days=30)
    created = client.agents.passages.create(agent.id, text="Alice likes honey.", tags=["food"])
    assert [p.text for p in created] == ["Alice likes honey."] and created[0].tags == ["food"]
    client.agents.passages.create(agent.id, text="Alice's hive swarmed.", created_at=old)
    assert [p.text for p in client.agents.passages.list(agent.id)] == [
        "Alice's hive swarmed.",
        "Alice likes honey.",
    ]
    found = client.agents.passages.search(agent.id, query="Alice")
    assert found.count == 2
    tagged = client.agents.passages.search(agent.id, query="Alice", tags=["food"])
    assert [r.content for r in tagged.results] == ["Alice likes honey."]
    recent = client.agents.passages.search(
        agent.id, query="Alice", start_datetime=datetime.now(UTC) - timedelta(days=1)
    )
    assert [r.id for r in recent.results] == [created[0].id]
    client.agents.passages.delete(created[0].id, agent_id=agent.id)
    assert [p.text for p in client.agents.passages.list(agent.id)] == ["Alice's hive swarmed."]


def test_other_letta_routes_are_501_and_ours_are_not_shadowed(client: Letta, server: str) -> None:
    with pytest.raises(APIStatusError) as unimplemented:
        client.folders.list()
    assert unimplemented.value.status_code == 501
    assert unimplemented.value.body == {
        "detail": "memgpt-lite does not implement GET /v1/folders/ (Letta's list_folders)"
    }
    agent = new_agent(client)
    with pytest.raises(APIStatusError, match="Letta's close_all_files_for_agent") as close:
        client.agents.files.close_all(agent.id)
    assert close.value.status_code == 501
    assert httpx.get(f"{server}/v1/health/").json()["status"] == "ok"
    assert httpx.get(f"{server}/v1/no-such-thing").status_code == 404


def test_another_users_agent_is_not_found(db: str, client: Letta, server: str) -> None:
    agent = new_agent(client)
    bob = Letta(base_url=server, api_key=new_key(db, "bob"), max_retries=0)
    with pytest.raises(NotFoundError):
        bob.agents.retrieve(agent.id)
    with pytest.raises(NotFoundError):
        bob.agents.messages.create(agent.id, messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(NotFoundError):
        bob.agents.blocks.retrieve("human", agent_id=agent.id)
    assert list(bob.agents.list()) == []


def test_no_key_is_401(server: str) -> None:
    no_key = httpx.get(f"{server}/v1/agents/")
    assert no_key.status_code == 401 and "API key" in no_key.json()["detail"]
    with pytest.raises(AuthenticationError):
        Letta(base_url=server, api_key="not-a-key", max_retries=0).agents.list()
