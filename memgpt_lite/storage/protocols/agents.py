"""Agents and their settings: the part of `Storage` that keeps each agent's
state (its configuration, window start, summary and counts)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from memgpt_lite.models import AgentState, AgentStats, Block


@runtime_checkable
class AgentStorage(Protocol):
    """Agents: created with their blocks, read, changed, renamed, deleted."""

    def create_agent(
        self, state: AgentState, blocks: Sequence[Block], author: str = "create"
    ) -> None:
        """Store a new agent with its blocks, in this order: a block not stored
        yet is created (its value the first version of its history, by
        `author`), a stored one (shared with another agent) is linked.
        Sets `state.block_ids`. AlreadyExistsError if the owner has an agent
        of that name already (names are unique within an owner; another
        user's agent may have the same, and any agent the same display
        name). `state.owner` is
        stored here, once: later writes of the agent keep it."""
        ...

    def get_agent(
        self, name_or_id: str, owner: str | None = None, conversation: str | None = None
    ) -> AgentState:
        """The agent with this id, else the one with this name (with
        `conversation`, its copy in that conversation: see
        `ConversationStorage`; NotFoundError if it has none): with `owner`,
        among that user's agents only (another user's agent is not found);
        without, the default user's agent of that name first, then the only
        other user's (ConfigError if several users have one, none of them
        the default user). NotFoundError if there is none."""
        ...

    def list_agents(self, owner: str | None = None) -> list[tuple[AgentState, AgentStats]]:
        """Every agent with its stats, by name; with `owner`, only that user's."""
        ...

    def agent_stats(self, agent_id: str) -> AgentStats:
        """Message and passage counts, last activity, last memory change (O(1)).
        NotFoundError for an unknown agent."""
        ...

    def update_agent(
        self,
        agent_id: str,
        change: Callable[[AgentState], object],
        conversation: str | None = None,
    ) -> AgentState:
        """Apply `change` to the agent (or its copy in `conversation`) as
        stored now (read inside the write, so nothing changes it in between)
        and store the result; returns it. The
        owner stays as created. NotFoundError for an unknown agent; nothing
        is stored if `change` raises."""
        ...

    def save_agent(self, state: AgentState) -> None:
        """Store `state` whole, if the stored agent is still as `state` was
        read (its `updated_at` is the version, moved forward by every write),
        except its `owner`, which stays as created. ConflictError, storing
        nothing, if anything changed it since; NotFoundError if it was
        deleted. `update_agent` changes one field."""
        ...

    def rename_agent(
        self, agent_id: str, new_name: str, display_name: str | None = None
    ) -> AgentState:
        """Give the agent another name and display name (None: none);
        returns the renamed state. AlreadyExistsError if another agent of
        its owner has that name (display names may repeat), NotFoundError if
        unknown."""
        ...

    def delete_agent(self, agent_id: str) -> None:
        """Delete the agent, its messages, passages, vectors and step lock, and
        its blocks that no other agent shares. An unknown id changes nothing."""
        ...
