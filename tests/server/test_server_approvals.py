"""Approvals over HTTP: a tool call that requires approval waits, and the
user answers it through our API (/api), Letta's routes (letta-client) or
sees it through OpenAI's chat completions (openai). Each test runs the real
server on a socket, on a SQLite file, with the fake model server as the
model; the tool that waits is archival_memory_insert (made to wait by a
requires_approval rule), so that whether it ran shows in archival memory."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from letta_client import ConflictError, Letta, NotFoundError, UnprocessableEntityError
from support.serving import live_server, new_key

from memgpt_lite.events import STEP_EVENT, StepEvent
from memgpt_lite.testing.script import call, reply, say
from memgpt_lite.testing.server import FakeOpenAIServer

WAITS = [{"type": "requires_approval", "tool_name": "archival_memory_insert"}]


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "approvals.db")


@pytest.fixture
def server(db: str, fake_llm: FakeOpenAIServer) -> Iterator[str]:
    with live_server(db) as url:
        yield url


def api(db: str, url: str, user: str = "alice") -> httpx.Client:
    key = new_key(db, user)
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


@pytest.fixture
def alice(db: str, server: str) -> Iterator[httpx.Client]:
    with api(db, server) as client:
        yield client


def make_sam(client: httpx.Client, *rules: dict[str, str]) -> None:
    body = {"name": "sam", "model": "fake-model", "settings": {"tool_rules": [*WAITS, *rules]}}
    created = client.post("/api/agents", json=body)
    assert created.status_code == 201, created.text


def ask_to_remember(client: httpx.Client, fake_llm: FakeOpenAIServer) -> dict[str, Any]:
    """A step whose model wants to store a secret: it waits for approval."""
    fake_llm.enqueue(
        reply(
            "store it",
            [call("archival_memory_insert", content="the code is 42", request_heartbeat=True)],
        )
    )
    sent = client.post("/api/agents/sam/messages", json={"message": "remember: code 42"})
    assert sent.status_code == 200, sent.text
    return sent.json()


def passages(client: httpx.Client) -> list[str]:
    return [p["text"] for p in client.get("/api/agents/sam/passages").json()["passages"]]


def sse_events(response: httpx.Response) -> list[StepEvent]:
    lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    return [STEP_EVENT.validate_json(line.removeprefix("data: ")) for line in lines]


# Our API


def test_a_waiting_call_is_listed_unrun_and_approving_it_runs_it(
    alice: httpx.Client, fake_llm: FakeOpenAIServer
) -> None:
    make_sam(alice)
    result = ask_to_remember(alice, fake_llm)
    assert result["stop_reason"] == "approval_required"
    waiting = result["pending_approvals"]
    assert [c["name"] for c in waiting] == ["archival_memory_insert"]
    assert result["tool_results"] == [] and passages(alice) == []
    assert alice.get("/api/agents/sam/approvals").json() == waiting

    fake_llm.enqueue(say("Stored."))
    body = {"approvals": [{"approve": True, "tool_call_id": waiting[0]["id"]}]}
    approved = alice.post("/api/agents/sam/approvals", json=body)
    assert approved.status_code == 200, approved.text
    after = approved.json()
    assert after["replies"] == ["Stored."] and after["stop_reason"] == "send_message"
    assert after["tool_results"][0]["ok"] and passages(alice) == ["the code is 42"]
    assert alice.get("/api/agents/sam/approvals").json() == []
    # The model read the call's real result.
    assert fake_llm.chat_requests[-1]["messages"][-1]["tool_call_id"] == waiting[0]["id"]


def test_a_wait_and_a_denial_stream_their_events_and_the_model_reads_the_reason(
    alice: httpx.Client, fake_llm: FakeOpenAIServer
) -> None:
    make_sam(alice)
    fake_llm.enqueue(reply(tool_calls=[call("archival_memory_insert", content="the code is 42")]))
    body = {"message": "remember: code 42", "stream": True}
    with alice.stream("POST", "/api/agents/sam/messages", json=body) as response:
        asked = sse_events(response)
    assert [e.type for e in asked][-2:] == ["approval_requested", "step_finished"]
    assert [c.name for c in asked[-2].calls] == ["archival_memory_insert"]
    assert asked[-1].result.stop_reason == "approval_required"
    fake_llm.enqueue(say("I will not store it."))
    body = {"approve": False, "reason": "no secrets in memory", "stream": True}
    with alice.stream("POST", "/api/agents/sam/approvals", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = sse_events(response)
    assert events[0].type == "step_started"
    assert [a.model_dump() for a in events[0].approvals] == [
        {"approve": False, "reason": "no secrets in memory", "tool_call_id": None}
    ]
    assert events[-1].type == "step_finished"
    result = events[-1].result
    assert result.replies == ["I will not store it."]
    assert not result.tool_results[0].ok
    assert result.tool_results[0].content.endswith("Their reason: no secrets in memory")
    assert passages(alice) == []
    assert "no secrets in memory" in fake_llm.chat_requests[-1]["messages"][-1]["content"]


def test_a_message_while_waiting_is_409_and_stores_nothing(
    alice: httpx.Client, fake_llm: FakeOpenAIServer
) -> None:
    make_sam(alice)
    ask_to_remember(alice, fake_llm)
    before = alice.get("/api/agents/sam/messages").json()["total"]
    for stream in (False, True):
        refused = alice.post("/api/agents/sam/messages", json={"message": "hi", "stream": stream})
        assert refused.status_code == 409
        assert refused.json()["detail"] == (
            "agent 'sam' is waiting for approval of a tool call (archival_memory_insert): "
            "approve or deny it before sending a new message"
        )
    assert alice.get("/api/agents/sam/messages").json()["total"] == before
    assert len(fake_llm.chat_requests) == 1 and passages(alice) == []


def test_answers_that_do_not_fit_are_409_and_bad_bodies_422_naming_the_field(
    alice: httpx.Client, fake_llm: FakeOpenAIServer
) -> None:
    make_sam(alice)
    nothing = alice.post("/api/agents/sam/approvals", json={"approve": True})
    assert nothing.status_code == 409
    assert nothing.json()["detail"] == "agent 'sam' has no tool call waiting for approval"
    ask_to_remember(alice, fake_llm)
    wrong = alice.post("/api/agents/sam/approvals", json={"approve": True, "tool_call_id": "nope"})
    assert wrong.status_code == 409 and "'nope' is not waiting" in wrong.json()["detail"]
    bad = {
        "approvals.0.approve": {"approvals": [{"reason": "x"}]},
        "approvals.0.colour": {"approvals": [{"approve": True, "colour": "red"}]},
        "approvals:": {"approvals": []},
        "approve:": {"reason": "why"},
        "not both": {"approve": True, "approvals": [{"approve": True}]},
        "stream": {"approve": True, "stream": "sometimes"},
    }
    for field, body in bad.items():
        refused = alice.post("/api/agents/sam/approvals", json=body)
        assert refused.status_code == 422, body
        assert field in refused.json()["detail"], refused.json()
    assert passages(alice) == []  # none of it ran the call
    assert [c["name"] for c in alice.get("/api/agents/sam/approvals").json()] == [
        "archival_memory_insert"
    ]


def test_another_users_agent_is_404_on_both_routes(
    db: str, server: str, alice: httpx.Client, fake_llm: FakeOpenAIServer
) -> None:
    make_sam(alice)
    ask_to_remember(alice, fake_llm)
    with api(db, server, "bob") as bob:
        assert bob.get("/api/agents/sam/approvals").status_code == 404
        answer = bob.post("/api/agents/sam/approvals", json={"approve": True})
        assert answer.status_code == 404
        assert answer.json()["detail"] == "no agent named 'sam'"
    assert passages(alice) == []
    assert len(alice.get("/api/agents/sam/approvals").json()) == 1


def test_the_wait_survives_a_server_restart(db: str, fake_llm: FakeOpenAIServer) -> None:
    with live_server(db) as url, api(db, url) as client:
        make_sam(client)
        waiting = ask_to_remember(client, fake_llm)["pending_approvals"]
    with live_server(db) as url, api(db, url) as client:
        assert client.get("/api/agents/sam/approvals").json() == waiting
        assert passages(client) == []
        refused = client.post("/api/agents/sam/messages", json={"message": "hello?"})
        assert refused.status_code == 409
        fake_llm.enqueue(say("Stored."))
        done = client.post("/api/agents/sam/approvals", json={"approve": True})
        assert done.status_code == 200 and done.json()["replies"] == ["Stored."]
        assert passages(client) == ["the code is 42"]


# Letta's routes, through letta-client


def letta_agent(client: Letta) -> Any:
    return client.agents.create(
        memory_blocks=[{"label": "human", "value": "Alice.", "limit": 100}],
        model="openai/gpt-4o-mini",
        tool_rules=[{"type": "requires_approval", "tool_name": "archival_memory_insert"}],
    )


def letta_ask(client: Letta, agent_id: str, fake_llm: FakeOpenAIServer) -> Any:
    fake_llm.enqueue(
        reply(
            "store it",
            [call("archival_memory_insert", content="the code is 42", request_heartbeat=True)],
        )
    )
    return client.agents.messages.create(
        agent_id, messages=[{"role": "user", "content": "remember: code 42"}]
    )


def archival(client: Letta, agent_id: str) -> list[str]:
    return [p.text for p in client.agents.passages.list(agent_id)]


def newest_message(client: Letta, agent_id: str) -> tuple[str, str]:
    """The kind and id of the last Letta message of the newest stored one."""
    last = client.agents.messages.list(agent_id, limit=1).items[-1]
    return last.message_type, last.id


@pytest.fixture
def letta(db: str, server: str) -> Letta:
    return Letta(base_url=server, api_key=new_key(db, "alice"), max_retries=0)


def test_letta_a_waiting_call_is_an_approval_request_answered_by_its_id(
    letta: Letta, fake_llm: FakeOpenAIServer
) -> None:
    agent = letta_agent(letta)
    assert [r.type for r in agent.tool_rules] == ["requires_approval"]
    asked = letta_ask(letta, agent.id, fake_llm)
    assert asked.stop_reason.stop_reason == "requires_approval"
    assert [m.message_type for m in asked.messages] == [
        "reasoning_message",
        "approval_request_message",
    ]
    request = asked.messages[-1]
    assert request.tool_call.name == "archival_memory_insert"
    assert json.loads(request.tool_call.arguments)["content"] == "the code is 42"
    assert archival(letta, agent.id) == []
    # The history shows the waiting answer as the request, newest.
    assert newest_message(letta, agent.id) == ("approval_request_message", request.id)
    # A new message is refused, as Letta refuses it.
    with pytest.raises(ConflictError, match="waiting for approval"):
        letta.agents.messages.create(agent.id, messages=[{"role": "user", "content": "hi"}])

    fake_llm.enqueue(say("Stored."))
    done = letta.agents.messages.create(
        agent.id,
        messages=[{"type": "approval", "approve": True, "approval_request_id": request.id}],
    )
    assert done.stop_reason.stop_reason == "end_turn"
    first = done.messages[0]
    assert (first.message_type, first.status) == ("tool_return_message", "success")
    said = [m.content for m in done.messages if m.message_type == "assistant_message"]
    assert said == ["Stored."]
    assert archival(letta, agent.id) == ["the code is 42"]
    # Answered, the request shows as the call it was, with its result.
    history = [m.message_type for m in letta.agents.messages.list(agent.id, order="asc")]
    assert "approval_request_message" not in history
    assert history[-5:] == [
        "reasoning_message",
        "tool_call_message",
        "tool_return_message",
        "assistant_message",
        "tool_return_message",
    ]


def test_letta_a_denial_by_tool_call_id_streams_and_nothing_runs(
    letta: Letta, fake_llm: FakeOpenAIServer
) -> None:
    agent = letta_agent(letta)
    fake_llm.enqueue(
        reply(
            "store it",
            [call("archival_memory_insert", content="the code is 42", request_heartbeat=True)],
        )
    )
    with letta.agents.messages.create(
        agent.id, messages=[{"role": "user", "content": "remember"}], streaming=True
    ) as stream:
        items = list(stream)
    assert [i.message_type for i in items] == [
        "reasoning_message",
        "approval_request_message",
        "stop_reason",
        "usage_statistics",
    ]
    assert items[2].stop_reason == "requires_approval"
    call_id = items[1].tool_calls[0].tool_call_id

    fake_llm.enqueue(say("Not stored."))
    answer = {"type": "approval", "tool_call_id": call_id, "approve": False, "reason": "no"}
    with letta.agents.messages.create(
        agent.id,
        messages=[{"type": "approval", "approvals": [answer]}],
        streaming=True,
        stream_tokens=True,
    ) as stream:
        items = list(stream)
    # The denied call's return comes first, before the reply's pieces, and
    # the request answered is not sent again.
    denied = items[0]
    assert denied.message_type == "tool_return_message" and denied.status == "error"
    assert denied.tool_return.endswith("Their reason: no")
    said = "".join(i.content for i in items if i.message_type == "assistant_message")
    assert said == "Not stored."
    assert not [
        i for i in items if i.message_type in ("approval_request_message", "tool_call_message")
    ]
    assert [i.message_type for i in items][-2:] == ["stop_reason", "usage_statistics"]
    assert items[-2].stop_reason == "end_turn"
    assert archival(letta, agent.id) == []


def test_letta_answers_that_do_not_fit_are_refused(
    letta: Letta, fake_llm: FakeOpenAIServer
) -> None:
    agent = letta_agent(letta)
    request = letta_ask(letta, agent.id, fake_llm).messages[-1]
    stale = {"type": "approval", "approve": True, "approval_request_id": "message-nope"}
    with pytest.raises(ConflictError, match="'message-nope' is not waiting"):
        letta.agents.messages.create(agent.id, messages=[stale])
    mixed = [
        {"type": "approval", "approve": True, "approval_request_id": request.id},
        {"role": "user", "content": "and hi"},
    ]
    with pytest.raises(UnprocessableEntityError, match="approvals alone"):
        letta.agents.messages.create(agent.id, messages=mixed)
    # A client-side tool's result (type "tool") is taken now (loop/client_tools.py):
    # one for a call that does not wait is refused as an approval of it is.
    tool_return = {"type": "tool", "tool_call_id": "x", "status": "success", "tool_return": "1"}
    with pytest.raises(ConflictError, match="tool call 'x' is not waiting"):
        letta.agents.messages.create(
            agent.id, messages=[{"type": "approval", "approvals": [tool_return]}]
        )
    other = {"type": "file", "tool_call_id": "x"}
    with pytest.raises(UnprocessableEntityError, match=r"messages\.0\.approvals\.0\.type"):
        letta.agents.messages.create(
            agent.id, messages=[{"type": "approval", "approvals": [other]}]
        )
    assert archival(letta, agent.id) == []
    assert newest_message(letta, agent.id) == ("approval_request_message", request.id)


def test_letta_the_wait_survives_a_restart(db: str, fake_llm: FakeOpenAIServer) -> None:
    with live_server(db) as url:
        client = Letta(base_url=url, api_key=new_key(db, "alice"), max_retries=0)
        agent = letta_agent(client)
        request = letta_ask(client, agent.id, fake_llm).messages[-1]
    with live_server(db) as url:
        client = Letta(base_url=url, api_key=new_key(db, "alice"), max_retries=0)
        assert newest_message(client, agent.id) == ("approval_request_message", request.id)
        assert archival(client, agent.id) == []
        fake_llm.enqueue(say("Stored."))
        approvals = [
            {"type": "approval", "tool_call_id": request.tool_call.tool_call_id, "approve": True}
        ]
        client.agents.messages.create(
            agent.id, messages=[{"type": "approval", "approvals": approvals}]
        )
        assert archival(client, agent.id) == ["the code is 42"]


# OpenAI's chat completions, through the openai client


def test_openai_a_wait_is_a_stop_completion_that_says_how_to_answer(
    db: str, alice: httpx.Client, server: str, fake_llm: FakeOpenAIServer
) -> None:
    make_sam(alice, {"type": "continue_loop", "tool_name": "send_message"})  # a reply first
    chat = openai.OpenAI(base_url=server + "/v1", api_key=new_key(db, "alice"), max_retries=0)
    fake_llm.enqueue(
        reply("ack", [call("send_message", message="One moment.")]),
        reply(tool_calls=[call("archival_memory_insert", content="the code is 42")]),
    )
    answer = chat.chat.completions.create(
        model="sam", messages=[{"role": "user", "content": "remember: code 42"}]
    )
    choice = answer.choices[0]
    assert choice.finish_reason == "stop" and not choice.message.tool_calls
    call_id = alice.get("/api/agents/sam/approvals").json()[0]["id"]
    content = choice.message.content or ""
    assert content.startswith("One moment.\n\n[Waiting for your approval: archival_memory_insert(")
    assert f"[tool call {call_id}]" in content
    assert "POST /api/agents/sam/approvals" in content
    assert passages(alice) == []

    with pytest.raises(openai.ConflictError) as refused:
        chat.chat.completions.create(model="sam", messages=[{"role": "user", "content": "hi"}])
    assert refused.value.status_code == 409
    assert refused.value.body["message"].startswith("agent 'sam' is waiting for approval")
    assert refused.value.body["type"] == "invalid_request_error"
    with pytest.raises(openai.ConflictError):
        list(
            chat.chat.completions.create(
                model="sam", messages=[{"role": "user", "content": "hi"}], stream=True
            )
        )
    assert passages(alice) == [] and len(fake_llm.chat_requests) == 2


def test_openai_a_streamed_wait_ends_with_the_notice(
    db: str, alice: httpx.Client, server: str, fake_llm: FakeOpenAIServer
) -> None:
    make_sam(alice, {"type": "continue_loop", "tool_name": "send_message"})
    chat = openai.OpenAI(base_url=server + "/v1", api_key=new_key(db, "alice"), max_retries=0)
    fake_llm.enqueue(
        reply("ack", [call("send_message", message="One moment.")]),
        reply(tool_calls=[call("archival_memory_insert", content="the code is 42")]),
    )
    chunks = list(
        chat.chat.completions.create(
            model="sam", messages=[{"role": "user", "content": "remember"}], stream=True
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.startswith("One moment.\n\n[Waiting for your approval: archival_memory_insert(")
    assert text.endswith('{"approve": false, "reason": "..."}.]')
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert passages(alice) == []


def test_letta_modify_approval_for_tool_sets_and_clears_the_rule(
    letta: Letta, fake_llm: FakeOpenAIServer
) -> None:
    agent = letta.agents.create(model="openai/gpt-4o-mini")
    assert agent.tool_rules == []
    changed = letta.agents.tools.update_approval(
        "archival_memory_insert", agent_id=agent.id, body_requires_approval=True
    )
    assert [(r.type, r.tool_name) for r in changed.tool_rules] == [
        ("requires_approval", "archival_memory_insert")
    ]
    asked = letta_ask(letta, agent.id, fake_llm)
    assert asked.stop_reason.stop_reason == "requires_approval"
    assert archival(letta, agent.id) == []
    cleared = letta.agents.tools.update_approval(
        "archival_memory_insert", agent_id=agent.id, body_requires_approval=False
    )
    assert cleared.tool_rules == []
    with pytest.raises(NotFoundError, match="no tool named 'rm_rf'"):
        letta.agents.tools.update_approval("rm_rf", agent_id=agent.id, body_requires_approval=True)
