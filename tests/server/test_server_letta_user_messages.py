"""One stored message by its id, through Letta's routes: retrieve_message
with letta-client 1.x, and modify_message (which letta-client 1.x does not
call; its 0.1.x did) with httpx, Letta's bodies as the OpenAPI describes
them. Another user's message is a 404 worded as an unknown id's."""

from __future__ import annotations

import httpx
import pytest
from letta_client import Letta, NotFoundError
from support.serving import new_key

from memgpt_lite.testing.script import call, reply
from memgpt_lite.testing.server import FakeOpenAIServer


def test_retrieve_and_modify_a_message_by_its_id(
    client: Letta, db: str, server: str, fake_llm: FakeOpenAIServer
) -> None:
    agent = client.agents.create(model="openai/gpt-4o-mini")
    fake_llm.enqueue(reply("Greet Alice.", tool_calls=[call("send_message", message="Hi Alice")]))
    client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "I am Alice"}])
    listed = list(client.agents.messages.list(agent.id, order="asc"))
    user_id, answer_id = listed[0].id, listed[1].id
    assert [m.message_type for m in listed[:3]] == [
        "user_message",
        "reasoning_message",
        "assistant_message",
    ]

    found = client.messages.retrieve(answer_id)
    assert [(m.message_type, m.id) for m in found] == [
        ("reasoning_message", answer_id),
        ("assistant_message", answer_id),
    ]
    assert found[1].content == "Hi Alice" and found[0].otid == listed[1].otid

    def patch(message_id: str, body: dict, key: str | None = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key or client.api_key}"}
        url = f"{server}/v1/agents/{agent.id}/messages/{message_id}"
        return httpx.patch(url, json=body, headers=headers, timeout=30)

    edited = patch(
        user_id, {"message_type": "user_message", "content": [{"type": "text", "text": "I am Bob"}]}
    )
    assert edited.status_code == 200, edited.text
    assert (edited.json()["message_type"], edited.json()["content"]) == ("user_message", "I am Bob")
    edited = patch(answer_id, {"message_type": "assistant_message", "content": "Hi Bob"})
    assert (edited.json()["message_type"], edited.json()["content"]) == (
        "assistant_message",
        "Hi Bob",
    )
    edited = patch(answer_id, {"message_type": "reasoning_message", "reasoning": "Greet Bob."})
    assert edited.json()["reasoning"] == "Greet Bob."
    shown = [
        (m.message_type, getattr(m, "content", None) or getattr(m, "reasoning", None))
        for m in client.messages.retrieve(answer_id)
    ]
    assert shown == [("reasoning_message", "Greet Bob."), ("assistant_message", "Hi Bob")]
    assert client.messages.retrieve(user_id)[0].content == "I am Bob"

    refused = patch(user_id, {"message_type": "assistant_message", "content": "x"})
    assert refused.status_code == 422 and "a user message, not a assistant_message" in refused.text
    assert patch(user_id, {"message_type": "user_message"}).status_code == 422
    assert patch(user_id, {"content": "no kind"}).status_code == 422
    assert client.messages.retrieve(user_id)[0].content == "I am Bob"

    # The model's next request carries the edits.
    fake_llm.enqueue(reply("ok", tool_calls=[call("send_message", message="ok")]))
    client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "next"}])
    sent = fake_llm.chat_requests[-1]["messages"]
    assert any(m.get("content") == "I am Bob" for m in sent)
    assert not any("Alice" in str(m.get("content")) for m in sent)

    # Another user: the same 404 as for an id that does not exist.
    bob = Letta(base_url=server, api_key=new_key(db, "bob"), max_retries=0)
    with pytest.raises(NotFoundError) as theirs:
        bob.messages.retrieve(user_id)
    with pytest.raises(NotFoundError) as unknown:
        bob.messages.retrieve("msg-unknown")
    assert theirs.value.body["detail"] == unknown.value.body["detail"].replace(
        "msg-unknown", user_id
    )
    assert (
        patch(
            user_id, {"message_type": "user_message", "content": "x"}, new_key(db, "bob")
        ).status_code
        == 404
    )
    assert client.messages.retrieve(user_id)[0].content == "I am Bob"


def test_list_all_messages_pages_across_the_users_agents(
    client: Letta, db: str, server: str, fake_llm: FakeOpenAIServer
) -> None:
    first = client.agents.create(model="openai/gpt-4o-mini")
    second = client.agents.create(model="openai/gpt-4o-mini")
    for agent, text in [(first, "one"), (second, "two"), (first, "three")]:
        fake_llm.enqueue(reply(tool_calls=[call("send_message", message=f"re {text}")]))
        client.agents.messages.create(agent.id, messages=[{"role": "user", "content": text}])
    bob = Letta(base_url=server, api_key=new_key(db, "bob"), max_retries=0)
    theirs = bob.agents.create(model="openai/gpt-4o-mini")
    fake_llm.enqueue(reply(tool_calls=[call("send_message", message="bob's")]))
    bob.agents.messages.create(theirs.id, messages=[{"role": "user", "content": "bob here"}])

    said = ["user_message"]
    newest = client.messages.list(include_return_message_types=said)
    assert [m.content for m in newest] == ["three", "two", "one"]
    oldest = client.messages.list(order="asc", limit=2, include_return_message_types=said)
    assert [m.content for m in oldest] == ["one", "two"]
    rest = client.messages.list(order="asc", after=oldest[-1].id, include_return_message_types=said)
    assert [m.content for m in rest] == ["three"]
    back = client.messages.list(order="asc", before=rest[0].id, include_return_message_types=said)
    assert [m.content for m in back] == ["one", "two"]

    # A page of 3 never splits a stored answer (its tool call and return are 2).
    page = client.messages.list(limit=3)
    assert [m.message_type for m in page] == [
        "tool_return_message",
        "assistant_message",
        "user_message",
    ]
    everything = client.messages.list(limit=100)
    assert len(everything) == 9 and not any("bob" in str(m) for m in everything)
    assert [m.content for m in bob.messages.list(include_return_message_types=said)] == ["bob here"]
