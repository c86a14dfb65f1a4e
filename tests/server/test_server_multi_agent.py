"""Agents that call agents over the server: Letta's `agents.create` attaches
the multi-agent tools by name (or `include_multi_agent_tools`) and keeps
tags, which `agents.list` filters by; a step of one user's agent reaches
that user's other agents only, and the agents it messages get the server's
rule for API keys. Driven by letta-client against a real server."""

from __future__ import annotations

from typing import Any

import httpx
from letta_client import Letta
from support.serving import live_server, new_key

from memgpt_lite.settings.endpoint import PLACEHOLDER_KEY
from memgpt_lite.testing.script import call, reply, say
from memgpt_lite.testing.server import FakeOpenAIServer

ASK = "send_message_to_agent_and_wait_for_reply"
ASK_TAGS = "send_message_to_agents_matching_tags"
MULTI: dict[str, Any] = {"extra_body": {"include_multi_agent_tools": True}}


def client_of(db: str, server: str, user: str) -> Letta:
    return Letta(base_url=server, api_key=new_key(db, user), max_retries=0)


def send(client: Letta, agent_id: str, text: str) -> Any:
    return client.agents.messages.create(agent_id, messages=[{"role": "user", "content": text}])


def test_letta_create_attaches_the_tools_and_keeps_tags(db: str, server: str) -> None:
    client = client_of(db, server, "alice")
    boss = client.agents.create(
        name="boss", model="openai/gpt-4o-mini", tools=[ASK, "send_message"], tags=["lead"]
    )
    assert [t.name for t in boss.tools if t.tool_type == "letta_multi_agent_core"] == [ASK]
    assert boss.tags == ["lead"]
    # Letta's server takes it; letta-client 1.x no longer names it.
    every = client.agents.create(**MULTI, name="all", model="gpt-4o-mini")
    assert {ASK, ASK_TAGS} <= {t.name for t in every.tools}
    worker = client.agents.create(name="worker", model="gpt-4o-mini", tags=["team", "eu"])
    assert ASK not in {t.name for t in worker.tools}

    def listed(**filters: Any) -> list[str]:
        return sorted(a.name for a in client.agents.list(**filters))

    assert listed(tags=["team", "lead"]) == ["boss", "worker"]
    assert listed(tags=["team", "lead"], match_all_tags=True) == []
    assert listed(tags=["team", "eu"], match_all_tags=True) == ["worker"]
    client.agents.update(worker.id, tags=["team"])
    assert client.agents.retrieve(worker.id).tags == ["team"]
    assert listed(tags=["eu"]) == []


def test_a_step_reaches_the_users_other_agents_only(
    db: str, server: str, fake_llm: FakeOpenAIServer
) -> None:
    alice = client_of(db, server, "alice")
    boss = alice.agents.create(**MULTI, name="boss", model="gpt-4o-mini")
    alice.agents.create(name="worker", model="gpt-4o-mini", tags=["team"])
    client_of(db, server, "mallory").agents.create(name="spy", model="gpt-4o-mini", tags=["team"])
    fake_llm.enqueue(
        reply(
            tool_calls=[
                call(ASK, message="Status?", other_agent_id="worker"),
                call(ASK, message="Status?", other_agent_id="spy"),
                call(ASK_TAGS, message="Team status?", match_all=["team"]),
            ]
        ),
        say("All done."),
        say("Still all done."),
        say("The worker is done."),
    )
    response = send(alice, boss.id, "How is the work going?")
    returns = [m.tool_return for m in response.messages if m.message_type == "tool_return_message"]
    assert returns[:3] == [
        "worker replied: All done.",
        "Error: there is no agent named 'spy'; the agents you can message: worker.",
        "Sent to 1 agent(s) (worker).\nworker replied: Still all done.",
    ]
    assert response.messages[-2].content == "The worker is done."
    # The worker's steps are in its own history, as its messages from boss.
    worker = alice.agents.list(name="worker").items[0]
    said = [m for m in alice.agents.messages.list(worker.id) if m.message_type == "user_message"]
    assert len(said) == 2 and all("from agent boss" in m.content for m in said)


def test_the_agents_messaged_get_the_servers_key_rule(db: str, fake_llm: FakeOpenAIServer) -> None:
    """A client chose another endpoint for the worker: the server's key must
    not go there, whether the worker runs for a request or for another agent."""
    with (
        FakeOpenAIServer(api_key="the-clients-own") as elsewhere,
        # The other endpoint is one the server allows (test_server_endpoints.py).
        live_server(db, allow_endpoints=[elsewhere.base_url]) as server,
    ):
        alice = client_of(db, server, "alice")
        boss = alice.agents.create(name="boss", model="gpt-4o-mini", tools=[ASK])
        created = httpx.post(
            f"{server}/api/agents",
            headers={"Authorization": f"Bearer {new_key(db, 'alice')}"},
            json={"name": "worker", "model": "gpt-4o-mini", "base_url": elsewhere.base_url},
        )
        assert created.status_code == 201, created.text
        fake_llm.enqueue(
            reply(tool_calls=[call(ASK, message="hi", other_agent_id="worker")]), say("ok")
        )
        response = send(alice, boss.id, "ask the worker")
        [request] = elsewhere.requests
    assert request.headers["authorization"] == f"Bearer {PLACEHOLDER_KEY}"
    assert fake_llm.api_key not in str(request.headers)
    [returned] = [m for m in response.messages if m.message_type == "tool_return_message"][:1]
    assert returned.tool_return.startswith("Error: worker could not answer: ")


def test_our_api_attaches_built_in_tools_by_name(db: str, server: str) -> None:
    headers = {"Authorization": f"Bearer {new_key(db, 'alice')}"}

    def create(**body: Any) -> httpx.Response:
        return httpx.post(f"{server}/api/agents", headers=headers, json=body)

    made = create(name="boss", model="gpt-4o-mini", tools=[ASK], settings={"tags": ["lead"]})
    assert made.status_code == 201, made.text
    assert made.json()["tool_names"] == [ASK]
    assert made.json()["settings"]["tags"] == ["lead"]
    refused = create(name="other", model="gpt-4o-mini", tools=["web_search"])
    assert refused.status_code == 422  # ConfigError, as for any bad field
    detail = refused.json()["detail"]
    assert "no registered tool named 'web_search'" in detail
    assert "the built-in tools attached by name are: send_message_to_agent_and_wait" in detail
