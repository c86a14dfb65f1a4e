"""Our API for the tool registry (/api/tools, /api/agents/{agent}/tools),
driven by httpx against a real server, with the fake OpenAI server as the
model: what `memgpt-lite tools ...` does, for a user of the server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.serving import live_server, new_key

from memgpt_lite.testing.script import call, reply
from memgpt_lite.testing.server import FakeOpenAIServer

SOURCE = '''
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b
'''


@pytest.fixture
def served(tmp_path: Path, fake_llm: FakeOpenAIServer) -> Iterator[tuple[httpx.Client, str]]:
    """A client with an admin key of alice's, and the database."""
    db = str(tmp_path / "api.db")
    with live_server(db) as url:
        key = new_key(db, "alice", admin=True)
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as client:
            yield client, db


def test_add_list_attach_call_detach_remove(
    served: tuple[httpx.Client, str], fake_llm: FakeOpenAIServer
) -> None:
    client, _ = served
    added = client.post("/api/tools", json={"source_code": SOURCE, "tags": ["maths"]})
    assert added.status_code == 201, added.text
    tool = added.json()
    assert (tool["name"], tool["kind"], tool["trusted"], tool["agents"]) == (
        "add",
        "python",
        True,
        [],
    )
    assert tool["json_schema"]["parameters"]["required"] == ["a", "b"] and tool["tags"] == ["maths"]
    assert client.post("/api/tools", json={"source_code": SOURCE}).status_code == 409
    renamed = client.post("/api/tools", json={"source_code": SOURCE, "name": "plus"})
    assert renamed.json()["name"] == "plus"
    replaced = client.post(
        "/api/tools", json={"source_code": SOURCE, "description": "Sum.", "replace": True}
    )
    assert replaced.json()["id"] == tool["id"] and replaced.json()["description"] == "Sum."

    assert (
        client.post("/api/agents", json={"name": "sam", "model": "gpt-4o-mini"}).status_code == 201
    )
    attached = client.post("/api/agents/sam/tools", json={"tools": ["add", "plus"]})
    assert attached.status_code == 200 and attached.json()["tool_names"] == ["add", "plus"]
    assert [(t["name"], t["agents"]) for t in client.get("/api/tools").json()] == [
        ("add", ["sam"]),
        ("plus", ["sam"]),
    ]
    fake_llm.enqueue(
        reply("", tool_calls=[call("add", a=2, b=3, request_heartbeat=True)]),
        reply("", tool_calls=[call("send_message", message="5")]),
    )
    result = client.post("/api/agents/sam/messages", json={"message": "2+3?"}).json()
    returned = fake_llm.chat_requests[-1]["messages"][-1]
    assert (returned["role"], returned["content"]) == ("tool", "5")  # run in its own process
    assert result["stop_reason"] == "send_message"

    refused = client.delete("/api/tools/add")
    assert refused.status_code == 409 and "sam" in refused.json()["detail"]
    detached = client.delete("/api/agents/sam/tools/add")
    assert detached.json()["tool_names"] == ["plus"]
    assert client.delete("/api/agents/sam/tools/add").status_code == 422
    assert client.delete("/api/tools/add").status_code == 204
    assert client.get("/api/tools/add").status_code == 404


def test_bad_input_is_one_line_and_another_user_s_tools_are_not_found(
    served: tuple[httpx.Client, str],
) -> None:
    client, db = served
    broken = client.post("/api/tools", json={"source_code": "def f(:\n"})
    assert broken.status_code == 422 and "line 1" in broken.json()["detail"]
    assert client.post("/api/tools", json={"source": SOURCE}).status_code == 422  # strict body
    assert client.post("/api/agents", json={"name": "sam", "model": "m"}).status_code == 201
    unknown = client.post("/api/agents/sam/tools", json={"tools": ["nope"]})
    assert unknown.status_code == 404 and "nope" in unknown.json()["detail"]
    assert client.post("/api/tools", json={"source_code": SOURCE}).status_code == 201
    bob = {"Authorization": f"Bearer {new_key(db, 'bob')}"}
    assert client.get("/api/tools/add", headers=bob).status_code == 404
    assert client.get("/api/tools", headers=bob).json() == []
    assert (
        client.post("/api/agents", json={"name": "bo", "model": "m"}, headers=bob).status_code
        == 201
    )
    refused = client.post("/api/agents/bo/tools", json={"tools": ["add"]}, headers=bob)
    assert refused.status_code == 404
