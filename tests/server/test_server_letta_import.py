"""Letta's agents.import_file: a Letta `.af` uploaded by letta-client to a
real server. Its custom tools keep their source and are not trusted (a call
is a tool error) unless the import asks for it, which needs the right to
run code on the server. And agents.export_file, whose file imports back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from letta_client import Letta, NotFoundError, PermissionDeniedError, UnprocessableEntityError
from support.serving import live_server, new_key

from memgpt_lite.agentfile.letta_export import export_letta
from memgpt_lite.storage.open import open_storage
from memgpt_lite.testing.script import call, reply
from memgpt_lite.testing.server import FakeOpenAIServer

SOURCE = 'def shout(text: str) -> str:\n    """Say it louder."""\n    return text.upper()\n'


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "import.db")


@pytest.fixture
def server(db: str, fake_llm: FakeOpenAIServer) -> Iterator[str]:
    with live_server(db) as url:
        yield url


def client_of(db: str, server: str, user: str, *, admin: bool = False) -> Letta:
    return Letta(base_url=server, api_key=new_key(db, user, admin=admin), max_retries=0)


def letta_file(db: str, server: str) -> bytes:
    """A Letta `.af` of an agent with the custom tool `shout`, its source in
    the file as Letta writes it."""
    alice = client_of(db, server, "alice", admin=True)
    tool = alice.tools.create(source_code=SOURCE)
    alice.agents.create(name="loud", model="gpt-4o-mini", tool_ids=[tool.id])
    with open_storage(db) as store:
        raw = export_letta(store, "loud")
    [custom] = [t for t in raw["tools"] if t["name"] == "shout"]
    custom["source_code"] = SOURCE
    return json.dumps(raw).encode()


def shout_result(client: Letta, fake_llm: FakeOpenAIServer, agent_id: str) -> Any:
    fake_llm.enqueue(
        reply(tool_calls=[call("shout", text="hi", request_heartbeat=True)]),
        reply(tool_calls=[call("send_message", message="done")]),
    )
    client.agents.messages.create(agent_id, messages=[{"role": "user", "content": "go"}])
    return fake_llm.chat_requests[-1]["messages"][-1]["content"]


def test_an_imported_tool_keeps_its_source_and_waits_to_be_trusted(
    db: str, server: str, fake_llm: FakeOpenAIServer
) -> None:
    upload = letta_file(db, server)
    bob = client_of(db, server, "bob")
    imported = bob.agents.import_file(
        file=("loud.af", upload, "application/json"), name="bobs-loud", model="openai/gpt-4o"
    )
    [agent_id] = imported.agent_ids
    agent = bob.agents.retrieve(agent_id)
    assert (agent.name, agent.llm_config.model) == ("bobs-loud", "gpt-4o")
    [tool] = bob.tools.list(name="shout").items
    assert (tool.source_code, tool.metadata) == (SOURCE, {"trusted": False})
    assert "shout" in [t.name for t in agent.tools]
    assert shout_result(bob, fake_llm, agent_id).startswith("Error: tool shout is not trusted")

    with pytest.raises(PermissionDeniedError, match="trusting an agent file's tools runs code"):
        bob.agents.import_file(
            file=("loud.af", upload, "application/json"), extra_body={"trust_tools": "true"}
        )
    carol = client_of(db, server, "carol", admin=True)
    trusted = carol.agents.import_file(
        file=("loud.af", upload, "application/json"),
        override_name="carols-loud",
        extra_body={"trust_tools": "true"},
    )
    [carols] = carol.tools.list(name="shout").items
    assert carols.metadata == {"trusted": True}
    assert shout_result(carol, fake_llm, trusted.agent_ids[0]) == "HI"


def test_what_the_import_cannot_honour_is_refused(db: str, server: str) -> None:
    bob = client_of(db, server, "bob")
    with pytest.raises(UnprocessableEntityError, match="strip_messages"):
        bob.agents.import_file(file=("x.af", b"{}", "application/json"), strip_messages=True)
    with pytest.raises(UnprocessableEntityError):
        bob.agents.import_file(file=("x.af", b"not json", "application/json"))
    assert list(bob.agents.list()) == []


def said(text: str) -> Any:
    return reply(tool_calls=[call("send_message", message=text)])


def file_texts(exported: str) -> list[str]:
    """The texts of the messages of the one agent of a Letta `.af`, its
    system message left out."""
    [agent] = json.loads(exported)["agents"]
    messages = [m for m in agent["messages"] if m["role"] != "system"]
    return [part["text"] for m in messages for part in m["content"] or []]


def test_an_exported_agent_imports_back_with_a_conversation_or_no_messages(
    db: str, server: str, fake_llm: FakeOpenAIServer
) -> None:
    alice = client_of(db, server, "alice")
    human = [{"label": "human", "value": "Alice, who likes Oslo."}]
    agent = alice.agents.create(name="Trip planner", model="gpt-4o-mini", memory_blocks=human)
    trip = alice.conversations.create(agent_id=agent.id).id
    fake_llm.enqueue(said("Noted."), said("Oslo it is."))
    alice.agents.messages.create(agent.id, messages=[{"role": "user", "content": "Hello there."}])
    alice.conversations.messages.create(trip, messages=[{"role": "user", "content": "Plan Oslo."}])

    exported = alice.agents.export_file(agent.id)
    assert "Hello there." in "".join(file_texts(exported))
    assert "Plan Oslo." not in "".join(file_texts(exported))
    in_trip = alice.agents.export_file(agent.id, conversation_id=trip)
    assert "Plan Oslo." in "".join(file_texts(in_trip))
    assert "Hello there." not in "".join(file_texts(in_trip))
    assert file_texts(alice.agents.export_file(agent.id, scrub_messages=True)) == []

    bob = client_of(db, server, "bob")
    with pytest.raises(NotFoundError):
        bob.agents.export_file(agent.id)
    with pytest.raises(NotFoundError, match="no conversation"):
        alice.agents.export_file(agent.id, conversation_id="conv-unknown")
    [copy_id] = bob.agents.import_file(
        file=("trip.af", exported.encode(), "application/json")
    ).agent_ids
    copy = bob.agents.retrieve(copy_id)
    assert [b.value for b in copy.memory.blocks if b.label == "human"] == [human[0]["value"]]
    listed = bob.agents.messages.list(copy_id).items
    assert "Hello there." in [getattr(m, "content", None) for m in listed]
