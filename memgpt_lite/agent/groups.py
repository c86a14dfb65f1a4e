"""Groups whose agents talk together (Letta's multi-agent groups), as
`workspace.talking_groups`: made, changed, their messages read and reset.

- A round-robin group: a send to it is a round of turns (group_rounds.py,
  which the server steps): each of its agents in turn, `max_turns` turns in
  all (None: one each), steps on what was said since its own last turn:
  the user's message and the others' replies, each a user message of its
  step naming who said it (`step_input.GroupTurn`). What an agent did not
  hear by the end of the round is stored in its history then, so its next
  turn goes on from there.
- A dynamic group: a round too, but before each turn its main agent picks
  who speaks next, by name; a reply with the group's `termination_token`
  ends the round.
- A supervisor group: a send to it is a step of its main agent, which
  messages the others with `send_message_to_all_agents_in_group`
  (tools/multi_agent.py; attached to it here), each answering in a step of
  its own.

Each agent that a group's sends step (a round-robin group's agents, a
supervisor group's main agent) talks in a conversation of its own for the
group (agent/conversations.py), made when first needed: the group's
messages are those conversations', and resetting them deletes those
conversations, while the agents' other histories and their memory stay.
Sleep-time groups are agent/sleeptime.py's.
"""

from __future__ import annotations

from collections.abc import Sequence

from memgpt_lite.conversations import Conversation
from memgpt_lite.errors import ApprovalError, ConfigError
from memgpt_lite.loop.approvals import stored_waiting_answer
from memgpt_lite.models import MAX_STORED_INT, AgentState, Message
from memgpt_lite.storage.protocol import Storage
from memgpt_lite.storage.protocols.groups import AgentGroup
from memgpt_lite.tools.multi_agent import GROUP_TOOL

TALKING_TYPES = ("round_robin", "supervisor", "dynamic")
# Those with a main agent, and those whose agents take turns.
MANAGED_TYPES = ("supervisor", "dynamic")
TURN_TYPES = ("round_robin", "dynamic")
# Letta's word that ends a dynamic group's round, unless the group says another.
DEFAULT_TERMINATION_TOKEN = "DONE!"


class TalkingGroups:
    """The groups that talk, of every user (`workspace.talking_groups`)."""

    def __init__(self, store: Storage) -> None:
        self.store = store

    def create(
        self,
        owner: str,
        manager_type: str,
        agent_ids: Sequence[str],
        description: str = "",
        *,
        max_turns: int | None = None,
        manager_agent_id: str | None = None,
        termination_token: str | None = None,
    ) -> AgentGroup:
        """A new group of the owner's agents (ids or names; another user's
        agent is not found, word for word as an unknown one)."""
        if manager_type not in TALKING_TYPES:
            raise ConfigError(f"manager_type: {manager_type!r} is not a kind of group that talks")
        dynamic = manager_type == "dynamic"
        with self.store.transaction():
            group = AgentGroup(
                owner=owner,
                manager_type=manager_type,  # type: ignore[arg-type]
                description=description,
                max_turns=_turns(max_turns) if manager_type in TURN_TYPES else None,
                termination_token=(termination_token or DEFAULT_TERMINATION_TOKEN)
                if dynamic
                else None,
            )
            group.agent_ids = self._members(group, agent_ids)
            if manager_type in MANAGED_TYPES:
                self._set_manager(group, manager_agent_id)
            self.store.save_group(group)
        return group

    def modify(
        self,
        group: AgentGroup,
        *,
        agent_ids: Sequence[str] | None = None,
        description: str | None = None,
        max_turns: int | None = None,
        manager_agent_id: str | None = None,
        termination_token: str | None = None,
    ) -> AgentGroup:
        """The group with what is given changed (None: kept), stored. A new
        list of agents keeps the conversation of each that stays."""
        changed = group.model_copy(deep=True)
        with self.store.transaction():
            if description is not None:
                changed.description = description
            if max_turns is not None and group.manager_type in TURN_TYPES:
                changed.max_turns = _turns(max_turns)
            if termination_token and group.manager_type == "dynamic":
                changed.termination_token = termination_token
            if agent_ids is not None:
                changed.agent_ids = self._members(changed, agent_ids)
                kept = changed.conversations
                changed.conversations = {a: kept[a] for a in changed.agent_ids if a in kept}
            manager_agent_id = manager_agent_id if group.manager_type in MANAGED_TYPES else None
            if manager_agent_id is not None and manager_agent_id != group.manager_agent_id:
                changed.conversation_id = None  # the old main agent's
                self._set_manager(changed, manager_agent_id)
            elif changed.manager_agent_id in changed.agent_ids:
                raise ConfigError("agent_ids: the group's main agent cannot be one of its agents")
            self.store.save_group(changed)
        return changed

    def _members(self, group: AgentGroup, refs: Sequence[str]) -> list[str]:
        """The ids of the group owner's agents `refs` names, in order; a
        dynamic group's must have names of their own (its main agent picks
        one by name)."""
        agents = [self.store.get_agent(ref, owner=group.owner) for ref in refs]
        ids = [agent.id for agent in agents]
        twice = sorted({agent_id for agent_id in ids if ids.count(agent_id) > 1})
        if twice:
            raise ConfigError(f"agent_ids: agent {twice[0]!r} is listed more than once")
        names = [agent.shown_name.lower() for agent in agents]
        alike = sorted({name for name in names if names.count(name) > 1})
        if alike and group.manager_type == "dynamic":
            raise ConfigError(
                f"agent_ids: two agents are named {alike[0]!r}; the main agent of a dynamic "
                "group picks who speaks next by name"
            )
        return ids

    def _set_manager(self, group: AgentGroup, ref: str | None) -> None:
        """Make the owner's agent `ref` the group's main agent, a supervisor's
        with the tool that messages the group's agents."""
        if not ref:
            raise ConfigError(
                f"manager_config.manager_agent_id: a {group.manager_type} group needs one"
            )
        manager = self.store.get_agent(ref, owner=group.owner)
        if manager.id in group.agent_ids:
            raise ConfigError("agent_ids: the group's main agent cannot be one of its agents")
        group.manager_agent_id = manager.id
        if group.manager_type == "supervisor" and GROUP_TOOL.name not in manager.tool_names:

            def attach(state: AgentState) -> None:
                state.tool_names = [*state.tool_names, GROUP_TOOL.name]

            self.store.update_agent(manager.id, attach)

    def with_conversations(self, group_id: str, owner: str) -> AgentGroup:
        """The owner's group, with a conversation for each agent its sends
        step (made now for those that have none, or whose was deleted)."""
        with self.store.transaction():
            group = self.store.get_group(group_id, owner)
            made = False
            summary = f"group {group.id}" + (f": {group.description}" if group.description else "")
            manager = group.manager_agent_id
            if group.manager_type in MANAGED_TYPES and manager and group.conversation_id is None:
                group.conversation_id = self._new(manager, summary)
                made = True
            if group.manager_type in TURN_TYPES:
                for agent_id in group.agent_ids:
                    if agent_id not in group.conversations:
                        group.conversations[agent_id] = self._new(agent_id, summary)
                        made = True
            if made:
                self.store.save_group(group)
        return group

    def _new(self, agent_id: str, summary: str) -> str:
        made = self.store.create_conversation(Conversation(agent_id=agent_id, summary=summary))
        return made.id

    def conversations(self, group: AgentGroup) -> list[tuple[str, str]]:
        """The group's conversations, as (agent id, conversation id)."""
        found = list(group.conversations.items())
        if group.manager_agent_id is not None and group.conversation_id is not None:
            found.insert(0, (group.manager_agent_id, group.conversation_id))
        return found

    def messages(self, group: AgentGroup) -> list[Message]:
        """The group's messages, oldest first: its conversations', each said
        once (the copies an agent heard of what the user or another agent
        said are left out)."""
        found = [
            message
            for agent_id, conversation in self.conversations(group)
            for message in self.store.messages_from(agent_id, 0, conversation)
            if not (message.role == "user" and message.name is not None)
        ]
        return sorted(found, key=lambda m: m.created_at)

    def reset(self, group: AgentGroup) -> None:
        """Delete the group's messages: its conversations (the next send
        makes new ones); the agents' other histories and memory stay."""
        with self.store.transaction():
            for _, conversation in self.conversations(group):
                self.store.delete_conversation(conversation)

    def check_not_waiting(self, group: AgentGroup) -> None:
        """ApprovalError if an agent of the group waits for the user's
        approval in its conversation of the group: a round would talk past it."""
        for agent_id, conversation in self.conversations(group):
            if stored_waiting_answer(self.store, agent_id, conversation) is not None:
                raise ApprovalError(
                    f"agent {agent_id!r} waits for the user's approval in conversation "
                    f"{conversation!r} of the group: answer it there first"
                )

    def tell(self, messages: Sequence[Message]) -> None:
        """Store what agents heard after their last turn of a round."""
        if messages:
            self.store.add_messages(messages)


def _turns(max_turns: int | None) -> int | None:
    if max_turns is not None and not 1 <= max_turns <= MAX_STORED_INT:
        raise ConfigError(
            f"manager_config.max_turns: a number of turns, 1 or more, not {max_turns}"
        )
    return max_turns
