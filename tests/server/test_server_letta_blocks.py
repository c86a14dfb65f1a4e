"""Letta's standalone blocks (/v1/blocks), driven by letta-client 1.x (and
0.1.x, support/old_letta.py) against a real server: a block made on its
own, attached to agents by id, kept when detached, and reached by its owner
only."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from letta_client import APIStatusError, Letta, NotFoundError, UnprocessableEntityError
from support.old_letta import RunScript, old_letta  # noqa: F401 - the session fixture
from support.serving import new_key

MISSING = "block-00000000000000000000000000000000"


@pytest.fixture
def alice(db: str, server: str) -> Letta:
    return Letta(base_url=server, api_key=new_key(db, "alice"), max_retries=0)


@pytest.fixture
def bob(db: str, server: str) -> Letta:
    return Letta(base_url=server, api_key=new_key(db, "bob"), max_retries=0)


def new_agent(client: Letta, name: str) -> Any:
    persona = {"label": "persona", "value": f"I am {name}.", "limit": 200}
    return client.agents.create(name=name, model="openai/gpt-4o-mini", memory_blocks=[persona])


def test_create_list_retrieve_update_and_delete_a_standalone_block(alice: Letta) -> None:
    notes = alice.blocks.create(
        label="notes", value="Buy honey jars.", limit=100, description="Shopping."
    )
    assert (notes.label, notes.value, notes.limit, notes.description) == (
        "notes",
        "Buy honey jars.",
        100,
        "Shopping.",
    )
    assert notes.id.startswith("block-")
    plain = alice.blocks.create(label="facts", value="x" * 6000)
    assert plain.limit == 6000  # no limit given: Letta's default, or the value's length
    agent = new_agent(alice, "sam")
    persona = agent.memory.blocks[0]
    assert [b.id for b in alice.blocks.list()] == [notes.id, plain.id, persona.id]
    assert [b.id for b in alice.blocks.list(order="desc", limit=1).items] == [persona.id]
    assert [b.id for b in alice.blocks.list(label="notes")] == [notes.id]
    assert [b.id for b in alice.blocks.list(value_search="HONEY")] == [notes.id]
    assert [b.id for b in alice.blocks.list(label_search="ers")] == [persona.id]
    assert [b.id for b in alice.blocks.list(description_search="shop")] == [notes.id]
    assert list(alice.blocks.list(name="notes")) == []  # template names: we have none
    assert alice.blocks.retrieve(notes.id).value == "Buy honey jars."
    changed = alice.blocks.update(notes.id, value="Buy wax.", label="errands", read_only=True)
    assert (changed.label, changed.value, changed.read_only) == ("errands", "Buy wax.", True)
    with pytest.raises(UnprocessableEntityError, match="over its limit of 100"):
        alice.blocks.update(notes.id, value="y" * 101)
    assert alice.blocks.retrieve(notes.id).value == "Buy wax."
    alice.blocks.delete(notes.id)
    with pytest.raises(NotFoundError, match=f"no block with id '{notes.id}'"):
        alice.blocks.retrieve(notes.id)
    assert [b.id for b in alice.blocks.list()] == [plain.id, persona.id]


def test_a_block_with_a_bad_label_or_value_is_refused_in_one_line(alice: Letta) -> None:
    with pytest.raises(UnprocessableEntityError) as bad_label:
        alice.blocks.create(label="no spaces", value="v")
    assert "\n" not in str(bad_label.value.body)
    with pytest.raises(UnprocessableEntityError, match="over its limit of 3"):
        alice.blocks.create(label="tiny", value="four", limit=3)
    assert list(alice.blocks.list()) == []


def test_count_blocks(alice: Letta, db: str, server: str) -> None:
    alice.blocks.create(label="one", value="1")
    new_agent(alice, "sam")
    headers = {"Authorization": f"Bearer {alice.api_key}"}
    assert httpx.get(f"{server}/v1/blocks/count", headers=headers).json() == 2


def test_an_attached_standalone_block_is_shared_and_outlives_detach_and_its_agents(
    alice: Letta,
) -> None:
    shared = alice.blocks.create(label="team", value="We keep bees.", limit=100)
    one, two = new_agent(alice, "one"), new_agent(alice, "two")
    attached = alice.agents.blocks.attach(shared.id, agent_id=one.id)
    assert [b.label for b in attached.memory.blocks] == ["persona", "team"]
    alice.agents.blocks.attach(shared.id, agent_id=two.id)
    assert [a.name for a in alice.blocks.agents.list(shared.id)] == ["one", "two"]
    alice.blocks.update(shared.id, value="We keep goats.")
    for agent in (one, two):
        held = alice.agents.blocks.retrieve("team", agent_id=agent.id)
        assert held.value == "We keep goats."
    with pytest.raises(UnprocessableEntityError, match="does not change a block's label"):
        alice.blocks.update(shared.id, label="crew")  # held: the agents' rules
    with pytest.raises(UnprocessableEntityError, match="over its limit of 100"):
        alice.blocks.update(shared.id, value="z" * 101)
    left = alice.agents.blocks.detach(shared.id, agent_id=one.id)
    assert [b.label for b in left.memory.blocks] == ["persona"]
    alice.agents.delete(two.id)
    kept = alice.blocks.retrieve(shared.id)
    assert list(alice.blocks.agents.list(shared.id)) == []
    assert (kept.label, kept.value) == ("team", "We keep goats.")
    again = alice.agents.blocks.attach(shared.id, agent_id=one.id)
    assert [b.value for b in again.memory.blocks] == ["I am one.", "We keep goats."]


def test_deleting_an_attached_block_detaches_it_from_its_agents(alice: Letta) -> None:
    shared = alice.blocks.create(label="team", value="We keep bees.")
    agent = new_agent(alice, "sam")
    alice.agents.blocks.attach(shared.id, agent_id=agent.id)
    alice.blocks.delete(shared.id)
    assert [b.label for b in alice.agents.retrieve(agent.id).memory.blocks] == ["persona"]
    assert [b.label for b in alice.agents.blocks.list(agent.id)] == ["persona"]
    with pytest.raises(NotFoundError):
        alice.agents.blocks.retrieve("team", agent_id=agent.id)


def missing_detail(call: Any, block_id: str) -> tuple[int, Any]:
    """The status and body of a call that fails, the block's id masked."""
    with pytest.raises(APIStatusError) as failed:
        call(block_id)
    body = str(failed.value.body).replace(block_id, "ID")
    return failed.value.status_code, body


def test_another_users_block_is_not_found_as_a_missing_one(alice: Letta, bob: Letta) -> None:
    mine = alice.blocks.create(label="secret", value="Alice's secret.")
    persona = new_agent(alice, "sam").memory.blocks[0]
    bobs_agent = new_agent(bob, "bobs")
    calls = [
        bob.blocks.retrieve,
        lambda i: bob.blocks.update(i, value="Bob was here."),
        bob.blocks.delete,
        lambda i: list(bob.blocks.agents.list(i)),
        lambda i: bob.agents.blocks.attach(i, agent_id=bobs_agent.id),
    ]
    for call in calls:
        for theirs in (mine.id, persona.id):
            assert missing_detail(call, theirs) == missing_detail(call, MISSING)
            assert missing_detail(call, theirs)[0] == 404
    assert [b.id for b in bob.blocks.list()] == [bobs_agent.memory.blocks[0].id]
    assert alice.blocks.retrieve(mine.id).value == "Alice's secret."
    assert alice.blocks.retrieve(persona.id).value == "I am sam."
    assert [b.label for b in bob.agents.retrieve(bobs_agent.id).memory.blocks] == ["persona"]


OLD_CLIENT = """
from letta_client.core.api_error import ApiError
notes = client.blocks.create(label="notes", value="Buy honey jars.", limit=100)
results["created"] = [notes.label, notes.value, notes.limit]
results["listed"] = [b.id for b in client.blocks.list(label="notes")] == [notes.id]
agent = client.agents.create(model="openai/gpt-4o-mini")
attached = client.agents.blocks.attach(agent.id, notes.id)
results["attached"] = [b.label for b in attached.memory.blocks]
client.blocks.modify(notes.id, value="Buy wax.")
results["seen"] = client.agents.blocks.retrieve(agent.id, "notes").value
left = client.agents.blocks.detach(agent.id, notes.id)
results["left"] = [b.label for b in left.memory.blocks]
results["kept"] = client.blocks.retrieve(notes.id).value
client.blocks.delete(notes.id)
try:
    client.blocks.retrieve(notes.id)
except ApiError as exc:
    results["deleted"] = exc.status_code
try:
    client.blocks.retrieve(env["THEIRS"])
except ApiError as exc:
    results["theirs"] = exc.status_code
"""


def test_standalone_blocks_with_letta_client_01(
    old_letta: RunScript,  # noqa: F811 - the fixture imported above
    db: str,
    server: str,
    bob: Letta,
) -> None:
    theirs = bob.blocks.create(label="secret", value="Bob's.")
    found = old_letta(OLD_CLIENT, base_url=server, key=new_key(db, "alice"), THEIRS=theirs.id)
    assert found["created"] == ["notes", "Buy honey jars.", 100]
    assert found["listed"] is True
    assert found["attached"] == ["notes"]
    assert found["seen"] == "Buy wax."
    assert found["left"] == [] and found["kept"] == "Buy wax."
    assert found["deleted"] == 404 and found["theirs"] == 404
    assert bob.blocks.retrieve(theirs.id).value == "Bob's."
