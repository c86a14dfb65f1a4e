"""Letta's identities, driven by letta-client 1.x against a real server,
with two users: the multi-user pattern of Letta's apps (one identity per
person of the app, each person's agent made with `identity_ids` and found
again by `identifier_keys`), the identity routes, and their links to agents
and blocks, which go with what they join and never cross users.

letta-client 1.x has no `identities` resource (only the agents' attach and
detach), so the /v1/identities routes are called through its own
`client.get/post/put/patch/delete`, as an app on that client would."""

from __future__ import annotations

from typing import Any

import pytest
from letta_client import ConflictError, Letta, NotFoundError, UnprocessableEntityError
from support.serving import live_server, new_key

from memgpt_lite.testing.server import FakeOpenAIServer

MISSING = "identity-00000000000000000000000000000000"


def identities(client: Letta, **params: Any) -> list[dict[str, Any]]:
    return client.get("/v1/identities/", cast_to=object, options={"params": params})


def person(client: Letta, key: str, **fields: Any) -> dict[str, Any]:
    body = {"identifier_key": key, "name": key.title(), "identity_type": "user", **fields}
    return client.post("/v1/identities/", cast_to=object, body=body)


def agent_for(client: Letta, name: str, identity_ids: list[str]) -> Any:
    return client.agents.create(name=name, model="openai/gpt-4o-mini", identity_ids=identity_ids)


def test_identities_serve_many_people_through_one_key(db: str, server: str) -> None:
    alice = Letta(base_url=server, api_key=new_key(db, "alice"), max_retries=0)
    bob = Letta(base_url=server, api_key=new_key(db, "bob"), max_retries=0)
    plan = {"key": "plan", "value": "pro", "type": "string"}
    ann = person(alice, "ann", properties=[plan])
    bea = person(alice, "bea", identity_type="org")
    assert ann["id"].startswith("identity-") and ann["properties"] == [plan]
    with pytest.raises(ConflictError, match="identifier_key 'ann' already exists"):
        person(alice, "ann")
    bobs_ann = person(bob, "ann")  # another user's key may be the same
    with pytest.raises(UnprocessableEntityError, match="name"):
        alice.post("/v1/identities/", cast_to=object, body={"identifier_key": "x"})

    anns_agent = agent_for(alice, "Ann's helper", [ann["id"]])  # as docs/serving/letta.md
    beas_agent = agent_for(alice, "beas-helper", [bea["id"]])
    assert anns_agent.identity_ids == [ann["id"]]
    assert [(i.id, i.identifier_key) for i in anns_agent.identities] == [(ann["id"], "ann")]
    assert [a.id for a in alice.agents.list(identifier_keys=["ann"])] == [anns_agent.id]
    both = alice.agents.list(identifier_keys=["ann", "bea"], order="asc")
    assert [a.id for a in both] == [anns_agent.id, beas_agent.id]
    assert [a.id for a in alice.agents.list(identity_id=bea["id"])] == [beas_agent.id]
    assert list(bob.agents.list(identity_id=ann["id"])) == []
    assert list(bob.agents.list(identifier_keys=["ann"])) == []  # bob's ann has no agent
    with pytest.raises(NotFoundError, match=f"no identity with id '{ann['id']}'"):
        agent_for(bob, "thief", [ann["id"]])
    assert [a.name for a in bob.agents.list()] == []  # nothing was made

    check_lists_and_reads(alice, bob, [ann, bea, bobs_ann], anns_agent.id)
    check_changes(alice, bob, ann, [anns_agent.id, beas_agent.id])


def check_lists_and_reads(
    alice: Letta, bob: Letta, made: list[dict[str, Any]], anns_agent_id: str
) -> None:
    ann, bea, bobs_ann = (identity["id"] for identity in made)
    assert [i["id"] for i in identities(alice)] == [bea, ann]  # newest first
    assert [i["id"] for i in identities(alice, order="asc", limit=1)] == [ann]
    assert [i["id"] for i in identities(alice, order="asc", after=ann)] == [bea]
    assert [i["id"] for i in identities(alice, name="BE")] == [bea]
    assert [i["id"] for i in identities(alice, identity_type="org")] == [bea]
    assert [i["id"] for i in identities(alice, identifier_key="ann")] == [ann]
    assert [i["id"] for i in identities(bob)] == [bobs_ann]
    assert alice.get("/v1/identities/count", cast_to=object) == 2
    read = alice.get(f"/v1/identities/{ann}", cast_to=object)
    assert (read["agent_ids"], read["block_ids"]) == ([anns_agent_id], [])
    for client, identity_id in ((bob, ann), (alice, MISSING)):  # worded alike
        with pytest.raises(NotFoundError) as missing:
            client.get(f"/v1/identities/{identity_id}", cast_to=object)
        assert missing.value.body == {"detail": f"no identity with id '{identity_id}'"}


def check_changes(alice: Letta, bob: Letta, ann: dict[str, Any], agent_ids: list[str]) -> None:
    """Modify merges properties and adds agents; the properties route
    replaces them; an upsert replaces what it gives and keeps the rest."""
    seats = {"key": "seats", "value": 3, "type": "number"}
    modified = alice.patch(
        f"/v1/identities/{ann['id']}",
        cast_to=object,
        body={"name": "Ann B.", "properties": [seats], "agent_ids": agent_ids},  # one anew
    )
    assert [p["key"] for p in modified["properties"]] == ["plan", "seats"]
    assert (modified["name"], modified["agent_ids"]) == ("Ann B.", agent_ids)
    free = {"key": "plan", "value": "free", "type": "string"}
    replaced = alice.put(f"/v1/identities/{ann['id']}/properties", cast_to=object, body=[free])
    assert replaced["properties"] == [free]
    upsert = {"identifier_key": "ann", "name": "Ann C.", "identity_type": "user"}
    upserted = alice.put("/v1/identities/", cast_to=object, body=upsert)
    assert (upserted["id"], upserted["name"]) == (ann["id"], "Ann C.")
    assert (upserted["properties"], upserted["agent_ids"]) == ([free], agent_ids)
    again = alice.put("/v1/identities/", cast_to=object, body=upsert | {"agent_ids": []})
    assert (again["id"], again["agent_ids"]) == (ann["id"], [])
    cara = alice.put("/v1/identities/", cast_to=object, body=upsert | {"identifier_key": "cara"})
    assert cara["id"] != ann["id"] and cara["name"] == "Ann C."
    with pytest.raises(NotFoundError):
        bob.patch(f"/v1/identities/{ann['id']}", cast_to=object, body={"name": "x"})
    with pytest.raises(NotFoundError):
        bob.delete(f"/v1/identities/{ann['id']}", cast_to=object)
    assert alice.get(f"/v1/identities/{ann['id']}", cast_to=object)["name"] == "Ann C."


def test_links_to_agents_and_blocks_are_made_undone_and_never_dangle(
    db_location: str, fake_llm: FakeOpenAIServer
) -> None:
    with live_server(db_location) as server:  # on each backend
        alice = Letta(base_url=server, api_key=new_key(db_location, "alice"), max_retries=0)
        bob = Letta(base_url=server, api_key=new_key(db_location, "bob"), max_retries=0)
        check_links(alice, bob)


def check_links(alice: Letta, bob: Letta) -> None:
    ann, bea = person(alice, "ann"), person(alice, "bea")
    sam = agent_for(alice, "sam", [])
    bobs_agent = agent_for(bob, "bobs", [])
    notes = alice.blocks.create(label="notes", value="Ann likes honey.")
    bobs_block = bob.blocks.create(label="notes", value="Bob's.")

    alice.agents.identities.attach(ann["id"], agent_id=sam.id)
    alice.agents.identities.attach(bea["id"], agent_id=sam.id)
    assert alice.agents.retrieve(sam.id).identity_ids == [ann["id"], bea["id"]]
    alice.agents.identities.detach(bea["id"], agent_id=sam.id)
    assert alice.agents.retrieve(sam.id).identity_ids == [ann["id"]]
    updated = alice.agents.update(sam.id, identity_ids=[bea["id"]])
    assert updated.identity_ids == [bea["id"]]
    alice.patch(f"/v1/blocks/{notes.id}/identities/attach/{bea['id']}", cast_to=object)
    blocks = alice.get(f"/v1/identities/{bea['id']}/blocks", cast_to=object)
    assert [b["id"] for b in blocks] == [notes.id]
    assert [b.id for b in alice.blocks.list(identity_id=bea["id"])] == [notes.id]
    assert [b.id for b in alice.blocks.list(identifier_keys=["bea"])] == [notes.id]
    assert list(alice.blocks.list(identifier_keys=["ann"])) == []
    agents = alice.get(f"/v1/identities/{bea['id']}/agents", cast_to=object)
    assert [a["id"] for a in agents] == [sam.id]

    # Across users: another user's identity, agent or block is not found.
    with pytest.raises(NotFoundError, match="no identity with id"):
        bob.agents.identities.attach(bea["id"], agent_id=bobs_agent.id)
    with pytest.raises(NotFoundError, match="no agent named"):
        bob.agents.identities.attach(bea["id"], agent_id=sam.id)
    with pytest.raises(NotFoundError, match=f"no block with id '{bobs_block.id}'"):
        alice.patch(f"/v1/blocks/{bobs_block.id}/identities/attach/{bea['id']}", cast_to=object)
    with pytest.raises(NotFoundError, match=f"no agent with id '{bobs_agent.id}'"):
        person(alice, "cara", agent_ids=[bobs_agent.id])
    with pytest.raises(NotFoundError, match="no identity with id"):
        bob.agents.update(bobs_agent.id, identity_ids=[ann["id"]])
    assert [i["identifier_key"] for i in identities(alice)] == ["bea", "ann"]  # no cara

    # What a link joins goes, and the link with it.
    alice.blocks.delete(notes.id)
    alice.agents.delete(sam.id)
    read = alice.get(f"/v1/identities/{bea['id']}", cast_to=object)
    assert (read["agent_ids"], read["block_ids"]) == ([], [])
    kept = agent_for(alice, "kept", [ann["id"], bea["id"]])
    assert alice.delete(f"/v1/identities/{ann['id']}", cast_to=object) is None
    assert alice.agents.retrieve(kept.id).identity_ids == [bea["id"]]
    with pytest.raises(NotFoundError):
        alice.get(f"/v1/identities/{ann['id']}/agents", cast_to=object)
