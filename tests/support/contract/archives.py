"""The contract for archives: a named archive keeps its passages under a row
of its own, which no list or lookup of agents shows; per owner; one archive
attached to an agent besides its own, within its owner; links, passages and
counts gone with the archive or the agent."""

from __future__ import annotations

import pytest

from memgpt_lite.errors import ConflictError, NotFoundError
from memgpt_lite.models import AgentState, LLMConfig, Passage
from memgpt_lite.storage.protocols.archives import Archive
from support.contract.base import ContractBase, OpenStore
from support.contract.keys import owned


def named(store, owner: str, name: str) -> Archive:
    archive = Archive(owner=owner, name=name, description=f"{name} notes")
    holder = AgentState(
        id=archive.id, name=archive.id, owner=owner, llm=LLMConfig(model="none"), system=""
    )
    store.create_archive(archive, holder)
    return archive


class ArchiveContract(ContractBase):
    def test_an_archive_keeps_passages_under_a_row_no_agent_list_shows(
        self, store, open_store: OpenStore
    ):
        sam = owned(store, "sam", "alice")
        kb = named(store, "alice", "kb")
        named(store, "bob", "kb")  # another owner's name may be the same
        store.add_passages([Passage(agent_id=kb.id, text="The vault code is 7421.")])
        read = open_store()
        assert read.get_archive(kb.id, "alice").model_dump(exclude={"updated_at"}) == (
            kb.model_dump(exclude={"updated_at"})
        )
        assert [a.id for a in read.list_archives("alice")] == [kb.id]
        assert [a.owner for a in read.list_archives()] == ["alice", "bob"]
        assert [s.id for s, _ in read.list_agents()] == [sam.id]
        assert [s.id for s, _ in read.list_agents("alice")] == [sam.id]
        for ref, owner in ((kb.id, None), (kb.id, "alice"), (kb.id, "bob")):
            with pytest.raises(NotFoundError):
                read.get_agent(ref, owner=owner)
        assert read.archive_store(kb.id).id == kb.id
        assert read.archive_store(sam.id).id == sam.id  # an agent's own archive
        assert read.agent_stats(kb.id).passage_count == 1
        ranked = read.rank_passages(kb.id, "vault code", 5).scored
        assert [p.text for p, _ in ranked] == ["The vault code is 7421."]
        kb.name, kb.description = "facts", None
        store.save_archive(kb)
        renamed = read.get_archive(kb.id, "alice")
        assert (renamed.name, renamed.description) == ("facts", None)
        with pytest.raises(NotFoundError, match="^no archive with id 'archive-gone'$"):
            store.save_archive(Archive(id="archive-gone", owner="alice", name="x"))

    def test_another_owners_archive_is_not_found(self, store):
        kb, sam = named(store, "bob", "kb"), owned(store, "sam", "alice")
        theirs = owned(store, "max", "bob")
        for call in (
            lambda: store.get_archive(kb.id, "alice"),
            lambda: store.delete_archive(kb.id, "alice"),
            lambda: store.attach_archive(sam.id, kb.id),
            lambda: store.attach_archive(sam.id, theirs.id),
        ):
            with pytest.raises(NotFoundError, match="^no archive with id "):
                call()
        with pytest.raises(NotFoundError, match="^no archive with id 'archive-gone'$"):
            store.archive_store("archive-gone")
        assert store.get_archive(kb.id, "bob").name == "kb"
        assert store.get_agent(sam.id).attached_archive is None

    def test_one_archive_is_attached_besides_the_agents_own(self, store, open_store: OpenStore):
        sam, max_ = owned(store, "sam", "alice"), owned(store, "max", "alice")
        kb, faq = named(store, "alice", "kb"), named(store, "alice", "faq")
        store.add_passages([Passage(agent_id=kb.id, text=f"fact {i}") for i in range(3)])
        store.attach_archive(sam.id, kb.id)
        store.attach_archive(sam.id, kb.id)  # attached already: nothing changes
        store.attach_archive(sam.id, sam.id)  # its own: nothing changes
        store.attach_archive(max_.id, sam.id)  # max shares sam's own archive
        with pytest.raises(ConflictError, match="has another archive attached already"):
            store.attach_archive(sam.id, faq.id)
        read = open_store()
        assert read.get_agent(sam.id).attached_archive == kb.id
        assert [s.attached_archive for s, _ in read.list_agents()] == [sam.id, kb.id]
        stats = read.agent_stats(sam.id)
        assert (stats.passage_count, stats.attached_passage_count) == (0, 3)
        assert read.archive_agents(kb.id) == [sam.id]
        assert read.archive_agents(sam.id) == [max_.id]
        store.detach_archive(sam.id, faq.id)  # not attached: nothing changes
        store.detach_archive(sam.id, kb.id)
        assert read.get_agent(sam.id).attached_archive is None
        assert read.agent_stats(sam.id).attached_passage_count == 0
        store.attach_archive(sam.id, faq.id)
        assert read.archive_agents(faq.id) == [sam.id]

    def test_links_and_passages_go_with_the_archive_or_the_agent(self, store):
        sam, max_ = owned(store, "sam", "alice"), owned(store, "max", "alice")
        kb = named(store, "alice", "kb")
        store.add_passages([Passage(agent_id=kb.id, text="kept in kb")])
        store.attach_archive(sam.id, kb.id)
        store.attach_archive(max_.id, sam.id)
        store.delete_agent(sam.id)  # its links go: max shared its own archive
        assert store.get_agent(max_.id).attached_archive is None
        assert store.archive_agents(kb.id) == []
        store.attach_archive(max_.id, kb.id)
        store.delete_archive(kb.id, "alice")
        assert store.get_agent(max_.id).attached_archive is None
        assert store.list_archives() == []
        assert store.list_passages(kb.id, 10) == ([], 0)
        with pytest.raises(NotFoundError):
            store.archive_store(kb.id)
