"""Groups of agents (Letta's multi-agent groups): the part of `Storage` that
keeps which sleep-time agents look after which main agent's memory, how
often, and how far they have read (agent/sleeptime.py runs them); and the
groups whose agents talk together (agent/groups.py): round robin, each in
turn, and supervisor, a main agent that messages the others."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from memgpt_lite.models import MAX_STORED_INT, UserName, new_id, utcnow
from memgpt_lite.text import CleanStr

# Letta's two kinds of sleep-time group (a main agent's, and a voice
# agent's), and the two kinds of group that talk (agent/groups.py).
ManagerType = Literal["sleeptime", "voice_sleeptime", "round_robin", "supervisor", "dynamic"]
SLEEPTIME_TYPES = frozenset({"sleeptime", "voice_sleeptime"})

# Letta's default: the sleep-time agents run after every fifth turn.
DEFAULT_FREQUENCY = 5


class AgentGroup(BaseModel):
    """A sleep-time group: a main agent (`manager_agent_id`) and the
    sleep-time agents (`agent_ids`) that, every `frequency` turns of it,
    read its newest messages and edit the memory blocks they share with it.
    `processed_seq` is the newest of the main agent's messages they were
    given; `last_run_at` and `last_error` say when they last ran and why
    that failed (None: it did not).

    Or a group that talks: a round-robin group's agents (`agent_ids`, no
    main agent) step in turn, `max_turns` steps a send (None: one each); a
    dynamic group's main agent picks which speaks next, until one says
    `termination_token` or `max_turns` went by; a supervisor group's main
    agent messages the others. Each talks in a conversation of its own for
    the group (`conversations`, by agent id; the main agent's is
    `conversation_id`), made when first needed.

    All its agents belong to its owner."""

    model_config = ConfigDict(validate_assignment=True)

    id: str = Field(default_factory=lambda: new_id("group"))
    owner: UserName
    manager_type: ManagerType = "sleeptime"
    manager_agent_id: str | None = None
    agent_ids: list[str] = Field(default_factory=list)
    description: CleanStr = ""
    frequency: int = Field(default=DEFAULT_FREQUENCY, ge=1, le=MAX_STORED_INT)
    # Letta's voice groups' bounds on the main agent's window, in messages:
    # kept and shown, not used (the sleep-time agents run by `frequency`).
    max_message_buffer_length: int | None = Field(default=None, ge=1, le=MAX_STORED_INT)
    min_message_buffer_length: int | None = Field(default=None, ge=1, le=MAX_STORED_INT)
    processed_seq: int = Field(default=0, ge=0)
    last_run_at: datetime | None = None
    last_error: CleanStr | None = None
    max_turns: int | None = Field(default=None, ge=1, le=MAX_STORED_INT)
    termination_token: CleanStr | None = None
    conversation_id: str | None = None
    conversations: dict[str, str] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


@runtime_checkable
class GroupStorage(Protocol):
    def save_group(self, group: AgentGroup) -> None:
        """Store the group, or its new state if stored already (its members
        replaced by `agent_ids`, in order, each with its conversation in
        `conversations`); sets `updated_at`. NotFoundError for an agent that
        does not exist; AlreadyExistsError if its main agent has another
        group (one each)."""
        ...

    def get_group(self, group_id: str, owner: str | None = None) -> AgentGroup:
        """The group (with `owner`, that user's only); NotFoundError if there
        is none of that id, word for word for another owner's."""
        ...

    def list_groups(self, owner: str | None = None) -> list[AgentGroup]:
        """Every group (of `owner`, if given), oldest first."""
        ...

    def agent_groups(self, agent_id: str) -> list[AgentGroup]:
        """The groups the agent is the main agent or a member of, oldest first."""
        ...

    def delete_group(self, group_id: str) -> None:
        """Delete the group (its agents stay). An unknown id changes nothing.
        A group goes by itself with its main agent; a member agent deleted
        leaves it, without that member. A conversation of the group deleted
        leaves the group without it (None, not in `conversations`)."""
        ...
