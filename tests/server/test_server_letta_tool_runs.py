"""Running tools through Letta's routes: an agent's tool by name
(`agents.tools.run`, letta-client 1.x), a tool from source run once
(`POST /v1/tools/run`) and a source's schema (`POST
/v1/tools/generate-schema`), which letta-client 1.x does not call (its
0.1.x did), through httpx with Letta's bodies. A source runs in a process
of its own, and only for a caller who may run code on the server."""

from __future__ import annotations

import httpx
import pytest
from letta_client import Letta, NotFoundError
from support.serving import new_key

FORECAST = '''
def forecast(city: str, days: int = 1) -> str:
    """The weather to come.

    Args:
        city: Where.
        days: How many days ahead.
    """
    import os
    return f"{city}: {os.environ.get('SKY', 'sun')} for {days} days"
'''


def test_an_agent_s_tool_runs_by_name_outside_a_step(client: Letta, db: str, server: str) -> None:
    agent = client.agents.create(
        model="openai/gpt-4o-mini", memory_blocks=[{"label": "human", "value": "Alice."}]
    )
    done = client.agents.tools.run(
        "core_memory_append", agent_id=agent.id, args={"label": "human", "content": "Likes tea."}
    )
    assert done.status == "success" and "Appended to block 'human'" in str(done.func_return)
    human = client.agents.blocks.retrieve("human", agent_id=agent.id)
    assert human.value == "Alice.\nLikes tea."
    assert done.agent_state is not None and done.agent_state.id == agent.id
    assert done.stdout == [] and done.stderr == []

    failed = client.agents.tools.run(
        "core_memory_append", agent_id=agent.id, args={"label": "nowhere", "content": "x"}
    )
    assert failed.status == "error" and "nowhere" in str(failed.func_return)
    with pytest.raises(NotFoundError, match="has no tool named 'no_such_tool'"):
        client.agents.tools.run("no_such_tool", agent_id=agent.id, args={})
    bob = Letta(base_url=server, api_key=new_key(db, "bob"), max_retries=0)
    with pytest.raises(NotFoundError):
        bob.agents.tools.run("core_memory_append", agent_id=agent.id, args={"label": "human"})
    assert client.agents.blocks.retrieve("human", agent_id=agent.id).value == human.value


def test_a_source_runs_once_and_its_schema_is_read(db: str, server: str) -> None:
    def post(path: str, body: dict, *, admin: bool = True) -> httpx.Response:
        key = new_key(db, "alice", admin=admin)
        headers = {"Authorization": f"Bearer {key}"}
        return httpx.post(f"{server}{path}", json=body, headers=headers, timeout=60)

    ran = post("/v1/tools/run", {"source_code": FORECAST, "args": {"city": "Oslo", "days": 2}})
    assert ran.status_code == 200, ran.text
    shown = ran.json()
    assert (shown["message_type"], shown["status"], shown["name"]) == (
        "tool_return_message",
        "success",
        "forecast",
    )
    assert shown["tool_return"] == "Oslo: sun for 2 days"
    body = {"source_code": FORECAST, "args": {"city": "Oslo"}, "env_vars": {"SKY": "rain"}}
    assert post("/v1/tools/run", body).json()["tool_return"] == "Oslo: rain for 1 days"
    wrong = post("/v1/tools/run", {"source_code": FORECAST, "args": {"town": "Oslo"}})
    assert wrong.status_code == 200 and wrong.json()["status"] == "error"
    assert "city" in wrong.json()["tool_return"]
    broken = post("/v1/tools/run", {"source_code": "def broken(:\n", "args": {}})
    assert broken.status_code == 422 and "source_code" in broken.json()["detail"]

    schema = post("/v1/tools/generate-schema", {"code": FORECAST})
    assert schema.status_code == 200, schema.text
    assert schema.json()["name"] == "forecast"
    assert schema.json()["parameters"]["required"] == ["city"]
    assert set(schema.json()["parameters"]["properties"]) == {"city", "days"}
    assert (
        post("/v1/tools/generate-schema", {"code": "x", "source_type": "typescript"}).status_code
        == 422
    )

    for path, sent in [
        ("/v1/tools/run", {"source_code": FORECAST, "args": {}}),
        ("/v1/tools/generate-schema", {"code": FORECAST}),
    ]:
        refused = post(path, sent, admin=False)
        assert refused.status_code == 403 and "runs code on the server" in refused.json()["detail"]
    # Nothing was stored: the run and the schema register no tool.
    assert "forecast" not in str(
        httpx.get(
            f"{server}/v1/tools", headers={"Authorization": f"Bearer {new_key(db, 'alice')}"}
        ).json()
    )
