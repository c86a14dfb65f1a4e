"""Letta's MCP server routes (mcp_servers.create, list, retrieve, update,
delete, tools.list, tools.run, refresh, and the older ones by name), driven
by letta-client against a real server, with the test MCP server
(tests/support/mcp_server.py) over stdio and streamable HTTP and the fake
OpenAI server as the model. A stdio server runs a command on the server's
machine: admin keys only. A secret (an env or header value) is never
answered back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from letta_client import (
    APIStatusError,
    ConflictError,
    Letta,
    NotFoundError,
    PermissionDeniedError,
    UnprocessableEntityError,
)
from support.listener import local_listener
from support.mcp_server import start_http_server, stdio_command
from support.serving import live_server, new_key

from memgpt_lite.testing.script import call, reply
from memgpt_lite.testing.server import FakeOpenAIServer

SECRET = "s3cret-value"
# Allowed, and nothing listens there: reaching it fails.
UNREACHABLE = "http://127.0.0.1:9/mcp"


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "mcp.db")


@pytest.fixture
def server(db: str, fake_llm: FakeOpenAIServer) -> Iterator[str]:
    with live_server(db) as url:
        yield url


def client_of(db: str, server: str, user: str = "alice", *, admin: bool = False) -> Letta:
    return Letta(base_url=server, api_key=new_key(db, user, admin=admin), max_retries=0)


def stdio_config(**env: str) -> dict[str, Any]:
    command, args = stdio_command()
    return {"mcp_server_type": "stdio", "command": command, "args": args, "env": env}


def tool_result(
    client: Letta, fake_llm: FakeOpenAIServer, agent_id: str, tool: str, **arguments: Any
) -> str:
    """What the model is told when the agent calls its tool `tool`."""
    fake_llm.enqueue(
        reply(tool_calls=[call(tool, request_heartbeat=True, **arguments)]),
        reply(tool_calls=[call("send_message", message="done")]),
    )
    client.agents.messages.create(agent_id, messages=[{"role": "user", "content": "go"}])
    told = fake_llm.chat_requests[-1]["messages"][-1]
    assert told["role"] == "tool"
    return str(told["content"])


def test_a_stdio_server_its_tools_refresh_and_delete(
    db: str, server: str, fake_llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    admin = client_of(db, server, admin=True)
    changes = tmp_path / "changes.json"
    config = stdio_config(API_TOKEN=SECRET, MCP_TEST_CHANGES=str(changes))
    created: Any = admin.mcp_servers.create(server_name="calc", config=config)
    assert (created.server_name, created.mcp_server_type) == ("calc", "stdio")
    assert (created.command, created.args) == (config["command"], config["args"])
    assert created.env == {"API_TOKEN": "***", "MCP_TEST_CHANGES": "***"}
    headers = {"Authorization": f"Bearer {new_key(db, 'alice')}"}
    for path in ("/v1/mcp-servers/", f"/v1/mcp-servers/{created.id}"):
        shown = httpx.get(f"{server}{path}", headers=headers)
        assert shown.status_code == 200 and SECRET not in shown.text
    assert [s.server_name for s in admin.mcp_servers.list()] == ["calc"]  # type: ignore[union-attr]
    assert admin.mcp_servers.retrieve(created.id).id == created.id  # type: ignore[union-attr]

    tools = {t.name: t for t in admin.mcp_servers.tools.list(created.id)}
    assert {"add", "env", "pid", "calc__text_upper"} <= set(tools)
    assert tools["add"].tool_type == "external_mcp"
    assert tools["add"].metadata == {"trusted": True, "mcp": {"server_name": "calc"}}
    assert admin.mcp_servers.tools.retrieve(tools["add"].id, mcp_server_id=created.id).name == "add"
    assert "add" in [t.name for t in admin.tools.list(tool_types=["external_mcp"])]

    # Letta Code's way, by the server's name: its tools live, then a tool's record.
    by_name = httpx.get(f"{server}/v1/tools/mcp/servers", headers=headers).json()
    assert by_name == {
        "calc": {
            "server_name": "calc",
            "type": "stdio",
            **{k: config[k] for k in ("command", "args")},
        }
    }
    listed = httpx.get(f"{server}/v1/tools/mcp/servers/calc/tools", headers=headers).json()
    assert {"add", "env", "pid", "text.upper"} <= {t["name"] for t in listed}
    assert next(t for t in listed if t["name"] == "add")["inputSchema"]["type"] == "object"
    record = httpx.post(f"{server}/v1/tools/mcp/servers/calc/text.upper", headers=headers)
    assert record.json()["id"] == tools["calc__text_upper"].id
    missing = httpx.post(f"{server}/v1/tools/mcp/servers/calc/nothing", headers=headers)
    assert missing.status_code == 404 and "refresh the server" in missing.json()["detail"]
    bob = {"Authorization": f"Bearer {new_key(db, 'bob')}"}
    assert httpx.get(f"{server}/v1/tools/mcp/servers/calc/tools", headers=bob).status_code == 404
    assert httpx.get(f"{server}/v1/tools/mcp/servers", headers=bob).json() == {}

    agent = admin.agents.create(model="gpt-4o-mini", tool_ids=[tools["env"].id])
    assert tool_result(admin, fake_llm, agent.id, "env", name="API_TOKEN") == SECRET

    changed = {**config, "env": {"API_TOKEN": "other", "MCP_TEST_CHANGES": str(changes)}}
    updated: Any = admin.mcp_servers.update(created.id, config=changed)
    assert (updated.id, updated.env) == (
        created.id,
        {"API_TOKEN": "***", "MCP_TEST_CHANGES": "***"},
    )
    assert tool_result(admin, fake_llm, agent.id, "env", name="API_TOKEN") == "other"

    changes.write_text(json.dumps({"hide": ["pid", "env"]}))
    refreshed: Any = admin.mcp_servers.refresh(created.id)
    assert refreshed["deleted"] == ["pid"] and refreshed["kept_attached"] == {"env": [agent.name]}
    assert "pid" not in [t.name for t in admin.mcp_servers.tools.list(created.id)]

    with pytest.raises(ConflictError, match=f"env \\({agent.name}\\)"):
        admin.mcp_servers.delete(created.id)
    admin.agents.tools.detach(tools["env"].id, agent_id=agent.id)
    admin.mcp_servers.delete(created.id)
    assert admin.mcp_servers.list() == []
    with pytest.raises(NotFoundError):
        admin.mcp_servers.retrieve(created.id)
    assert admin.tools.list(tool_types=["external_mcp"]).items == []


def test_only_admin_keys_add_a_stdio_server(db: str, server: str) -> None:
    plain = client_of(db, server)
    with pytest.raises(PermissionDeniedError) as refused:
        plain.mcp_servers.create(server_name="calc", config=stdio_config())
    assert refused.value.body == {
        "detail": "adding a stdio MCP server runs code on the server: only admin keys may "
        "(`memgpt-lite keys create --admin`), or start the server with --allow-user-code"
    }
    assert plain.mcp_servers.list() == []


def test_allow_user_code_lets_any_key_add_a_stdio_server(
    db: str, fake_llm: FakeOpenAIServer
) -> None:
    with live_server(db, allow_user_code=True) as url:
        plain = client_of(db, url)
        created: Any = plain.mcp_servers.create(server_name="calc", config=stdio_config())
        assert "add" in [t.name for t in plain.mcp_servers.tools.list(created.id)]
        plain.mcp_servers.delete(created.id)


def test_a_streamable_http_server_for_any_key_with_its_headers_sent(
    db: str, fake_llm: FakeOpenAIServer
) -> None:
    with start_http_server() as url, live_server(db, allow_endpoints=[url]) as server:
        plain = client_of(db, server)
        created: Any = plain.mcp_servers.create(
            server_name="remote",
            config={
                "mcp_server_type": "streamable_http",
                "server_url": url,
                "auth_token": SECRET,
                "custom_headers": {"X-Team": "blue"},
            },
        )
        assert (created.mcp_server_type, created.server_url) == ("streamable_http", url)
        assert created.custom_headers == {"X-Team": "***", "Authorization": "***"}
        assert created.auth_token is None
        [header] = [t for t in plain.mcp_servers.tools.list(created.id) if t.name == "header"]
        agent = plain.agents.create(model="gpt-4o-mini", tool_ids=[header.id])
        said = tool_result(plain, fake_llm, agent.id, "header", name="authorization")
        assert said == f"Bearer {SECRET}"
        assert tool_result(plain, fake_llm, agent.id, "header", name="x-team") == "blue"
        plain.agents.tools.detach(header.id, agent_id=agent.id)
        plain.mcp_servers.delete(created.id)


def test_bad_configurations_are_refused_in_one_line(db: str, fake_llm: FakeOpenAIServer) -> None:
    unreachable = {"mcp_server_type": "streamable_http", "server_url": UNREACHABLE}
    with local_listener() as listener, live_server(db, allow_endpoints=[UNREACHABLE]) as server:
        _refused_in_one_line(db, server, listener, unreachable)
        assert listener.accepted == 0


def _refused_in_one_line(db: str, server: str, listener: Any, unreachable: dict[str, str]) -> None:
    plain = client_of(db, server)
    # A URL the server does not allow is never reached, as an agent's model endpoint.
    elsewhere = {"mcp_server_type": "streamable_http", "server_url": listener.url}
    with pytest.raises(PermissionDeniedError, match="is not allowed: .*--allow-endpoint"):
        plain.mcp_servers.create(server_name="web", config=elsewhere)  # type: ignore[arg-type]
    for config, expected in (
        ({"mcp_server_type": "sse", "server_url": "http://127.0.0.1:1/sse"}, "SSE servers"),
        (
            {"mcp_server_type": "streamable_http", "server_url": "ftp://x/mcp"},
            "http:// or https://",
        ),
    ):
        with pytest.raises(UnprocessableEntityError, match=expected):
            plain.mcp_servers.create(server_name="web", config=config)  # type: ignore[arg-type]
    with pytest.raises(APIStatusError) as failed:
        plain.mcp_servers.create(server_name="web", config=unreachable)  # type: ignore[arg-type]
    assert failed.value.status_code == 502
    assert str(failed.value.body["detail"]).startswith("MCP server 'web' ")  # type: ignore[index]
    assert plain.mcp_servers.list() == []  # nothing stored
    headers = {"Authorization": f"Bearer {new_key(db, 'alice')}"}
    unbuilt = httpx.post(f"{server}/v1/tools/mcp/servers/connect", headers=headers, json={})
    assert unbuilt.status_code == 501, unbuilt.text


def test_another_user_s_server_is_not_found(db: str, server: str) -> None:
    alice = client_of(db, server, admin=True)
    created: Any = alice.mcp_servers.create(server_name="calc", config=stdio_config())
    bob = client_of(db, server, "bob", admin=True)
    for attempt in (
        lambda: bob.mcp_servers.retrieve(created.id),
        lambda: bob.mcp_servers.tools.list(created.id),
        lambda: bob.mcp_servers.refresh(created.id),
        lambda: bob.mcp_servers.delete(created.id),
    ):
        with pytest.raises(NotFoundError):
            attempt()
    assert bob.mcp_servers.list() == []
    alice.mcp_servers.delete(created.id)


def test_an_http_server_changed_run_and_removed_by_id_and_by_name(
    db: str, fake_llm: FakeOpenAIServer
) -> None:
    with (
        start_http_server() as url,
        local_listener() as listener,
        live_server(db, allow_endpoints=[url, UNREACHABLE]) as server,
    ):
        _changed_run_and_removed(db, server, url, listener)


def _changed_run_and_removed(db: str, server: str, url: str, listener: Any) -> None:
    """Letta's older routes by name (add, test, execute, update, resync,
    delete) and mcp_servers.update / tools.run, on one HTTP server: each
    change reaches the server; another user's attempts, a stdio change by a
    plain key and an SSE test are refused before anything is reached."""
    alice, plain = {"Authorization": f"Bearer {new_key(db, 'alice')}"}, client_of(db, server)
    bob = {"Authorization": f"Bearer {new_key(db, 'bob')}"}
    older = f"{server}/v1/tools/mcp/servers"
    config = {"server_name": "remote", "type": "streamable_http", "server_url": url}
    tested = httpx.post(f"{older}/test", headers=alice, json={**config, "auth_token": SECRET})
    assert "header" in [t["name"] for t in tested.json()["tools"]] and SECRET not in tested.text
    assert plain.mcp_servers.list() == []  # testing stores nothing
    added = httpx.put(older, headers=alice, json={**config, "auth_token": SECRET})
    assert added.json() == [{k: v for k, v in config.items()}] and SECRET not in added.text

    def said(header: str, route: str = "by name") -> str:
        if route == "by name":
            run = httpx.post(
                f"{older}/remote/tools/header/execute",
                headers=alice,
                json={"args": {"name": header}},
            ).json()
            return str(run["func_return"])
        [tool] = [t for t in plain.mcp_servers.tools.list(created.id) if t.name == "header"]
        ran = plain.mcp_servers.tools.run(tool.id, mcp_server_id=created.id, args={"name": header})
        assert ran.status == "success"
        return str(ran.func_return)

    [created] = plain.mcp_servers.list()  # type: ignore[misc]
    assert said("authorization") == f"Bearer {SECRET}"
    updated: Any = plain.mcp_servers.update(
        created.id,  # type: ignore[union-attr]
        config={
            "mcp_server_type": "streamable_http",
            "server_url": url,
            "auth_token": "second",
            "custom_headers": {"X-Team": "red"},
        },
    )
    assert updated.custom_headers == {"Authorization": "***", "X-Team": "***"}
    assert (said("authorization", "by id"), said("x-team", "by id")) == ("Bearer second", "red")
    patched = httpx.patch(f"{older}/remote", headers=alice, json={"token": "third"})
    assert patched.json() == config and "third" not in patched.text
    assert (said("authorization"), said("x-team")) == ("Bearer third", "red")

    unreachable = {"mcp_server_type": "streamable_http", "server_url": UNREACHABLE}
    with pytest.raises(APIStatusError) as failed:
        plain.mcp_servers.update(created.id, config=unreachable)  # type: ignore[union-attr, arg-type]
    assert failed.value.status_code == 502
    with pytest.raises(PermissionDeniedError, match="changing a stdio MCP server"):
        plain.mcp_servers.update(created.id, config=stdio_config())  # type: ignore[union-attr, arg-type]
    assert said("authorization") == "Bearer third"  # neither changed anything

    to_listener = {"mcp_server_type": "streamable_http", "server_url": listener.url}
    for method, path, body in (
        ("PATCH", f"/v1/mcp-servers/{created.id}", {"config": to_listener}),  # type: ignore[union-attr]
        ("PATCH", "/v1/tools/mcp/servers/remote", {"server_url": listener.url}),
        ("POST", "/v1/tools/mcp/servers/remote/tools/header/execute", {"args": {}}),
        ("POST", "/v1/tools/mcp/servers/remote/resync", None),
        ("DELETE", "/v1/tools/mcp/servers/remote", None),
    ):
        refused = httpx.request(method, f"{server}{path}", headers=bob, json=body)
        assert refused.status_code == 404, (path, refused.text)
    sse = {"server_name": "x", "type": "sse", "server_url": listener.url}
    assert httpx.post(f"{older}/test", headers=alice, json=sse).status_code == 422
    assert listener.accepted == 0

    resynced = httpx.post(f"{older}/remote/resync", headers=alice).json()
    assert "header" in resynced["unchanged"]
    assert httpx.delete(f"{older}/remote", headers=alice).json() == []
    assert plain.tools.list(tool_types=["external_mcp"]).items == []
