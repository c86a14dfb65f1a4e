"""Letta's multi-agent groups over the server, driven by letta-client 1.x
(which calls the group routes through its own `client.post/get/patch`,
having no `groups` resource): a round-robin group's agents take turns on
what the others said, a dynamic group's main agent picks who speaks, a
supervisor group's main agent messages its agents through its tool; the
group's messages are listed once each and reset; a group is one user's."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from letta_client import APIStatusError, Letta, NotFoundError, UnprocessableEntityError
from support.serving import new_key

from memgpt_lite.testing import FakeOpenAIServer, call, reply, say

GROUP_TOOL = "send_message_to_all_agents_in_group"


def post(client: Letta, path: str, body: dict[str, Any]) -> Any:
    return client.post(path, cast_to=object, body=body)


def ask(client: Letta, group_id: str, text: str) -> dict[str, Any]:
    body = {"messages": [{"role": "user", "content": text}]}
    return post(client, f"/v1/groups/{group_id}/messages", body)


def stream(client: Letta, group_id: str, text: str) -> list[dict[str, Any]]:
    """The chunks of a streamed send to the group."""
    with httpx.stream(
        "POST",
        f"{str(client.base_url).rstrip('/')}/v1/groups/{group_id}/messages/stream",
        headers={"Authorization": f"Bearer {client.api_key}"},
        json={"messages": [{"role": "user", "content": text}]},
    ) as streamed:
        return [
            json.loads(line[6:]) for line in streamed.iter_lines() if line.startswith("data: {")
        ]


def said(response: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(sender_id, name, text) of each reply of a response."""
    return [
        (m["sender_id"], m["name"], m["content"])
        for m in response["messages"]
        if m["message_type"] == "assistant_message"
    ]


def user_texts(body: dict[str, Any]) -> list[str]:
    """What a model request's user messages say."""
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


def test_a_round_robin_group_takes_turns_on_what_the_others_said(
    client: Letta, db: str, server: str, fake_llm: FakeOpenAIServer
) -> None:
    ann, ben, cat = (client.agents.create(name=n, model="gpt-4o-mini") for n in "abc")
    bob = Letta(base_url=server, api_key=new_key(db, "bob"), max_retries=0)
    bobs = bob.agents.create(name="bobs", model="gpt-4o-mini")
    with pytest.raises(NotFoundError):  # another user's agent, as one that does not exist
        post(client, "/v1/groups", {"agent_ids": [ann.id, bobs.id], "description": "x"})
    with pytest.raises(APIStatusError) as swarm:
        post(
            client,
            "/v1/groups",
            {"agent_ids": [ben.id], "manager_config": {"manager_type": "swarm"}},
        )
    assert swarm.value.status_code == 501 and "swarm groups" in str(swarm.value)

    group = post(
        client, "/v1/groups", {"agent_ids": [ann.id, ben.id, cat.id], "description": "pals"}
    )
    assert (group["manager_type"], group["manager_agent_id"], group["max_turns"]) == (
        "round_robin",
        None,
        None,
    )
    fake_llm.enqueue(say("Skiing."), say("Hiking, like Ann?"), say("Reading."))
    first = ask(client, group["id"], "Plans for the holidays?")
    assert said(first) == [
        (ann.id, "a", "Skiing."),
        (ben.id, "b", "Hiking, like Ann?"),
        (cat.id, "c", "Reading."),
    ]
    assert first["usage"]["step_count"] == 3 and len(set(first["usage"]["run_ids"])) == 3
    assert all(m["run_id"] in first["usage"]["run_ids"] for m in first["messages"])
    # Each hears the user and the others before it, each naming who said it.
    asked = fake_llm.chat_requests
    assert user_texts(asked[0]) == ["Plans for the holidays?"]
    assert user_texts(asked[2]) == ["Plans for the holidays?", "a: Skiing.", "b: Hiking, like Ann?"]

    # Reordered, two turns a send: what an agent did not hear is in its history next time.
    changed = client.patch(
        f"/v1/groups/{group['id']}",
        cast_to=object,
        body={"agent_ids": [cat.id, ben.id, ann.id], "manager_config": {"max_turns": 2}},
    )
    assert (changed["agent_ids"], changed["max_turns"]) == ([cat.id, ben.id, ann.id], 2)
    fake_llm.enqueue(say("Snow!"), say("Sun!"))
    chunks = stream(client, group["id"], "Weather?")
    replies = [
        (c["sender_id"], c["content"]) for c in chunks if c["message_type"] == "assistant_message"
    ]
    assert replies == [(cat.id, "Snow!"), (ben.id, "Sun!")]
    assert [c["message_type"] for c in chunks][-2:] == ["stop_reason", "usage_statistics"]
    assert chunks[-1]["step_count"] == 2 and len(chunks[-1]["run_ids"]) == 2
    assert user_texts(fake_llm.chat_requests[4])[-3:] == ["c: Reading.", "Weather?", "c: Snow!"]

    listed = client.get(
        f"/v1/groups/{group['id']}/messages",
        cast_to=object,
        options={"params": {"order": "asc", "limit": 50}},
    )
    assert [m["content"] for m in listed if m["message_type"] == "user_message"] == [
        "Plans for the holidays?",
        "Weather?",
    ]
    assert [
        (m["sender_id"], m["content"]) for m in listed if m["message_type"] == "assistant_message"
    ] == [
        (ann.id, "Skiing."),
        (ben.id, "Hiking, like Ann?"),
        (cat.id, "Reading."),
        (cat.id, "Snow!"),
        (ben.id, "Sun!"),
    ]
    skiing = next(m for m in listed if m["message_type"] == "assistant_message")
    edit = {"message_type": "assistant_message", "content": "Skiing!"}
    edited = client.patch(
        f"/v1/groups/{group['id']}/messages/{skiing['id']}", cast_to=object, body=edit
    )
    assert (edited["id"], edited["content"]) == (skiing["id"], "Skiing!")
    # Ann, who had no turn, heard the second send's messages all the same.
    [ann_conversation] = client.conversations.list(agent_id=ann.id)
    heard = client.conversations.messages.list(ann_conversation.id, order="asc")
    assert [m.content for m in heard if m.message_type == "user_message"][-3:] == [
        "Weather?",
        "c: Snow!",
        "b: Sun!",
    ]
    assert list(client.agents.messages.list(ann.id)) == []  # her own history stays apart

    for route in (f"/v1/groups/{group['id']}", f"/v1/groups/{group['id']}/messages"):
        with pytest.raises(NotFoundError):
            bob.get(route, cast_to=object)
    with pytest.raises(NotFoundError):
        ask(bob, group["id"], "hi")
    client.patch(f"/v1/groups/{group['id']}/reset-messages", cast_to=object)
    assert client.get(f"/v1/groups/{group['id']}/messages", cast_to=object) == []
    client.agents.delete(ben.id)  # a member deleted leaves the group
    assert client.get(f"/v1/groups/{group['id']}", cast_to=object)["agent_ids"] == [cat.id, ann.id]


def test_a_supervisor_group_messages_its_agents_through_its_tool(
    client: Letta, fake_llm: FakeOpenAIServer
) -> None:
    boss = client.agents.create(name="boss", model="gpt-4o-mini")
    workers = [
        client.agents.create(
            name=name,
            model="gpt-4o-mini",
            memory_blocks=[{"label": "persona", "value": f"I am {name}."}],
        )
        for name in ("w1", "w2")
    ]
    ids = [w.id for w in workers]
    config = {"manager_type": "supervisor", "manager_agent_id": boss.id}
    with pytest.raises(UnprocessableEntityError):
        post(
            client,
            "/v1/groups",
            {"agent_ids": [boss.id], "description": "", "manager_config": config},
        )
    group = post(
        client, "/v1/groups", {"agent_ids": ids, "description": "team", "manager_config": config}
    )
    assert (group["manager_type"], group["manager_agent_id"]) == ("supervisor", boss.id)
    assert GROUP_TOOL in [t.name for t in client.agents.retrieve(boss.id).tools]

    def respond(body: dict[str, Any]) -> Any:
        system = body["messages"][0]["content"]
        for name in ("w1", "w2"):
            if f"I am {name}." in system:
                return say(f"{name} is fine.")
        if any(m["role"] == "tool" for m in body["messages"]):
            return say("Both are fine.")
        return reply("Ask them.", [call(GROUP_TOOL, message="Status?", request_heartbeat=True)])

    fake_llm.responder = respond
    response = ask(client, group["id"], "How is the team?")
    kinds = [m["message_type"] for m in response["messages"]]
    assert kinds[:3] == ["reasoning_message", "tool_call_message", "tool_return_message"]
    assert {m["sender_id"] for m in response["messages"]} == {boss.id}
    returned = json.loads(response["messages"][2]["tool_return"])
    assert returned == ["w1 replied: w1 is fine.", "w2 replied: w2 is fine."]
    assert said(response)[-1] == (boss.id, "boss", "Both are fine.")
    # The workers answered in their own histories, as messages from boss.
    asked = [m for m in client.agents.messages.list(ids[0]) if m.message_type == "user_message"]
    assert len(asked) == 1 and "from agent boss" in asked[0].content
    listed = client.get(f"/v1/groups/{group['id']}/messages", cast_to=object)
    assert [m["message_type"] for m in listed][-1] == "user_message"  # newest first
    assert list(client.agents.messages.list(boss.id)) == []  # the group's talk is apart

    client.agents.delete(boss.id)  # the group goes with its main agent
    with pytest.raises(NotFoundError):
        client.get(f"/v1/groups/{group['id']}", cast_to=object)


def test_a_dynamic_groups_main_agent_picks_who_speaks_until_one_is_done(
    client: Letta, fake_llm: FakeOpenAIServer
) -> None:
    host, ann, ben = (
        client.agents.create(name=n, model="gpt-4o-mini") for n in ("host", "ann", "ben")
    )
    config = {"manager_type": "dynamic", "manager_agent_id": host.id, "max_turns": 5}
    group = post(
        client,
        "/v1/groups",
        {"agent_ids": [ann.id, ben.id], "description": "", "manager_config": config},
    )
    assert (group["manager_agent_id"], group["termination_token"]) == (host.id, "DONE!")
    fake_llm.enqueue(say("ben, please."), say("Hi all."), say("Now ann."), say("Bye. DONE!"))
    response = ask(client, group["id"], "Hello?")
    assert said(response) == [
        (host.id, "host", "ben, please."),
        (ben.id, "ben", "Hi all."),
        (host.id, "host", "Now ann."),
        (ann.id, "ann", "Bye. DONE!"),
    ]
    asked = fake_llm.chat_requests
    second_pick = user_texts(asked[2])[-1]
    assert "one of ann." in second_pick and second_pick.endswith("ben: Hi all.")
    assert user_texts(asked[3]) == ["Hello?", "ben: Hi all."]

    fake_llm.enqueue(say("Nobody."))
    with pytest.raises(APIStatusError) as unnamed:
        ask(client, group["id"], "Again?")
    assert unnamed.value.status_code == 502 and "named none of its agents" in str(unnamed.value)
    # The host heard the end of the first round before it picked in the second.
    assert user_texts(fake_llm.chat_requests[4])[-2] == "ann: Bye. DONE!"
    fake_llm.enqueue(say("Still nobody."))
    chunks = stream(client, group["id"], "Once more?")
    assert [c["message_type"] for c in chunks] == [
        "assistant_message",
        "tool_return_message",
        "error_message",
        "stop_reason",
        "usage_statistics",
    ]
    assert chunks[-2]["stop_reason"] == "llm_api_error"
