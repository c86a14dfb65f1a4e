"""Letta's archives over our archival memory (see
storage/protocols/archives.py): what the server does with them, as Letta
does it.

An archive is a store of archival passages, and there is one concept of
it: every agent's archival memory is an archive, its own (shown with the id
"archive-" and the rest of the agent's, named as Letta names an agent's
default archive), and a user may make named archives besides, each with its
own embedder (or none: searched by words). Attaching an archive to an agent
makes it the agent's archive as Letta's agent has one: the agent's inserts
go to it, and its searches (`archival_memory_search`), lists and reads take
in its passages with the agent's own (memory/archival/passages.py). Several
agents attached to one archive share it. An agent has one archive attached
besides its own, as a Letta agent has one archive: attaching a second is a
409 until the first is detached. Another agent's own archive may be
attached too, and goes with that agent.

Every archive is one user's; another user's, or one that does not exist,
is not found, word for word. An agent's own archive is named after it and
goes with it: it cannot be renamed, deleted or detached on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pydantic import ValidationError

from memgpt_lite.errors import ConfigError, ConflictError, NotFoundError, validation_messages
from memgpt_lite.models import AgentSettings, AgentState, LLMConfig
from memgpt_lite.storage.protocol import Storage
from memgpt_lite.storage.protocols.archives import ARCHIVE_PREFIX, Archive, no_archive

__all__ = ["Archive", "ArchiveInfo", "Archives", "archive_id_of"]

AGENT_PREFIX = "agent-"
# The model of a named archive's row: it never calls one (its tokens, to cut
# long texts into passages, are counted as a recent model's).
NO_MODEL = "none"


def archive_id_of(store_id: str) -> str:
    """The id of the archive whose passages the row `store_id` holds: a
    named archive's own; an agent's own archive's, "archive-" and the rest
    of the agent's id."""
    if store_id.startswith(ARCHIVE_PREFIX):
        return store_id
    return ARCHIVE_PREFIX + store_id.removeprefix(AGENT_PREFIX)


@dataclass(frozen=True)
class ArchiveInfo:
    """An archive as the routes show it: a named archive, or an agent's own
    (`agent`). `store` is the row that holds its passages (its embedder
    and counts)."""

    id: str
    owner: str
    name: str
    description: str | None
    created_at: datetime
    updated_at: datetime
    store: AgentState
    agent: AgentState | None = None

    @classmethod
    def named(cls, archive: Archive, store: AgentState) -> ArchiveInfo:
        return cls(
            archive.id,
            archive.owner,
            archive.name,
            archive.description,
            archive.created_at,
            archive.updated_at,
            store,
        )

    @classmethod
    def own(cls, agent: AgentState) -> ArchiveInfo:
        """An agent's own archive, named as Letta names an agent's default one."""
        name = agent.shown_name
        return cls(
            archive_id_of(agent.id),
            agent.owner,
            f"{name}'s Archive",
            f"The archival memory of agent {name}",
            agent.created_at,
            agent.updated_at,
            agent,
            agent,
        )


class Archives:
    """The archives of every user of one database."""

    def __init__(self, store: Storage) -> None:
        self.store = store

    def create(
        self, owner: str, name: str, description: str | None, embedder: str | None
    ) -> ArchiveInfo:
        """A new named archive of the owner's; `embedder` embeds its
        passages ("local", "endpoint:MODEL" at the server's endpoint; None:
        searched by words). Names may repeat, as in Letta."""
        try:
            archive = Archive(owner=owner, name=name, description=description)
        except ValidationError as exc:
            raise ConfigError(f"archive: {validation_messages(exc)}") from None
        store = AgentState(
            id=archive.id,
            name=archive.id,
            owner=owner,
            llm=LLMConfig(model=NO_MODEL),
            system="",
            settings=AgentSettings(embedder=embedder),
        )
        self.store.create_archive(archive, store)
        return ArchiveInfo.named(archive, store)

    def get(self, archive_id: str, owner: str) -> ArchiveInfo:
        """The owner's archive, named or an agent's own; NotFoundError for
        another's, word for word as an id that does not exist."""
        if not archive_id.startswith(ARCHIVE_PREFIX):
            raise no_archive(archive_id)
        try:
            archive = self.store.get_archive(archive_id, owner)
        except NotFoundError:
            agent_id = AGENT_PREFIX + archive_id.removeprefix(ARCHIVE_PREFIX)
            try:
                agent = self.store.get_agent(agent_id, owner=owner)
            except NotFoundError:
                raise no_archive(archive_id) from None
            if agent.id != agent_id:  # an agent named so, not of that id
                raise no_archive(archive_id) from None
            return ArchiveInfo.own(agent)
        return ArchiveInfo.named(archive, self.store.archive_store(archive.id))

    def list(self, owner: str) -> list[ArchiveInfo]:
        """The owner's archives, named and their agents' own, oldest first."""
        named = [
            ArchiveInfo.named(a, self.store.archive_store(a.id))
            for a in self.store.list_archives(owner)
        ]
        own = [ArchiveInfo.own(state) for state, _ in self.store.list_agents(owner=owner)]
        return sorted([*named, *own], key=lambda a: (a.created_at, a.id))

    def of_agent(self, agent: AgentState) -> list[ArchiveInfo]:
        """The agent's archives: its own, and the one attached to it."""
        found = [ArchiveInfo.own(agent)]
        if agent.attached_archive is not None:
            found.append(self.get(archive_id_of(agent.attached_archive), agent.owner))
        return found

    def modify(
        self, archive_id: str, owner: str, name: str | None, description: str | None
    ) -> ArchiveInfo:
        """A named archive's new name or description (those given)."""
        info = self._named(archive_id, owner, "renamed: its name is its agent's")
        archive = self.store.get_archive(info.id, owner)
        try:
            if name is not None:
                archive.name = name
            if description is not None:
                archive.description = description
        except ValidationError as exc:
            raise ConfigError(f"archive: {validation_messages(exc)}") from None
        self.store.save_archive(archive)
        return ArchiveInfo.named(archive, info.store)

    def delete(self, archive_id: str, owner: str) -> None:
        """Delete a named archive with its passages; the agents it was
        attached to keep their own."""
        info = self._named(archive_id, owner, "deleted: delete its passages, or the agent")
        self.store.delete_archive(info.id, owner)

    def attach(self, agent: AgentState, archive_id: str) -> None:
        """Attach the archive to the agent (both the agent's owner's): its
        own, or attached already, changes nothing; ConflictError while it has
        another attached."""
        info = self.get(archive_id, agent.owner)
        held = agent.attached_archive
        if held is not None and held != info.store.id and info.store.id != agent.id:
            raise ConflictError(
                f"agent {agent.shown_name!r} has archive {archive_id_of(held)!r} attached "
                "already: detach it first (an agent has one archive besides its own, as in Letta)"
            )
        self.store.attach_archive(agent.id, info.store.id)

    def detach(self, agent: AgentState, archive_id: str) -> None:
        """Detach the archive from the agent; not attached, nothing changes.
        Its own archive is a ConfigError: it is the agent's memory."""
        info = self.get(archive_id, agent.owner)
        if info.store.id == agent.id:
            raise ConfigError(
                f"{archive_id} is agent {agent.shown_name!r}'s own archival memory: it cannot "
                "be detached from it"
            )
        self.store.detach_archive(agent.id, info.store.id)

    def agents(self, archive_id: str, owner: str) -> list[AgentState]:
        """The agents that have the archive: its agent (for an agent's own),
        then those it is attached to, in the order attached."""
        info = self.get(archive_id, owner)
        ids = self.store.archive_agents(info.store.id)
        attached = [self.store.get_agent(agent_id, owner=owner) for agent_id in ids]
        return [info.agent, *attached] if info.agent is not None else attached

    def _named(self, archive_id: str, owner: str, what: str) -> ArchiveInfo:
        """The owner's named archive; an agent's own is a ConfigError saying
        it cannot be `what`."""
        info = self.get(archive_id, owner)
        if info.agent is not None:
            raise ConfigError(
                f"{archive_id} is agent {info.agent.shown_name!r}'s own archival memory, "
                f"which cannot be {what}"
            )
        return info
