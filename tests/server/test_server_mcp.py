"""/mcp: the agents' MCP tools mounted by `serve` (streamable HTTP), driven
by the `mcp` SDK's own streamable HTTP client against the real app on
127.0.0.1. Behind the same API keys as every route: no key or a revoked one
is a 401, and a user reaches only their own agents."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from support.serving import live_server, new_key

from memgpt_lite import Agent
from memgpt_lite.agent.keys import create_key
from memgpt_lite.storage.open import open_storage
from memgpt_lite.testing import FakeOpenAIServer, say

MODEL = "gpt-4o-mini"


def echo(body: dict[str, Any]) -> Any:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return say(f"You said: {users[-1]['content']}")


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


@pytest.fixture
def served(fake_llm: FakeOpenAIServer, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The app on a database where alice has `sam` and bob has `ada`; its URL
    and the database."""
    fake_llm.responder = echo
    db = str(tmp_path / "agents.db")
    Agent.create("sam", MODEL, db=db, owner="alice")
    Agent.create("ada", MODEL, db=db, owner="bob")
    with live_server(db) as url:
        yield url, db


async def as_user(url: str, key: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        return [await client.call_tool(name, arguments) for name, arguments in calls]


def test_a_user_talks_to_their_agent(served, fake_llm):
    url, db = served
    key = new_key(db, "alice")
    listed, sent, memory, found = anyio.run(
        as_user,
        url,
        key,
        [
            ("list_agents", {}),
            ("send_message", {"agent": "sam", "message": "hello over MCP"}),
            ("read_memory", {"agent": "sam"}),
            ("search_memory", {"agent": "sam", "query": "MCP"}),
        ],
    )
    assert [agent["name"] for agent in listed.structured_content["result"]] == ["sam"]
    assert (sent.is_error, text(sent)) == (False, "You said: hello over MCP")
    assert fake_llm.chat_requests[-1]["messages"][-1]["content"] == "hello over MCP"
    labels = {block["label"] for block in memory.structured_content["result"]}
    assert labels == {"persona", "human"}
    recall = found.structured_content["recall"]
    assert {hit["text"] for hit in recall} == {"hello over MCP", "You said: hello over MCP"}


def test_another_users_agent_is_not_found(served, fake_llm):
    url, db = served
    key = new_key(db, "alice")
    calls = [
        ("send_message", {"agent": "ada", "message": "hi"}),
        ("read_memory", {"agent": "ada"}),
        ("search_memory", {"agent": "ada", "query": "hi"}),
    ]
    for refused in anyio.run(as_user, url, key, calls):
        assert refused.is_error and text(refused).endswith("no agent named 'ada'")
    assert fake_llm.chat_requests == []
    bobs = anyio.run(as_user, url, new_key(db, "bob"), [("list_agents", {})])
    assert [agent["name"] for agent in bobs[0].structured_content["result"]] == ["ada"]


def test_without_a_known_key_it_is_a_401(served):
    url, db = served
    bare = httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert bare.status_code == 401
    assert bare.json() == {"detail": "send an API key: Authorization: Bearer KEY"}
    with open_storage(db) as store:
        key, secret = create_key(store, "alice")
        store.revoke_api_key(key.id)
    revoked = httpx.post(
        f"{url}/mcp", json={}, headers={"Authorization": f"Bearer {secret}"}, timeout=30
    )
    assert revoked.status_code == 401
    assert revoked.json() == {"detail": "the API key is unknown or revoked"}

    async def without_key() -> None:
        async with Client(f"{url}/mcp") as client:
            await client.list_tools()

    with pytest.raises(ExceptionGroup) as raised:  # the SDK raises its error in a group
        anyio.run(without_key)
    assert raised.group_contains(MCPError, depth=None)


def test_without_keys_every_request_is_the_local_user(fake_llm, tmp_path):
    fake_llm.responder = echo
    db = str(tmp_path / "agents.db")
    Agent.create("mine", MODEL, db=db)  # the local user's
    Agent.create("theirs", MODEL, db=db, owner="alice")

    async def listed(url: str) -> list[str]:
        async with Client(f"{url}/mcp") as client:
            result = await client.call_tool("list_agents", {})
        return [agent["name"] for agent in result.structured_content["result"]]

    with live_server(db, auth=False) as url:
        assert anyio.run(listed, url) == ["mine"]
        # The SDK's guard against DNS rebinding stays on, as nothing else guards.
        foreign = httpx.post(f"{url}/mcp", json={}, headers={"Host": "evil.example"})
        assert foreign.status_code == 421
