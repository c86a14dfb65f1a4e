"""A send to a group whose agents take turns (groups.py): a round, whose
turns the server steps one after another, each a step of one agent in its
conversation of the group, through the one loop.

- Round robin (Letta's RoundRobinMultiAgent): the group's agents in turn,
  `max_turns` turns (None: one each).
- Dynamic (Letta's DynamicMultiAgent): before each agent's turn, a turn of
  the group's main agent, told what was said since it last chose and asked
  to name who speaks next (any agent but the last one to speak); the first
  of them its reply names speaks. A reply with the group's
  `termination_token` ends the round; so do `max_turns` agents' turns.

Each agent steps on what was said since its own last turn: the user's
message (as the user's for the first agent to hear it, as a copy for the
others, `RELAYED_USER`), then each reply since, as `name: text` from its
agent (`step_input.Said`). What an agent has not heard by the end of the
round is stored in its conversation then (`left_unheard`), so its next
turn goes on from there.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from memgpt_lite.errors import ConfigError, LLMError
from memgpt_lite.models import AgentState, Message
from memgpt_lite.step_input import RELAYED_USER, GroupTurn, Said
from memgpt_lite.storage.protocols.groups import AgentGroup


@dataclass
class Turn:
    """One turn of a round: who steps, in which conversation, on what;
    `chooses`: a dynamic group's main agent's, which picks who speaks next."""

    speaker: AgentState
    conversation: str
    said: GroupTurn
    chooses: bool = False


@dataclass
class Round:
    """One send to a group whose agents take turns (see the module's doc).
    The caller steps each turn `turns()` gives, then tells `replied` what
    its speaker said, before asking for the next."""

    group: AgentGroup
    agents: list[AgentState]  # in the group's order
    text: str  # the user's
    manager: AgentState | None = None  # a dynamic group's main agent
    said: list[tuple[str | None, str]] = field(default_factory=list)  # (sender, text)
    heard: dict[str, int] = field(default_factory=dict)  # how much of `said` each has
    told_user: bool = False  # whether an agent heard the user's message yet
    choice: str = ""  # what the main agent said when it last chose
    ended: bool = False  # a reply said the termination token

    def __post_init__(self) -> None:
        self.said = [(None, self.text)]
        self.heard = {agent.id: 0 for agent in [*self.agents, *filter(None, [self.manager])]}

    def turns(self) -> Iterator[Turn]:
        if not self.agents:
            raise ConfigError("the group has no agents to talk")
        total = self.group.max_turns or len(self.agents)
        if self.manager is not None:
            yield from self._chosen_turns(self.manager, total)
            return
        for number in range(total):
            yield self._turn(self.agents[number % len(self.agents)])

    def _turn(self, speaker: AgentState) -> Turn:
        said = GroupTurn(said=self._unheard(speaker.id))
        return Turn(speaker, self.group.conversations[speaker.id], said)

    def _chosen_turns(self, manager: AgentState, total: int) -> Iterator[Turn]:
        last: str | None = None
        for _ in range(total):
            options = [a for a in self.agents if a.id != last] or self.agents
            ask = Said(content=self._choose_prompt(manager.id, options), sender=manager.id)
            conversation = self.group.conversation_id or ""
            yield Turn(manager, conversation, GroupTurn(said=[ask]), chooses=True)
            speaker = _named(options, self.choice)
            yield self._turn(speaker)
            last = speaker.id
            if self.ended:
                return

    def replied(self, turn: Turn, replies: Sequence[str]) -> None:
        """What `turn`'s speaker said (its replies), once its step ended."""
        if turn.chooses:
            self.choice = "\n".join(replies)
            return
        self.said += [(turn.speaker.id, text) for text in replies if text.strip()]
        self.heard[turn.speaker.id] = len(self.said)
        token = self.group.termination_token
        self.ended = bool(token) and any(token in text for text in replies if token)

    def _choose_prompt(self, manager_id: str, options: list[AgentState]) -> str:
        """What the main agent is asked before a turn: what was said since it
        last chose, and whom it may pick."""
        names = {agent.id: agent.shown_name for agent in self.agents}
        lines = [
            f"{'user' if sender is None else names.get(sender, sender)}: {text}"
            for sender, text in self.said[self.heard[manager_id] :]
        ]
        self.heard[manager_id] = len(self.said)
        description = f' ("{self.group.description}")' if self.group.description else ""
        return (
            f"Pick who speaks next in the group chat{description}: one of "
            f"{', '.join(a.shown_name for a in options)}. Reply with that agent's name; "
            "do not answer the chat yourself.\nSaid since you last picked, oldest first:\n"
            + ("\n".join(lines) or "(nothing)")
        )

    def _unheard(self, agent_id: str) -> list[Said]:
        """What the agent has not heard yet, as it hears it; now heard."""
        names = {agent.id: agent.shown_name for agent in self.agents}
        out = []
        for sender, text in self.said[self.heard[agent_id] :]:
            if sender is None:
                out.append(Said(content=text, sender=RELAYED_USER if self.told_user else None))
                self.told_user = True
            else:
                out.append(Said(content=f"{names[sender]}: {text}", sender=sender))
        self.heard[agent_id] = len(self.said)
        return out

    def left_unheard(self) -> list[Message]:
        """What each agent (and a dynamic group's main agent) did not hear by
        the end of the round, as the messages of its conversation it hears
        them in."""
        messages = []
        for agent in [*self.agents, *filter(None, [self.manager])]:
            if self.heard[agent.id] == len(self.said):
                continue
            conversation = self.group.conversations.get(agent.id, self.group.conversation_id)
            for item in self._unheard(agent.id):
                messages.append(
                    Message(
                        agent_id=agent.id,
                        role="user",
                        content=item.content,
                        name=item.sender,
                        conversation_id=conversation,
                    )
                )
        return messages


def _named(options: list[AgentState], text: str) -> AgentState:
    """The agent of `options` whose name comes first in `text` (any case);
    LLMError if none is named: the main agent's model did not do its part."""
    lowered = text.lower()
    found = [(lowered.find(a.shown_name.lower()), a) for a in options]
    named = sorted((at, n, a) for n, (at, a) in enumerate(found) if at >= 0)
    if not named:
        choices = ", ".join(a.shown_name for a in options)
        raise LLMError(f"the group's main agent named none of its agents ({choices}) to speak next")
    return named[0][2]
