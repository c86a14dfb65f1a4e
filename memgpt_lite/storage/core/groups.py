"""Groups of agents (see `GroupStorage`), for every backend: a row of
`agent_groups`, its members in `agent_group_members`, in order, each with
the conversation it talks in there."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import utcnow
from memgpt_lite.storage.core.errors import unknown_agent
from memgpt_lite.storage.core.transactions import Transactions, guarded
from memgpt_lite.storage.protocols.groups import AgentGroup

_COLUMNS = (
    "id",
    "owner",
    "manager_type",
    "manager_agent_id",
    "description",
    "frequency",
    "max_message_buffer_length",
    "min_message_buffer_length",
    "processed_seq",
    "last_run_at",
    "last_error",
    "max_turns",
    "termination_token",
    "conversation_id",
    "created_at",
    "updated_at",
)
_TIMES = ("last_run_at", "created_at", "updated_at")
# Whether an agent is a sleep-time group's main agent: read as its step starts.
MANAGED_GROUP_READ = (
    "SELECT 1 FROM agent_groups WHERE manager_agent_id = ? "
    "AND manager_type IN ('sleeptime', 'voice_sleeptime')"
)
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM agent_groups"
_SAVE = (
    f"INSERT INTO agent_groups ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
    "ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS[2:] if c != "created_at")
)


class Groups(Transactions):
    """Groups of agents (see `GroupStorage`)."""

    @guarded
    def save_group(self, group: AgentGroup) -> None:
        agents = [*([group.manager_agent_id] if group.manager_agent_id else []), *group.agent_ids]
        with self.transaction():
            for agent_id in dict.fromkeys(agents):
                if not self._one("SELECT 1 FROM agents WHERE id = ?", [agent_id]):
                    raise unknown_agent(agent_id)
            group.updated_at = utcnow()
            values = group.model_dump(include=set(_COLUMNS))
            for column in _TIMES:
                if values[column] is not None:
                    values[column] = self.dialect.time(values[column])
            taken = "the agent has a group already: one group per main agent"
            with self.refusing_duplicates(taken):
                self._execute(_SAVE, [values[c] for c in _COLUMNS])
            self._execute("DELETE FROM agent_group_members WHERE group_id = ?", [group.id])
            for position, agent_id in enumerate(group.agent_ids):
                self._execute(
                    "INSERT INTO agent_group_members (group_id, agent_id, position, "
                    "conversation_id) VALUES (?, ?, ?, ?)",
                    [group.id, agent_id, position, group.conversations.get(agent_id)],
                )

    @guarded
    def get_group(self, group_id: str, owner: str | None = None) -> AgentGroup:
        where, params = "g.id = ?", [group_id]
        if owner is not None:
            where, params = where + " AND g.owner = ?", [*params, owner]
        found = self._groups(where, params)
        if not found:
            raise NotFoundError(f"no group with id {group_id!r}")
        return found[0]

    @guarded
    def list_groups(self, owner: str | None = None) -> list[AgentGroup]:
        if owner is None:
            return self._groups("1 = 1", [])
        return self._groups("g.owner = ?", [owner])

    @guarded
    def agent_groups(self, agent_id: str) -> list[AgentGroup]:
        return self._groups(
            "g.manager_agent_id = ? OR g.id IN "
            "(SELECT group_id FROM agent_group_members WHERE agent_id = ?)",
            [agent_id, agent_id],
        )

    @guarded
    def delete_group(self, group_id: str) -> None:
        self._execute("DELETE FROM agent_groups WHERE id = ?", [group_id])

    def _groups(self, where: str, params: Sequence[Any]) -> list[AgentGroup]:
        """The groups `where` selects (on `g`), oldest first, with their
        members: one read, so a group and its members agree."""
        rows = self._all(
            f"SELECT {', '.join('g.' + c for c in _COLUMNS)}, m.agent_id, m.conversation_id "
            "FROM agent_groups g "
            "LEFT JOIN agent_group_members m ON m.group_id = g.id "
            f"WHERE {where} ORDER BY g.created_at, g.id, m.position",
            params,
        )
        groups: dict[str, AgentGroup] = {}
        for row in rows:
            group = groups.get(row[0])
            if group is None:
                group = groups[row[0]] = AgentGroup(**dict(zip(_COLUMNS, row[:-2], strict=True)))
            member, conversation = row[-2:]
            if member is not None:
                group.agent_ids.append(member)
                if conversation is not None:
                    group.conversations[member] = conversation
        return list(groups.values())
