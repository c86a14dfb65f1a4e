"""An agent's conversations, as `agent.conversations`.

A conversation is a message history of its own over the agent's one memory
(its blocks and archival memory, which every conversation reads and
changes): its own in-context window and recursive summary, and its own
step lock, so two conversations of an agent step at once while one
conversation's steps still run one at a time. The agent's history from
before conversations is its default conversation (`"default"`).

`agent.conversations.open(id)` is the agent in that conversation: another
`Agent` like any other (`step`, `stream`, `approve`, `context_messages`,
`history`, ...), its steps run by the one step core (loop/step.py) with
the copy of the agent's state that the store gives for the conversation.
"""

from __future__ import annotations

import copy
from typing import Any, Generic, Protocol, TypeVar

from memgpt_lite.agent.runner import Runner
from memgpt_lite.conversations import Conversation, conversation_ref
from memgpt_lite.memory.archival.passages import ArchivalMemory
from memgpt_lite.memory.recall.history import History
from memgpt_lite.models import AgentState, Message
from memgpt_lite.storage.protocol import Storage


class ConversationHolder(Protocol):
    """What `Conversations` needs of its agent (an `Agent`)."""

    state: AgentState
    store: Storage
    runner: Runner
    archival: ArchivalMemory
    history: History
    conversations: Conversations[Any]


A = TypeVar("A", bound=ConversationHolder)


class Conversations(Generic[A]):
    """The conversations of one agent (`agent.conversations`)."""

    def __init__(self, agent: A) -> None:
        self._agent = agent

    def create(self, summary: str | None = None) -> Conversation:
        """A new, empty conversation; `summary`: what it is about (a title)."""
        agent = self._agent
        return agent.store.create_conversation(
            Conversation(agent_id=agent.state.id, summary=summary)
        )

    def fork(self, conversation_id: str | None, summary: str | None = None) -> Conversation:
        """A new conversation that goes on from where `conversation_id` (None
        or "default": the default one) is now (see `fork_conversation`)."""
        return fork_conversation(self._agent.store, self._agent.state.id, conversation_id, summary)

    def list(self) -> list[Conversation]:
        """The agent's conversations, oldest first (the default one has no entry)."""
        return self._agent.store.list_conversations(self._agent.state.id)

    def get(self, conversation_id: str) -> Conversation:
        """NotFoundError for a conversation this agent does not have."""
        return self._own(conversation_id)

    def update(self, conversation_id: str, summary: str | None) -> Conversation:
        """Set what the conversation is about."""
        self._own(conversation_id)
        return self._agent.store.update_conversation_summary(conversation_id, summary)

    def delete(self, conversation_id: str) -> None:
        """Delete the conversation and its messages (the agent's memory stays)."""
        self._own(conversation_id)
        self._agent.store.delete_conversation(conversation_id)

    def open(self, conversation_id: str | None) -> A:
        """The agent in the conversation (None or "default": its default
        one): another `Agent` on the same store, tools and endpoint, whose
        steps, window and history are the conversation's. NotFoundError for
        a conversation the agent does not have."""
        agent = self._agent
        conversation = conversation_ref(conversation_id)
        twin = copy.copy(agent)
        twin.state = agent.store.get_agent(agent.state.id, conversation=conversation)
        twin.runner = agent.runner.for_agent(twin)
        twin.archival = ArchivalMemory(twin.runner)
        twin.history = History(twin.runner)
        twin.conversations = Conversations(twin)
        return twin

    def _own(self, conversation_id: str) -> Conversation:
        agent = self._agent
        # The store's words for one that is not there, or is another agent's.
        agent.store.get_agent(agent.state.id, conversation=conversation_id)
        return agent.store.get_conversation(conversation_id)


def fork_conversation(
    store: Storage, agent_id: str, conversation_id: str | None, summary: str | None = None
) -> Conversation:
    """A new conversation of the agent that goes on from where its
    conversation `conversation_id` (None or "default": the default one) is
    now: a copy of each message in that one's window (fresh ids, the same
    words and times) and its recursive summary. What the two say next is
    their own; the agent's memory stays one. NotFoundError for a
    conversation the agent does not have."""
    source = conversation_ref(conversation_id)
    with store.transaction():
        state = store.get_agent(agent_id, conversation=source)
        window = store.messages_from(state.id, state.context_start, source)
        fork = Conversation(agent_id=state.id, summary=summary, window_summary=state.summary)
        copies = [
            Message(
                **m.model_dump(exclude={"id", "seq", "conversation_id"}), conversation_id=fork.id
            )
            for m in window
        ]
        if copies:
            store.add_messages(copies)  # numbers them: the window starts at the first
            fork.context_start = copies[0].seq or 0
        return store.create_conversation(fork)
