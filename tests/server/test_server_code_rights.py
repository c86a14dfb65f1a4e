"""Who may run code on the server's machine over HTTP: creating a tool from
Python source (or changing its source), and trusting the tools of an
imported agent file, need an admin key (`keys create --admin`), a server
started with --allow-user-code, or --no-auth (the one local user). Any
other key gets a 403 naming the rule, and nothing is stored. Driven by
letta-client and httpx against a real server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from letta_client import Letta, PermissionDeniedError
from support.serving import live_server, new_key

from memgpt_lite.testing.server import FakeOpenAIServer

SOURCE = 'def shout(text: str) -> str:\n    """Say it louder."""\n    return text.upper()\n'
RULE = (
    "runs code on the server: only admin keys may (`memgpt-lite keys create --admin`), "
    "or start the server with --allow-user-code"
)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "rights.db")


def exported_file(url: str, admin_key: str) -> dict[str, Any]:
    """An agent file whose agent has the tool `shout` attached."""
    headers = bearer(admin_key)
    created = httpx.post(f"{url}/api/tools", json={"source_code": SOURCE}, headers=headers)
    assert created.status_code == 201, created.text
    agent = {"name": "loud", "model": "gpt-4o-mini", "tools": ["shout"]}
    assert httpx.post(f"{url}/api/agents", json=agent, headers=headers).status_code == 201
    exported = httpx.get(f"{url}/api/agents/loud/export", headers=headers).json()
    assert [t["name"] for t in exported["tools"]] == ["shout"]
    return exported


def test_plain_keys_may_not_run_code_admin_keys_may(db: str, fake_llm: FakeOpenAIServer) -> None:
    with live_server(db) as url:
        admin_key, plain_key = new_key(db, "alice", admin=True), new_key(db, "alice")
        plain = Letta(base_url=url, api_key=plain_key, max_retries=0)
        for create in (plain.tools.create, plain.tools.upsert):
            with pytest.raises(PermissionDeniedError) as refused:
                create(source_code=SOURCE)
            assert refused.value.body == {"detail": f"creating a tool from source {RULE}"}
        ours = httpx.post(
            f"{url}/api/tools", json={"source_code": SOURCE}, headers=bearer(plain_key)
        )
        assert ours.status_code == 403 and ours.json()["detail"].endswith(RULE)
        assert plain.tools.list(tool_types=["custom"]).items == []  # nothing stored

        tool = Letta(base_url=url, api_key=admin_key, max_retries=0).tools.create(
            source_code=SOURCE
        )
        with pytest.raises(PermissionDeniedError, match="changing a tool's source runs code"):
            plain.tools.update(tool.id, source_code=SOURCE.replace("upper", "lower"))
        # What runs no new code is the user's own to do, with any key.
        assert plain.tools.update(tool.id, description="Louder.").description == "Louder."
        agent = plain.agents.create(model="gpt-4o-mini", tool_ids=[tool.id])
        assert "shout" in [t.name for t in agent.tools]


def test_trusting_an_imported_file_s_tools_needs_the_right(
    db: str, fake_llm: FakeOpenAIServer
) -> None:
    with live_server(db) as url:
        admin_key, plain_key = new_key(db, "alice", admin=True), new_key(db, "bob")
        exported = exported_file(url, admin_key)
        refused = httpx.post(
            f"{url}/api/agents/import",
            params={"trust_tools": "true"},
            json=exported,
            headers=bearer(plain_key),
        )
        assert refused.status_code == 403
        assert refused.json() == {"detail": f"trusting an agent file's tools {RULE}"}
        imported = httpx.post(
            f"{url}/api/agents/import",
            params={"name": "bobs-loud"},
            json=exported,
            headers=bearer(plain_key),
        )
        assert imported.status_code == 201, imported.text
        [kept] = httpx.get(f"{url}/api/tools", headers=bearer(plain_key)).json()
        assert (kept["name"], kept["source_code"], kept["trusted"]) == ("shout", SOURCE, False)
        bob = Letta(base_url=url, api_key=plain_key, max_retries=0)
        [shown] = bob.tools.list(name="shout").items
        assert shown.metadata == {"trusted": False} and shown.source_code == SOURCE

        carol_key = new_key(db, "carol", admin=True)
        trusted = httpx.post(
            f"{url}/api/agents/import",
            params={"trust_tools": "true", "name": "carols-loud"},
            json=exported,
            headers=bearer(carol_key),
        )
        assert trusted.status_code == 201, trusted.text
        carols = httpx.get(f"{url}/api/tools/shout", headers=bearer(carol_key)).json()
        assert (carols["trusted"], carols["agents"]) == (True, ["carols-loud"])


def test_allow_user_code_lets_every_key(db: str, fake_llm: FakeOpenAIServer) -> None:
    with live_server(db, allow_user_code=True) as url:
        plain = Letta(base_url=url, api_key=new_key(db, "alice"), max_retries=0)
        assert plain.tools.create(source_code=SOURCE).name == "shout"


def test_without_keys_the_local_user_may(db: str, fake_llm: FakeOpenAIServer) -> None:
    with live_server(db, auth=False) as url:
        created = httpx.post(f"{url}/api/tools", json={"source_code": SOURCE})
        assert created.status_code == 201, created.text
        assert Letta(base_url=url, max_retries=0).tools.retrieve("shout").name == "shout"
