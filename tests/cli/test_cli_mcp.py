"""`memgpt-lite mcp serve`, as an MCP client starts it: a process driven over
its stdin and stdout by the `mcp` SDK's own stdio client, its agents
answering through the fake OpenAI endpoint. Every agent of the database is
reached (the command line's user owns it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from support.paths import REPO

from memgpt_lite import Agent
from memgpt_lite.testing import FakeOpenAIServer, say

MODEL = "gpt-4o-mini"


def echo(body: dict[str, Any]) -> Any:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return say(f"You said: {users[-1]['content']}")


def server_for(db: Path, model: FakeOpenAIServer, home: Path) -> StdioServerParameters:
    """`memgpt-lite --db DB mcp serve`, with the fake endpoint in its environment."""
    env = {
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": model.api_key,
        "MEMGPT_LITE_HOME": str(home),
        "PYTHONPATH": str(REPO),
    }
    args = ["-m", "memgpt_lite", "--db", str(db), "mcp", "serve"]
    return StdioServerParameters(command=sys.executable, args=args, env=env)


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


@pytest.fixture
def db(fake_llm: FakeOpenAIServer, tmp_path: Path) -> Path:
    fake_llm.responder = echo
    path = tmp_path / "agents.db"
    Agent.create("sam", MODEL, db=path, owner="alice")
    Agent.create("ada", MODEL, db=path, owner="bob")
    return path


def test_the_agents_tools_over_stdio(db, fake_llm, tmp_path):
    async def session() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with Client(server_for(db, fake_llm, tmp_path / "home")) as client:
            seen["tools"] = [tool.name for tool in (await client.list_tools()).tools]
            seen["agents"] = (await client.call_tool("list_agents", {})).structured_content
            sent = await client.call_tool("send_message", {"agent": "sam", "message": "hi"})
            seen["reply"] = (sent.is_error, text(sent))
            seen["memory"] = await client.call_tool("read_memory", {"agent": "sam"})
            seen["found"] = await client.call_tool(
                "search_memory", {"agent": "sam", "query": "said"}
            )
            seen["missing"] = await client.call_tool("read_memory", {"agent": "nobody"})
            seen["empty"] = await client.call_tool("send_message", {"agent": "ada", "message": " "})
        return seen

    seen = anyio.run(session)
    assert seen["tools"] == ["list_agents", "send_message", "read_memory", "search_memory"]
    assert sorted(agent["name"] for agent in seen["agents"]["result"]) == ["ada", "sam"]
    assert seen["reply"] == (False, "You said: hi")
    assert fake_llm.chat_requests[-1]["messages"][-1]["content"] == "hi"
    blocks = seen["memory"].structured_content["result"]
    assert {block["label"] for block in blocks} == {"persona", "human"}
    assert all(
        set(block) == {"label", "description", "value", "limit", "read_only"} for block in blocks
    )
    found = json.loads(text(seen["found"]))
    assert [hit["text"] for hit in found["recall"]] == ["You said: hi"]
    assert found["archival"] == [] and found["recall_total"] == 1
    missing = seen["missing"]
    assert missing.is_error and text(missing).endswith("no agent named 'nobody'")
    assert seen["empty"].is_error and text(seen["empty"]).endswith("the message is empty")


def test_a_database_that_cannot_be_opened_is_one_line(tmp_path):
    bad = tmp_path / "notes.db"
    bad.write_text("not a database, only notes\n" * 100)
    done = subprocess.run(
        [sys.executable, "-m", "memgpt_lite", "--db", str(bad), "mcp", "serve"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("Error: ") and done.stderr.count("\n") == 1
