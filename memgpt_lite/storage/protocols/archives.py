"""Archives (Letta's archives): the part of `Storage` that keeps named
archives and what is attached to each agent.

An archive is a store of archival passages. Every agent's archival memory
is one: its own, kept under its own row. A named archive keeps its passages
the same way, under a row of `agents` of its own (the archive's id, which
starts "archive-"): a row that holds an archive, no agent, so no list or
lookup of agents shows it. Its passages, vectors and embedding space are
the archival tier's (`ArchivalStorage`, by that id).

An agent may have one archive attached besides its own (as a Letta agent
has one archive): a named archive, or another agent's own, whose passages
it then shares (agent/archives.py says what attached means).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import UserName, new_id, utcnow
from memgpt_lite.text import CleanStr

if TYPE_CHECKING:
    from memgpt_lite.models import AgentState

# How a row of `agents` that holds a named archive's passages is told from
# an agent's: its id (the archive's) starts so; an agent's starts "agent-".
ARCHIVE_PREFIX = "archive-"


def no_archive(archive_id: str) -> NotFoundError:
    """An unknown archive, or another owner's: worded alike."""
    return NotFoundError(f"no archive with id {archive_id!r}")


class Archive(BaseModel):
    """A named archive of user `owner`'s: its passages are kept under the
    row of `agents` of its id (`ArchiveStorage.archive_store`)."""

    model_config = ConfigDict(validate_assignment=True)

    id: str = Field(default_factory=lambda: new_id("archive"))
    owner: UserName
    name: CleanStr = Field(min_length=1)
    description: CleanStr | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


@runtime_checkable
class ArchiveStorage(Protocol):
    """Named archives, and the archive attached to each agent."""

    def create_archive(self, archive: Archive, store: AgentState) -> None:
        """Store a new archive and `store`, the row that holds its passages
        (of the archive's id and owner; stored as `create_agent` stores an
        agent, with no blocks), together. AlreadyExistsError if the id is
        taken."""
        ...

    def save_archive(self, archive: Archive) -> None:
        """Store the archive of a row stored already (`create_archive`'s, or
        a copy's): its name and description; sets `updated_at`. NotFoundError
        without the row."""
        ...

    def get_archive(self, archive_id: str, owner: str) -> Archive:
        """The owner's named archive; NotFoundError if there is none of that
        id, word for word for another owner's."""
        ...

    def list_archives(self, owner: str | None = None) -> list[Archive]:
        """The named archives (of `owner`), oldest first."""
        ...

    def delete_archive(self, archive_id: str, owner: str) -> None:
        """Delete the owner's named archive with its passages and vectors;
        the agents it was attached to keep their own. NotFoundError as
        `get_archive`."""
        ...

    def archive_store(self, store_id: str) -> AgentState:
        """The row of `agents` that holds an archive's passages: a named
        archive's (by its id), or an agent's own. NotFoundError for neither."""
        ...

    def attach_archive(self, agent_id: str, store_id: str) -> None:
        """Attach to the agent the archive whose passages `store_id` holds
        (`AgentState.attached_archive` then names it). Attached already,
        or the agent's own: nothing changes. ConflictError if the agent has
        another one attached; NotFoundError for an unknown agent or store,
        or one of another owner's."""
        ...

    def detach_archive(self, agent_id: str, store_id: str) -> None:
        """Detach that archive from the agent; not attached: nothing changes."""
        ...

    def archive_agents(self, store_id: str) -> list[str]:
        """The ids of the agents the archive is attached to, in the order
        attached."""
        ...
