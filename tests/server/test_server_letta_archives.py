"""Letta's archives, driven by letta-client 1.x against a real server, with
two users: named archives made, listed, changed and deleted; their
passages; an archive attached to agents, which share it (an agent's
inserts go to it, its lists and searches take it in), through a real step
of an agent whose model searches it; and nothing of one user's reachable by
another. The routes letta-client 1.x lacks (an archive's agents) are called
through its own `client.get`."""

from __future__ import annotations

from typing import Any

import pytest
from letta_client import ConflictError, Letta, NotFoundError, UnprocessableEntityError
from support.serving import new_key

from memgpt_lite.testing.script import call, reply
from memgpt_lite.testing.server import FakeOpenAIServer

MISSING = "archive-00000000000000000000000000000000"
EMBEDDING = "openai/text-embedding-3-small"


def agent(client: Letta, name: str) -> Any:
    return client.agents.create(name=name, model="openai/gpt-4o-mini")


def ids(items: Any) -> list[str]:
    return [item.id for item in items]


def texts(client: Letta, agent_id: str) -> list[str]:
    return [p.text for p in client.agents.passages.list(agent_id)]


def test_archives_are_made_listed_changed_and_each_users_own(db: str, server: str) -> None:
    alice = Letta(base_url=server, api_key=new_key(db, "alice"), max_retries=0)
    bob = Letta(base_url=server, api_key=new_key(db, "bob"), max_retries=0)
    sam = agent(alice, "sam")
    kb = alice.archives.create(name="kb", description="shared facts", embedding=EMBEDDING)
    faq = alice.archives.create(name="faq")
    bobs_kb = bob.archives.create(name="kb")  # another user's name may be the same
    assert kb.id.startswith("archive-") and kb.description == "shared facts"
    assert kb.embedding_config.embedding_model == "text-embedding-3-small"
    assert faq.embedding_config.embedding_model == "none"  # searched by words
    with pytest.raises(UnprocessableEntityError, match="name"):
        alice.post("/v1/archives/", cast_to=object, body={"description": "no name"})

    own = f"archive-{sam.id.removeprefix('agent-')}"  # sam's own archival memory
    assert ids(alice.archives.list()) == [faq.id, kb.id, own]  # newest first
    assert ids(alice.archives.list(order="asc", limit=2).items) == [own, kb.id]
    assert ids(alice.archives.list(order="asc", after=kb.id)) == [faq.id]
    assert ids(alice.archives.list(name="kb")) == [kb.id]
    assert ids(alice.archives.list(agent_id=sam.id)) == [own]
    assert alice.archives.retrieve(own).name == "sam's Archive"
    assert ids(bob.archives.list()) == [bobs_kb.id]
    for client, archive_id in ((bob, kb.id), (alice, MISSING), (bob, own)):  # worded alike
        with pytest.raises(NotFoundError) as missing:
            client.archives.retrieve(archive_id)
        assert missing.value.body == {"detail": f"no archive with id '{archive_id}'"}
    with pytest.raises(NotFoundError):
        bob.archives.passages.create(kb.id, text="planted")
    with pytest.raises(NotFoundError):
        bob.archives.delete(kb.id)

    renamed = alice.archives.update(kb.id, name="facts")
    assert (renamed.name, renamed.description) == ("facts", "shared facts")
    with pytest.raises(UnprocessableEntityError, match="own archival memory"):
        alice.archives.update(own, name="x")
    with pytest.raises(UnprocessableEntityError, match="own archival memory"):
        alice.archives.delete(own)
    alice.archives.delete(faq.id)
    assert ids(alice.archives.list()) == [kb.id, own]
    assert alice.get(f"/v1/archives/{kb.id}/agents", cast_to=object) == []


def test_agents_share_the_archive_attached_to_them(db: str, server: str) -> None:
    alice = Letta(base_url=server, api_key=new_key(db, "alice"), max_retries=0)
    bob = Letta(base_url=server, api_key=new_key(db, "bob"), max_retries=0)
    sam, max_ = agent(alice, "sam"), agent(alice, "max")
    [note] = alice.agents.passages.create(sam.id, text="Sam's own note.")
    kb = alice.archives.create(name="kb", embedding=EMBEDDING)
    code = alice.archives.passages.create(kb.id, text="The vault code is 7421.", tags=["vault"])
    batch = alice.archives.passages.create_many(
        kb.id, passages=[{"text": "The vault is in room 9."}, {"text": "Lunch is at noon."}]
    )
    assert code.archive_id == kb.id and code.tags == ["vault"]
    assert [p.text for p in batch] == ["The vault is in room 9.", "Lunch is at noon."]

    alice.agents.archives.attach(kb.id, agent_id=sam.id)
    alice.agents.archives.attach(kb.id, agent_id=sam.id)  # attached already: nothing changes
    alice.agents.archives.attach(kb.id, agent_id=max_.id)
    other = alice.archives.create(name="other")
    with pytest.raises(ConflictError, match="attached already: detach it first"):
        alice.agents.archives.attach(other.id, agent_id=sam.id)
    with pytest.raises(NotFoundError):
        bob.agents.archives.attach(kb.id, agent_id=agent(bob, "thief").id)
    assert ids(alice.archives.list(agent_id=sam.id)) == [kb.id, f"archive-{sam.id[6:]}"]
    shared = alice.get(
        f"/v1/archives/{kb.id}/agents", cast_to=object, options={"params": {"order": "asc"}}
    )
    assert [a["id"] for a in shared] == [sam.id, max_.id]

    # An insert through one agent goes to the archive: the other has it too.
    [saved] = alice.agents.passages.create(sam.id, text="The vault moved to room 12.")
    assert saved.archive_id == kb.id
    assert "The vault moved to room 12." in texts(alice, max_.id)
    assert set(texts(alice, sam.id)) == {
        "Sam's own note.",
        "The vault code is 7421.",
        "The vault is in room 9.",
        "Lunch is at noon.",
        "The vault moved to room 12.",
    }
    found = alice.agents.passages.search(sam.id, query="vault code")
    assert found.results[0].content == "The vault code is 7421."
    searched = alice.passages.search(query="vault code", archive_id=kb.id)
    assert searched[0].passage.id == code.id and searched[0].score == 1
    everywhere = alice.passages.search(query="own note")  # every archive of alice's
    assert everywhere[0].passage.text == "Sam's own note." and everywhere[1].score == 0.5

    alice.archives.passages.delete(code.id, archive_id=kb.id)  # gone for both agents
    assert "The vault code is 7421." not in texts(alice, max_.id)
    with pytest.raises(NotFoundError, match="no archive with id"):
        bob.archives.passages.delete(batch[0].id, archive_id=kb.id)
    with pytest.raises(NotFoundError, match=f"no passage '{note.id}' in archive"):
        alice.archives.passages.delete(note.id, archive_id=kb.id)  # sam's own, not kb's
    alice.agents.archives.detach(kb.id, agent_id=sam.id)
    assert texts(alice, sam.id) == ["Sam's own note."]
    alice.archives.delete(kb.id)  # max keeps its own memory
    assert texts(alice, max_.id) == []
    assert ids(alice.archives.list(agent_id=max_.id)) == [f"archive-{max_.id[6:]}"]


def test_an_agents_step_searches_and_saves_to_its_archive(
    client: Letta, fake_llm: FakeOpenAIServer
) -> None:
    sam = agent(client, "sam")
    kb = client.archives.create(name="kb")
    client.archives.passages.create(kb.id, text="The vault code is 7421.")
    client.agents.archives.attach(kb.id, agent_id=sam.id)
    fake_llm.enqueue(
        reply(
            "Look it up.",
            [call("archival_memory_search", query="vault code", request_heartbeat=True)],
        ),
        reply(
            "Note it.",
            [
                call(
                    "archival_memory_insert",
                    content="Ann asked for the code.",
                    request_heartbeat=True,
                )
            ],
        ),
        reply("Answer.", [call("send_message", message="It is 7421.")]),
    )
    sent = client.agents.messages.create(sam.id, messages=[{"role": "user", "content": "Code?"}])
    returns = [m.tool_return for m in sent.messages if m.message_type == "tool_return_message"]
    assert "The vault code is 7421." in returns[0]
    system = fake_llm.chat_requests[0]["messages"][0]["content"]
    assert "1 passages in archival memory" in system  # the archive's, counted as the agent's
    assert [p.text for p in client.agents.passages.list(sam.id)] == [
        "The vault code is 7421.",
        "Ann asked for the code.",
    ]
    context = client.get(f"/v1/agents/{sam.id}/context", cast_to=object)
    assert context["num_archival_memory"] == 2
    client.agents.archives.detach(kb.id, agent_id=sam.id)
    assert list(client.agents.passages.list(sam.id)) == []  # saved in the archive, not its own
