"""The contract for identities: stored whole, one per key within an owner,
per owner, linked only to their owner's agents and blocks, links gone with
the identity, the agent or the block."""

from __future__ import annotations

import pytest

from memgpt_lite.errors import AlreadyExistsError, NotFoundError
from memgpt_lite.models import Block
from memgpt_lite.storage.protocols.identities import Identity, IdentityProperty
from support.contract.base import ContractBase, OpenStore
from support.contract.keys import owned


def person(owner: str, key: str, **fields: object) -> Identity:
    return Identity(
        owner=owner, identifier_key=key, name=key.title(), identity_type="user", **fields
    )


class IdentityContract(ContractBase):
    def test_an_identity_is_stored_whole_and_found_by_key_and_agent(
        self, store, open_store: OpenStore
    ):
        sam, max_ = owned(store, "sam", "alice"), owned(store, "max", "alice")
        notes = Block(label="notes", value="n")
        store.create_block(notes, "alice")
        ann = person(
            "alice",
            "ann",
            properties=[
                IdentityProperty(key="plan", value="pro", type="string"),
                IdentityProperty(key="seats", value=3, type="number"),
                IdentityProperty(key="tags", value={"a": [1]}, type="json"),
            ],
            agent_ids=[max_.id, sam.id],
            block_ids=[notes.id],
        )
        store.save_identity(ann)
        bea = person("alice", "bea", agent_ids=[sam.id])
        store.save_identity(bea)
        read = open_store().get_identity(ann.id, "alice")
        assert read.model_dump(exclude={"updated_at"}) == ann.model_dump(exclude={"updated_at"})
        assert read.properties[1].value == 3 and read.properties[2].value == {"a": [1]}
        assert [i.id for i in store.list_identities("alice")] == [ann.id, bea.id]
        assert [i.id for i in store.list_identities("alice", identifier_key="bea")] == [bea.id]
        assert [i.id for i in store.list_identities("alice", agent_id=max_.id)] == [ann.id]
        assert [i.id for i in store.list_identities(agent_id=sam.id)] == [ann.id, bea.id]
        assert store.list_identities("bob") == []
        ann.name, ann.agent_ids, ann.block_ids = "Ann B.", [sam.id], []
        store.save_identity(ann)
        changed = store.get_identity(ann.id, "alice")
        assert (changed.name, changed.agent_ids, changed.block_ids) == ("Ann B.", [sam.id], [])

    def test_a_key_is_one_identitys_within_its_owner(self, store):
        store.save_identity(person("alice", "ann"))
        store.save_identity(person("bob", "ann"))  # another owner's key may be the same
        with pytest.raises(AlreadyExistsError, match="identifier_key 'ann' already exists"):
            store.save_identity(person("alice", "ann"))
        assert [i.owner for i in store.list_identities(identifier_key="ann")] == ["alice", "bob"]

    def test_another_owners_identity_agent_or_block_is_not_found(self, store):
        theirs, mine = owned(store, "sam", "bob"), owned(store, "max", "alice")
        [their_block] = store.get_blocks(theirs.id)
        ann = person("alice", "ann")
        store.save_identity(ann)
        with pytest.raises(NotFoundError, match=f"^no identity with id '{ann.id}'$"):
            store.get_identity(ann.id, "bob")
        with pytest.raises(NotFoundError, match=f"^no identity with id '{ann.id}'$"):
            store.delete_identity(ann.id, "bob")
        with pytest.raises(NotFoundError, match=f"^no agent with id '{theirs.id}'$"):
            store.save_identity(person("alice", "bea", agent_ids=[theirs.id]))
        with pytest.raises(NotFoundError, match=f"^no block with id '{their_block.id}'$"):
            store.link_identity(ann.id, "block", their_block.id, True)
        with pytest.raises(NotFoundError, match=f"^no identity with id '{ann.id}'$"):
            store.set_agent_identities(theirs.id, [ann.id])
        with pytest.raises(NotFoundError, match="no identity with id 'identity-gone'"):
            store.link_identity("identity-gone", "agent", mine.id, True)
        assert store.list_identities("alice") == [store.get_identity(ann.id, "alice")]
        assert store.get_identity(ann.id, "alice").agent_ids == []

    def test_links_are_made_undone_and_go_with_what_they_join(self, store):
        sam, max_ = owned(store, "sam", "alice"), owned(store, "max", "alice")
        [persona] = store.get_blocks(sam.id)
        ann, bea = person("alice", "ann"), person("alice", "bea")
        store.save_identity(ann)
        store.save_identity(bea)
        store.link_identity(ann.id, "agent", max_.id, True)
        store.link_identity(ann.id, "agent", sam.id, True)
        store.link_identity(ann.id, "agent", max_.id, True)  # linked already: stays first
        store.link_identity(ann.id, "block", persona.id, True)
        assert store.get_identity(ann.id, "alice").agent_ids == [max_.id, sam.id]
        store.link_identity(ann.id, "agent", max_.id, False)
        store.link_identity(ann.id, "agent", max_.id, False)  # gone already: nothing changes
        assert store.get_identity(ann.id, "alice").agent_ids == [sam.id]
        store.set_agent_identities(sam.id, [bea.id])
        assert [i.id for i in store.list_identities(agent_id=sam.id)] == [bea.id]
        store.set_agent_identities(max_.id, [ann.id, bea.id])
        store.delete_agent(sam.id)  # its links go, and its own block's with it
        assert store.get_identity(bea.id, "alice").agent_ids == [max_.id]
        assert store.get_identity(ann.id, "alice").block_ids == []
        notes = Block(label="notes", value="n")
        store.create_block(notes, "alice")
        store.link_identity(bea.id, "block", notes.id, True)
        store.delete_block(notes.id)
        assert store.get_identity(bea.id, "alice").block_ids == []
        store.delete_identity(ann.id, "alice")
        assert [i.id for i in store.list_identities(agent_id=max_.id)] == [bea.id]
        with pytest.raises(NotFoundError, match="no identity with id"):
            store.get_identity(ann.id, "alice")
