"""Letta's conversations (/v1/conversations), driven by letta-client 1.x
against a real server: an agent's message histories over its one memory,
each stepping beside the others."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from letta_client import Letta, NotFoundError, UnprocessableEntityError
from support.serving import live_server, new_key

from memgpt_lite.server.letta import conversations
from memgpt_lite.testing.script import call, reply
from memgpt_lite.testing.server import FakeOpenAIServer

# How long a step may wait for the other conversation's: a bound on a hang
# (the locks crossing), not a measure.
WAIT_LIMIT_SECONDS = 30


def said(text: str) -> Any:
    return reply("Answering.", tool_calls=[call("send_message", message=text)])


def user_texts(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


def sent(
    client: Letta, conversation_id: str, text: str, otid: str | None = None, **options: Any
) -> list[Any]:
    """The chunks of a streamed send (the SDK's default here)."""
    messages = [{"role": "user", "content": text, "otid": otid}]
    return list(client.conversations.messages.create(conversation_id, messages=messages, **options))


def test_create_list_retrieve_update_delete_and_another_users(
    client: Letta, db: str, server: str
) -> None:
    agent = client.agents.create(model="openai/gpt-4o-mini")
    other = client.agents.create(model="openai/gpt-4o-mini")
    trip = client.conversations.create(agent_id=agent.id, summary="the trip")
    work = client.conversations.create(agent_id=agent.id)
    elsewhere = client.conversations.create(agent_id=other.id)
    assert trip.id.startswith("conv-") and (trip.agent_id, trip.summary) == (agent.id, "the trip")
    assert trip.in_context_message_ids == [] and trip.last_message_at is None

    listed = client.conversations.list(agent_id=agent.id)
    assert [c.id for c in listed] == [work.id, trip.id]  # newest first
    oldest_first = client.conversations.list(order="asc")
    assert [c.id for c in oldest_first] == [trip.id, work.id, elsewhere.id]
    assert [c.id for c in client.conversations.list(summary_search="TRIP")] == [trip.id]
    assert [c.id for c in client.conversations.list(order="asc", after=trip.id, limit=1)] == [
        work.id
    ]

    assert client.conversations.retrieve(trip.id).summary == "the trip"
    assert client.conversations.update(trip.id, summary="Oslo").summary == "Oslo"
    client.conversations.delete(work.id)
    assert {c.id for c in client.conversations.list()} == {trip.id, elsewhere.id}
    with pytest.raises(NotFoundError, match="no conversation"):
        client.conversations.retrieve(work.id)

    bob = Letta(base_url=server, api_key=new_key(db, "bob"), max_retries=0)
    assert list(bob.conversations.list()) == []
    for refused in (
        lambda: bob.conversations.retrieve(trip.id),
        lambda: bob.conversations.update(trip.id, summary="mine"),
        lambda: bob.conversations.delete(trip.id),
        lambda: bob.conversations.messages.list(trip.id),
        lambda: bob.conversations.create(agent_id=agent.id),
        lambda: bob.conversations.cancel(trip.id),
    ):
        with pytest.raises(NotFoundError):
            refused()
    with pytest.raises(UnprocessableEntityError, match="agent_id"):
        client.conversations.messages.list("default")
    with pytest.raises(UnprocessableEntityError, match="isolated_block_labels"):
        client.conversations.create(
            agent_id=agent.id, extra_body={"isolated_block_labels": ["human"]}
        )
    assert client.conversations.retrieve(trip.id).summary == "Oslo"


def test_a_conversation_has_its_own_messages_and_the_default_one_is_the_agents(
    client: Letta, fake_llm: FakeOpenAIServer
) -> None:
    agent = client.agents.create(model="openai/gpt-4o-mini")
    trip = client.conversations.create(agent_id=agent.id).id
    fake_llm.enqueue(said("Oslo it is."), said("Hello again."), said("Noted."))

    chunks = sent(client, trip, "Let us plan Oslo.", otid="otid-oslo", stream_tokens=True)
    assert [c.message_type for c in chunks][-2:] == ["stop_reason", "usage_statistics"]
    # A retry with the same otid is answered from the first send, not run again.
    again = sent(client, trip, "Let us plan Oslo.", otid="otid-oslo", stream_tokens=True)
    assert [c.content for c in again if c.message_type == "assistant_message"] == ["Oslo it is."]
    sent(client, "default", "Back home.", agent_id=agent.id)
    # Not streamed: a LettaResponse (which this SDK reads as a stream: asked
    # plainly). The agent's id is Letta's older name of its default conversation.
    answer: Any = client.post(
        f"/v1/conversations/{agent.id}/messages",
        body={"messages": [{"role": "user", "content": "Still home."}], "streaming": False},
        cast_to=object,
    )
    assert answer["stop_reason"]["stop_reason"] == "end_turn"
    replies = [m for m in answer["messages"] if m["message_type"] == "assistant_message"]
    assert [m["content"] for m in replies] == ["Noted."]

    def users(messages: Any) -> list[str]:
        return [m.content for m in messages if m.message_type == "user_message"]

    assert users(client.conversations.messages.list(trip)) == ["Let us plan Oslo."]
    assert users(client.conversations.messages.list("default", agent_id=agent.id, order="asc")) == [
        "Back home.",
        "Still home.",
    ]
    assert users(client.agents.messages.list(agent.id)) == ["Still home.", "Back home."]
    assert users(client.agents.messages.list(agent.id, conversation_id=trip)) == [
        "Let us plan Oslo."
    ]
    # Each request held its own conversation's messages only.
    assert [user_texts(r) for r in fake_llm.chat_requests] == [
        ["Let us plan Oslo."],
        ["Back home."],
        ["Back home.", "Still home."],
    ]
    retrieved = client.conversations.retrieve(trip)
    window = {m.id for m in client.conversations.messages.list(trip)}
    assert set(retrieved.in_context_message_ids) == window and retrieved.last_message_at
    assert client.conversations.cancel(trip) == {}

    fake_llm.enqueue(reply("We planned a trip to Oslo."))
    compacted = client.conversations.messages.compact(trip)
    assert compacted.summary == "We planned a trip to Oslo."
    assert compacted.num_messages_before > compacted.num_messages_after
    assert len(client.conversations.retrieve(trip).in_context_message_ids) == (
        compacted.num_messages_after
    )
    assert {m.id for m in client.conversations.messages.list(trip)} == window  # history stays


def test_two_conversations_of_one_agent_step_at_once_without_crossing(
    db_location: str, fake_llm: FakeOpenAIServer
) -> None:
    """The first conversation's model call waits until the second's step has
    ended: with one lock for the agent, the second would wait for the first."""
    first_asked, second_done = threading.Event(), threading.Event()

    def respond(request: dict[str, Any]) -> Any:
        texts = user_texts(request)
        if texts == ["first"]:
            first_asked.set()
            assert second_done.wait(WAIT_LIMIT_SECONDS), "the second conversation did not step"
        return said(f"to {texts[-1]}")

    fake_llm.responder = respond
    with live_server(db_location) as url:
        client = Letta(base_url=url, api_key=new_key(db_location, "alice"), max_retries=0)
        agent = client.agents.create(model="openai/gpt-4o-mini")
        first, second = (client.conversations.create(agent_id=agent.id).id for _ in range(2))
        chunks: list[Any] = []
        waiting = threading.Thread(target=lambda: chunks.extend(sent(client, first, "first")))
        waiting.start()
        try:
            assert first_asked.wait(WAIT_LIMIT_SECONDS), "the first conversation did not step"
            second_chunks = sent(client, second, "second")
            second_done.set()
        finally:
            second_done.set()
            waiting.join(WAIT_LIMIT_SECONDS)
        replies = [c.content for c in chunks if c.message_type == "assistant_message"]
        assert replies == ["to first"]
        assert [c.content for c in second_chunks if c.message_type == "assistant_message"] == [
            "to second"
        ]
        shown = client.conversations.messages.list(first, order="asc")
        assert [m.content for m in shown if m.message_type == "user_message"] == ["first"]
    assert sorted(user_texts(r) for r in fake_llm.chat_requests) == [["first"], ["second"]]


def test_a_quiet_stream_is_kept_alive_with_pings(
    client: Letta, fake_llm: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model answers only once the client has seen a ping."""
    monkeypatch.setattr(conversations, "PING_SECONDS", 0.05)
    pinged = threading.Event()

    def respond(request: dict[str, Any]) -> Any:
        assert pinged.wait(WAIT_LIMIT_SECONDS), "no ping came"
        return said("Here.")

    fake_llm.responder = respond
    agent = client.agents.create(model="openai/gpt-4o-mini")
    trip = client.conversations.create(agent_id=agent.id).id
    kinds = []
    messages = [{"role": "user", "content": "hello?"}]
    for chunk in client.conversations.messages.create(trip, messages=messages, stream_tokens=True):
        kinds.append(chunk.message_type)
        if chunk.message_type == "ping":
            pinged.set()
    assert "ping" in kinds and kinds[-2:] == ["stop_reason", "usage_statistics"]
    quiet = sent(client, trip, "again?", include_pings=False)
    assert "ping" not in [c.message_type for c in quiet]


def test_a_fork_goes_on_from_where_its_conversation_is_and_then_its_own_way(
    client: Letta, db: str, server: str, fake_llm: FakeOpenAIServer
) -> None:
    agent = client.agents.create(model="openai/gpt-4o-mini")
    trip = client.conversations.create(agent_id=agent.id).id
    fake_llm.enqueue(*(said(text) for text in ("Oslo it is.", "Then Bergen.", "Still Oslo.")))
    sent(client, trip, "Let us plan Oslo.")

    fork = client.conversations.fork(trip)
    assert (fork.agent_id, fork.id != trip) == (agent.id, True)
    sent(client, fork.id, "And after Oslo?")
    assert user_texts(fake_llm.chat_requests[-1])[-2:] == ["Let us plan Oslo.", "And after Oslo?"]
    sent(client, trip, "Back to Oslo.")
    assert "And after Oslo?" not in user_texts(fake_llm.chat_requests[-1])

    # The default conversation, named with its agent; an empty one forks empty.
    default = client.conversations.fork("default", agent_id=agent.id)
    assert list(client.conversations.messages.list(default.id)) == []
    bob = Letta(base_url=server, api_key=new_key(db, "bob"), max_retries=0)
    with pytest.raises(NotFoundError):
        bob.conversations.fork(trip)
    with pytest.raises(UnprocessableEntityError, match="message_id"):
        client.conversations.fork(trip, message_id="message-1")


def test_recompile_gives_the_system_message_with_the_blocks_as_they_are_now(
    client: Letta,
) -> None:
    blocks = [{"label": "human", "value": "Alice, in Oslo."}]
    agent = client.agents.create(model="openai/gpt-4o-mini", memory_blocks=blocks)
    trip = client.conversations.create(agent_id=agent.id).id
    assert "Alice, in Oslo." in json.loads(client.conversations.recompile(trip))
    client.agents.blocks.update("human", agent_id=agent.id, value="Alice, in Bergen.")
    system = json.loads(client.conversations.recompile("default", agent_id=agent.id, dry_run=True))
    assert "Alice, in Bergen." in system and "Alice, in Oslo." not in system
