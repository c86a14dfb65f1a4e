"""Letta's providers (bring your own key), driven against a real server as
Letta Code's `/connect` drives them: check the key, create the provider (or
give it a new key), list the models under its name, make an agent with one
and send through it, with the provider's key; two users, each seeing only
their own. A provider's URL is one the server may reach, or nothing is
stored and nothing connected to (a local listener counts connections).

letta-client 1.x has no `providers` resource, so its own `client.get/post/
patch/delete(path, cast_to=object, ...)` send Letta's bodies, as Letta Code's
own requests do (its `GET /v1/providers` without the slash too)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from letta_client import (
    ConflictError,
    Letta,
    NotFoundError,
    PermissionDeniedError,
    UnprocessableEntityError,
)
from support.listener import Listener, local_listener
from support.serving import live_server, new_key

from memgpt_lite.testing.script import say
from memgpt_lite.testing.server import FakeOpenAIServer

KEY = "sk-alice-brought-this-42"
RULE = "memgpt-lite serve --allow-endpoint URL"


@pytest.fixture
def theirs() -> Iterator[FakeOpenAIServer]:
    """Alice's own model endpoint, which takes only her key."""
    with FakeOpenAIServer(api_key=KEY) as endpoint:
        yield endpoint


@pytest.fixture
def server(db: str, fake_llm: FakeOpenAIServer, theirs: FakeOpenAIServer) -> Iterator[str]:
    with live_server(db, allow_endpoints=[theirs.base_url]) as url:
        yield url


def letta(db: str, server: str, user: str) -> Letta:
    return Letta(base_url=server, api_key=new_key(db, user), max_retries=0)


def connect(client: Letta, **body: Any) -> dict[str, Any]:
    """Letta Code's create (`createProvider`)."""
    return client.post("/v1/providers", cast_to=object, body=body)


def said(client: Letta, agent_id: str, text: str) -> list[str]:
    answer = client.agents.messages.create(agent_id, messages=[{"role": "user", "content": text}])
    return [m.content for m in answer.messages if m.message_type == "assistant_message"]


def test_a_users_provider_serves_their_agents_with_their_key(
    db: str, server: str, theirs: FakeOpenAIServer, fake_llm: FakeOpenAIServer
) -> None:
    alice, bob = letta(db, server, "alice"), letta(db, server, "bob")
    check = {"provider_type": "openai", "base_url": theirs.base_url}
    with pytest.raises(UnprocessableEntityError, match="the provider refused it"):
        alice.post("/v1/providers/check", cast_to=object, body={**check, "api_key": "sk-no"})
    ok = alice.post("/v1/providers/check", cast_to=object, body={**check, "api_key": KEY})
    assert ok == {"message": "Valid api key for provider_type=openai"}

    made = connect(alice, name="lc-openai", api_key=KEY, **check)
    assert made["id"].startswith("provider-") and made["base_url"] == theirs.base_url
    assert (made["provider_category"], made["api_key"], made["api_key_enc"]) == ("byok", None, None)
    stored = b"".join(p.read_bytes() for p in Path(db).parent.glob("letta.db*"))
    assert KEY.encode() not in stored
    with sqlite3.connect(db) as conn:
        [(sealed,)] = conn.execute("SELECT api_key FROM providers").fetchall()
    assert sealed.startswith("sealed:")
    with pytest.raises(ConflictError, match="a provider named 'lc-openai' already exists"):
        connect(alice, name="lc-openai", api_key=KEY, **check)
    with pytest.raises(ConflictError, match="one of the server's own providers'"):
        connect(alice, name="openai", api_key=KEY, **check)
    with pytest.raises(UnprocessableEntityError, match="'my/openai' cannot name a provider"):
        connect(alice, name="my/openai", api_key=KEY, **check)
    with pytest.raises(UnprocessableEntityError, match="OpenAI's chat completions API only"):
        connect(alice, name="lc-anthropic", provider_type="anthropic", api_key=KEY)

    # Each user sees their own: another's is a 404, word for word an unknown id's.
    assert [p["id"] for p in alice.get("/v1/providers", cast_to=object)] == [made["id"]]
    assert bob.get("/v1/providers/", cast_to=object) == []
    unknown = "provider-00000000000000000000000000000000"
    for ref in (made["id"], unknown):
        with pytest.raises(NotFoundError, match=f"no provider with id '{ref}'"):
            bob.get(f"/v1/providers/{ref}", cast_to=object)
    with pytest.raises(NotFoundError):
        bob.post(f"/v1/providers/{made['id']}/check", cast_to=object)
    with pytest.raises(NotFoundError):
        bob.delete(f"/v1/providers/{made['id']}", cast_to=object)
    connect(bob, name="lc-openai", api_key="sk-bob", **check)

    handles = {m.handle: m for m in alice.models.list()}
    assert handles["lc-openai/fake-model"].provider_category == "byok"
    # Bob's provider of that name has a key the endpoint refuses: it lists nothing
    # (alice's answer is kept for her key alone).
    assert "lc-openai/fake-model" not in {m.handle for m in bob.models.list()}

    agent = alice.agents.create(name="byok", model="lc-openai/fake-model")
    assert agent.llm_config.handle == "lc-openai/fake-model"
    assert agent.llm_config.model_endpoint == theirs.base_url
    theirs.enqueue(say("on alice's key"))
    assert said(alice, agent.id, "hi") == ["on alice's key"]
    assert len(theirs.chat_requests) == 1  # a wrong key's would be rejected
    assert not [r for r in theirs.rejections if r.path != "/v1/models"]

    # Letta Code's /connect again with a new key: a modify, which the agent uses next.
    theirs.api_key = "sk-rotated"
    changed = alice.patch(
        f"/v1/providers/{made['id']}", cast_to=object, body={"api_key": "sk-rotated"}
    )
    assert changed["api_key"] is None
    assert alice.post(f"/v1/providers/{made['id']}/check", cast_to=object)["message"]
    assert alice.patch(f"/v1/providers/{made['id']}/refresh", cast_to=object)["id"] == made["id"]
    theirs.enqueue(say("on the new key"))
    assert said(alice, agent.id, "again") == ["on the new key"]

    # A handle of the server's own leaves the provider; the provider's takes it back.
    own = alice.agents.update(agent.id, model="openai/fake-model").llm_config
    assert (own.handle, own.model_endpoint, own.provider_name) == ("fake-model", None, None)
    back = alice.agents.update(agent.id, model="lc-openai/fake-model").llm_config
    assert (back.handle, back.model_endpoint) == ("lc-openai/fake-model", theirs.base_url)
    # A new URL for the provider is its agents' too.
    body = {"api_key": "sk-rotated", "base_url": fake_llm.base_url}
    assert alice.patch(f"/v1/providers/{made['id']}", cast_to=object, body=body)["base_url"]
    assert alice.agents.retrieve(agent.id).llm_config.model_endpoint == fake_llm.base_url

    gone = alice.delete(f"/v1/providers/{made['id']}", cast_to=object)
    assert gone == {"message": f"Provider id={made['id']} successfully deleted"}
    with pytest.raises(UnprocessableEntityError, match="provider 'lc-openai' is not connected"):
        said(alice, agent.id, "and now?")
    assert [p["name"] for p in bob.get("/v1/providers", cast_to=object)] == ["lc-openai"]


def test_a_provider_url_the_server_may_not_reach_is_never_connected_to(
    db: str, server: str, theirs: FakeOpenAIServer
) -> None:
    alice = letta(db, server, "alice")
    with local_listener() as listener:
        elsewhere: Listener = listener
        body = {"provider_type": "openai", "api_key": KEY, "base_url": elsewhere.url}
        with pytest.raises(PermissionDeniedError, match=RULE):
            alice.post("/v1/providers/check", cast_to=object, body=body)
        with pytest.raises(PermissionDeniedError, match=RULE):
            connect(alice, name="lc-elsewhere", **body)
        made = connect(alice, name="lc-ok", **{**body, "base_url": theirs.base_url})
        with pytest.raises(PermissionDeniedError, match=RULE):
            alice.patch(
                f"/v1/providers/{made['id']}",
                cast_to=object,
                body={"api_key": KEY, "base_url": elsewhere.url},
            )
        # Letta Code's /connect sends no URL: the type's own, which this server does not allow.
        with pytest.raises(PermissionDeniedError, match="'https://api.openai.com/v1'"):
            alice.post(
                "/v1/providers/check",
                cast_to=object,
                body={"provider_type": "openai", "api_key": KEY},
            )
        # A local server's type with no URL gets its usual one, which is not allowed here.
        with pytest.raises(PermissionDeniedError, match="'http://localhost:11434/v1'"):
            connect(alice, name="lc-ollama", provider_type="ollama", api_key="not-needed")
        assert elsewhere.accepted == 0
    [kept] = alice.get("/v1/providers", cast_to=object)
    assert (kept["name"], kept["base_url"]) == ("lc-ok", theirs.base_url)
