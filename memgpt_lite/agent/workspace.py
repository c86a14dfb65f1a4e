"""The application layer: a `Workspace` is the agents of one database,
opened with the settings an edge resolved, and what the command line and
the server do with them.

The command line (`memgpt-lite ...`, cli/) and the HTTP server (server/) go
through here, never to the loop or the store themselves: they get their
agents here (`create_agent`, `load_agent`, `agent_for`), and list, rename
and delete them, read their blocks, stats, token usage, tool calls
waiting for approval and unanswered messages, page and search their
history, give them sleep-time agents, and make and check the server's API
keys; groups of agents that talk together are `workspace.talking_groups`
(groups.py); the identities of users' apps are `workspace.identities`
(identities.py), users' providers `workspace.providers` (providers.py),
Letta's archives `workspace.archives` (archives.py), the tool registry
`workspace.tools` (tool_registry.py), the MCP servers `workspace.mcp`
(mcp_servers.py). A
step itself runs on the agent (`agent.stream(...)`, its runner:
agent/runner.py); its events are plain data (events.py).

What needs no agent (no model, no tokenizer, no custom tools at hand) is
read from the database here: `memgpt-lite show` and `log` work on a
read-only database and without an API key. `copy_database` moves every
agent of one database to another.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

from memgpt_lite.agent import keys
from memgpt_lite.agent.archives import Archives
from memgpt_lite.agent.identities import Identities
from memgpt_lite.agent.providers import Providers
from memgpt_lite.conversations import Conversation, no_conversation
from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import (
    DEFAULT_USER,
    AgentSettings,
    AgentState,
    AgentStats,
    ApiKey,
    Block,
    Message,
    ModelUsage,
    ToolCall,
    UsageRecord,
)
from memgpt_lite.settings.values import Settings
from memgpt_lite.storage import copy
from memgpt_lite.storage.copy import AgentCopy
from memgpt_lite.storage.open import open_storage
from memgpt_lite.storage.protocol import Storage
from memgpt_lite.storage.protocols.accounts import StepFeedback, StepUsage
from memgpt_lite.storage.protocols.groups import SLEEPTIME_TYPES, AgentGroup, ManagerType
from memgpt_lite.storage.protocols.runs import Run

# What runs agents (the agent and its runner: the model client, the token
# counter, the loop, the tools), the tool registry and the MCP servers are
# imported where first used: a command that only reads the database
# (`memgpt-lite agents`, `show`, `log`) starts without them, a few hundred ms
# of CPU less (benchmarks/startup.py).
if TYPE_CHECKING:
    from memgpt_lite.agent.agent import Agent, PeerKey
    from memgpt_lite.agent.groups import TalkingGroups
    from memgpt_lite.agent.mcp_servers import MCPServers
    from memgpt_lite.agent.tool_registry import ToolRegistry
    from memgpt_lite.embeddings.embedder import Embedder

__all__ = [
    "SLEEPTIME_TYPES",
    "AgentCopy",
    "AgentGroup",
    "ManagerType",
    "Workspace",
    "copy_database",
]

# A history search with a time limit filters the best this many matches (plus
# the pages before the one asked for): search ranks, it does not filter by time.
SEARCH_DEPTH_WITH_SINCE = 1000


class Workspace:
    """The agents of one database (see the module's doc). Open one with
    `Workspace.open(location, settings)`, or around a store already open;
    close it with `close()` or `with`."""

    def __init__(self, store: Storage, settings: Settings) -> None:
        self.store = store  # for agentfile/, which reads and writes whole agents
        self.settings = settings

    @cached_property
    def tools(self) -> ToolRegistry:
        """The registered tools (tool_registry.py)."""
        from memgpt_lite.agent.tool_registry import ToolRegistry  # see the imports

        return ToolRegistry(self.store, self.settings)

    @cached_property
    def identities(self) -> Identities:
        """The identities of users' apps (identities.py)."""
        return Identities(self.store)

    @cached_property
    def talking_groups(self) -> TalkingGroups:
        """Groups whose agents talk together: round robin, supervisor (groups.py)."""
        from memgpt_lite.agent.groups import TalkingGroups  # see the imports

        return TalkingGroups(self.store)

    @cached_property
    def providers(self) -> Providers:
        """Users' providers, with the API keys they brought (providers.py)."""
        return Providers(self.store)

    @cached_property
    def archives(self) -> Archives:
        """Letta's archives: named ones, and the agents' own (archives.py)."""
        return Archives(self.store)

    @cached_property
    def mcp(self) -> MCPServers:
        """The MCP servers agents use (mcp_servers.py)."""
        from memgpt_lite.agent.mcp_servers import MCPServers  # see the imports

        return MCPServers(self.store, self.settings)

    @classmethod
    def open(cls, location: str | os.PathLike[str], settings: Settings) -> Workspace:
        """The database at `location` (a SQLite file, created if missing, or a
        postgresql:// URL), upgraded if it is older; a StoreError or
        ConfigError if it cannot be opened."""
        return cls(open_storage(location, settings=settings.storage), settings)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def transaction(self) -> AbstractContextManager[Any]:
        """One write transaction: what is done inside is stored together, or not at all."""
        return self.store.transaction()

    # Agents

    def create_agent(
        self,
        name: str,
        model: str,
        *,
        blocks: Sequence[Block] | None = None,
        system: str | None = None,
        base_url: str | None = None,
        settings: AgentSettings | None = None,
        llm_options: dict[str, Any] | None = None,
        embedder: Embedder | str | None = None,
        timeout: float | None = None,
        owner: str = DEFAULT_USER,
        tools: Sequence[str] = (),
        display_name: str | None = None,
    ) -> Agent:
        """Create and store an agent, as `Agent.create` does; `tools` are
        names of built-in tools to attach (tools/sets.py ATTACHABLE_TOOLS);
        `display_name`: free text shown where Letta's names go (checked;
        other agents of the owner may have it too: agent/naming.py)."""
        from memgpt_lite.agent.agent import Agent  # see the imports

        with self.store.transaction():
            agent = Agent.create(
                name,
                model,
                blocks=blocks,
                tools=tools,
                system=system,
                base_url=base_url,
                settings=settings,
                llm_options=llm_options,
                embedder=embedder,
                timeout=timeout,
                owner=owner,
                store=self.store,
                process_settings=self.settings,
            )
            if display_name is not None:
                agent.rename(name, display_name)
        return agent

    def load_agent(self, ref: str, *, timeout: float | None = None) -> Agent:
        """The agent named or numbered `ref`, as `Agent.load` opens it;
        `timeout` limits each of its model requests."""
        from memgpt_lite.agent.agent import Agent  # see the imports

        return Agent.load(ref, store=self.store, timeout=timeout, process_settings=self.settings)

    def agent_for(
        self,
        state: AgentState,
        *,
        api_key: str | None = None,
        peer_api_key: PeerKey | None = None,
    ) -> Agent:
        """An `Agent` for the row `state`, already read; `api_key` for its
        model requests (for this object only: never stored), `peer_api_key`
        the key for those of each agent it messages (see `Agent`)."""
        from memgpt_lite.agent.agent import Agent  # see the imports

        return Agent(
            state,
            self.store,
            api_key=api_key,
            process_settings=self.settings,
            peer_api_key=peer_api_key,
        )

    def agent_state(
        self, ref: str, owner: str | None = None, conversation: str | None = None
    ) -> AgentState:
        """The stored row of the agent numbered or named `ref` (ids first).
        With `owner`, among that user's agents only: another user's agent is
        not found, word for word as an agent that does not exist. With
        `conversation`, the agent's copy in it (its window, summary and
        alert are the conversation's; NotFoundError if the agent has none)."""
        return self.store.get_agent(ref, owner=owner, conversation=conversation)

    def list_agents(self, owner: str | None = None) -> list[tuple[AgentState, AgentStats]]:
        """Every agent (of `owner`, if given), with its counts."""
        return self.store.list_agents(owner=owner)

    def agent_stats(self, agent_id: str) -> AgentStats:
        return self.store.agent_stats(agent_id)

    def update_agent(self, agent_id: str, change: Callable[[AgentState], None]) -> AgentState:
        """Apply `change` to the agent's row as stored now, and store it: the
        fields it sets alone, so a change made meanwhile elsewhere stays."""
        return self.store.update_agent(agent_id, change)

    def rename_agent(
        self, state: AgentState, new_name: str, display_name: str | None = None
    ) -> AgentState:
        """Give the agent another name and display name (None: none; its id,
        memory and history stay)."""
        agent = self.agent_for(state)
        agent.rename(new_name, display_name)
        return agent.state

    def delete_agent(self, agent_id: str) -> None:
        """Delete an agent with its messages and passages (blocks it shares
        stay); a main agent's sleep-time agents go with it, and a sleep-time
        agent's group with it (its main agent stays: agent/sleeptime.py). A
        group that talks loses the agent, or goes with its main agent."""
        from memgpt_lite.agent import sleeptime  # see the imports

        with self.store.transaction():
            sleeptime.remove_sleeptime_agents(self.store, agent_id)
            for group in self.store.agent_groups(agent_id):  # of which it is a member
                if group.manager_type in SLEEPTIME_TYPES:
                    self.store.delete_group(group.id)
            self.store.delete_agent(agent_id)

    # Groups: a main agent and its sleep-time agents (sleeptime.py)

    def add_sleeptime_agent(
        self, state: AgentState, manager_type: ManagerType = "sleeptime"
    ) -> AgentGroup:
        """Give the agent a sleep-time agent on its blocks; their group."""
        from memgpt_lite.agent import sleeptime  # see the imports

        return sleeptime.add_sleeptime_agent(self.store, state, manager_type=manager_type)

    def remove_sleeptime_agents(self, agent_id: str) -> None:
        """Delete the agent's group and its sleep-time agents, if it has them."""
        from memgpt_lite.agent import sleeptime  # see the imports

        sleeptime.remove_sleeptime_agents(self.store, agent_id)

    def agent_groups(self, agent_id: str) -> list[AgentGroup]:
        """The groups the agent is the main agent or a member of."""
        return self.store.agent_groups(agent_id)

    def groups(self, owner: str) -> list[AgentGroup]:
        """The owner's groups, oldest first."""
        return self.store.list_groups(owner)

    def group(self, group_id: str, owner: str) -> AgentGroup:
        """The owner's group; NotFoundError for another owner's, word for word."""
        return self.store.get_group(group_id, owner)

    def save_group(self, group: AgentGroup) -> None:
        self.store.save_group(group)

    def delete_group(self, group_id: str) -> None:
        """Delete the group; its agents stay, each an agent of its own."""
        self.store.delete_group(group_id)

    # Core memory, read without an agent

    def blocks(self, agent_id: str) -> list[Block]:
        return self.store.get_blocks(agent_id)

    def block_owners(self, block_id: str) -> list[str]:
        """The names of the agents a block is attached to."""
        return self.store.block_owners(block_id)

    def share_block(self, agent_id: str, block_id: str, owner: str) -> None:
        """Attach to agent `agent_id` the block `block_id`: one of `owner`'s
        standalone blocks or another agent of `owner`'s block, shared (an
        edit through any holder is seen by all). Another user's block is not
        found, word for word as a block that does not exist."""
        self.store.attach_block(agent_id, self.store.user_block(block_id, owner))

    def create_block(self, block: Block, owner: str) -> None:
        """Store a standalone block of `owner`'s: held by no agent yet, and
        kept when detached from its last agent."""
        self.store.create_block(block, owner, author=owner)

    def user_block(self, block_id: str, owner: str) -> Block:
        """`owner`'s block (standalone or of one of their agents), or NotFoundError."""
        return self.store.user_block(block_id, owner)

    def user_blocks(self, owner: str) -> list[Block]:
        """Every block `owner` may reach (standalone or of their agents), oldest first."""
        return self.store.user_blocks(owner)

    def replace_block(self, block: Block, author: str) -> None:
        """Store every field of a block as given, a new value in its history by `author`."""
        self.store.save_block(block, author)

    def delete_block(self, block_id: str, owner: str) -> None:
        """Delete `owner`'s block, detaching it from every agent that holds it."""
        self.store.delete_block(self.store.user_block(block_id, owner).id)

    def detach_block(self, agent_id: str, block_id: str) -> None:
        """Take a block from an agent; it is deleted once no agent holds it,
        unless it is a standalone block (`create_block`)."""
        if block_id not in {b.id for b in self.store.get_blocks(agent_id)}:
            raise NotFoundError(f"the agent has no block with id {block_id!r}")
        self.store.detach_block(agent_id, block_id)

    def update_block(self, block: Block) -> None:
        """Store a block's limit and description as given; its value is as
        stored (`Agent.set_block` changes that, with its history)."""
        self.store.save_block(block)

    # History

    def unanswered(self, state: AgentState) -> list[Message]:
        """The user's messages in the agent's context window whose step
        stopped before a reply reached the user (it failed, or its process
        was killed, perhaps after tool calls): stored, but left out of
        requests until sent again or dropped (memory/recall/answered.py).
        `state` as stored now: where the window starts."""
        from memgpt_lite.memory.recall.answered import unanswered  # see the imports

        return unanswered(
            self.store.messages_from(state.id, state.context_start, state.conversation_id)
        )

    def window(self, state: AgentState) -> list[Message]:
        """The messages in the context window of `state`'s agent (of its
        conversation, for its copy in one), oldest first: read-only."""
        return self.store.window(state.id, state.context_start, state.conversation_id)

    def history_page(
        self, agent_id: str, limit: int, offset: int = 0, since: datetime | None = None
    ) -> tuple[list[Message], int]:
        """One page of the agent's messages, oldest first: the newest `limit`
        after skipping `offset` newer ones (from `since` on, if given), and
        how many there are."""
        return self.store.recent_messages(agent_id, limit, offset, since)

    def search_history(
        self,
        agent_id: str,
        query: str,
        limit: int,
        offset: int = 0,
        since: datetime | None = None,
    ) -> tuple[list[Message], int]:
        """One page of the user and assistant messages matching any word of
        `query`, best first (from `since` on, if given), and how many match."""
        if since is None:
            return self.store.search_messages(agent_id, query, limit, offset)
        depth = SEARCH_DEPTH_WITH_SINCE + offset + limit
        ranked, _ = self.store.search_messages(agent_id, query, depth)
        kept = [message for message in ranked if message.created_at >= since]
        return kept[offset : offset + limit], len(kept)

    def all_messages(self, agent_id: str, conversation: str | None = None) -> list[Message]:
        """Every stored message of the agent's conversation (None: its
        default one), oldest first."""
        return self.store.messages_from(agent_id, 0, conversation)

    def newest_messages(
        self, agent_id: str, count: int, conversation: str | None = None
    ) -> list[Message]:
        """The newest `count` messages of the agent's conversation, oldest first."""
        return self.store.last_messages(agent_id, count, conversation)

    def reset_messages(self, agent: Agent) -> AgentState:
        """Delete every message of `agent`, once no step of it runs, with
        what pointed into them (its summary, window start and reflection
        mark); its blocks and archival memory stay. Its state as stored now."""
        with agent.runner.step_lock(), self.transaction():
            self.store.delete_messages_from(agent.state.id, 0)
            return self.store.update_agent(agent.state.id, _forget_messages)

    # Approvals, read without an agent

    def waiting_answer(self, agent_id: str, conversation: str | None = None) -> Message | None:
        """The stored answer whose tool calls wait for the user's approval,
        if any (in the agent's `conversation`; None: its default one)."""
        from memgpt_lite.loop.approvals import stored_waiting_answer  # see the imports

        return stored_waiting_answer(self.store, agent_id, conversation)

    def waiting_calls(self, state: AgentState) -> list[ToolCall]:
        """The calls of `state`'s agent waiting for approval, for what opens no
        agent (its custom tools are not at hand): of the waiting answer's
        calls, those that the tool rules or the built-in tools ask approval
        for; all of them when none is (a custom tool made with
        requires_approval=True)."""
        from memgpt_lite.loop.approvals import calls_waiting  # see the imports
        from memgpt_lite.tools.rules import RuleBook
        from memgpt_lite.tools.sets import agent_tools

        tools = agent_tools(state.settings.tool_set, {}, state.tool_names)
        answer = self.waiting_answer(state.id, state.conversation_id)
        return calls_waiting(tools, RuleBook(state.settings.tool_rules), answer)

    # Conversations: an agent's message histories over its one memory
    # (agent/conversations.py), for what opens no agent

    def conversation(self, conversation_id: str, owner: str) -> Conversation:
        """The owner's conversation: one of another user's agents is not
        found, word for word as one that does not exist."""
        found = self.store.get_conversation(conversation_id)
        try:
            self.store.get_agent(found.agent_id, owner=owner)
        except NotFoundError:
            raise no_conversation(conversation_id) from None
        return found

    def conversations(self, owner: str, agent_id: str | None = None) -> list[Conversation]:
        """The conversations of the owner's agent, or of all the owner's
        agents, oldest first."""
        return self.store.list_conversations(agent_id, owner=owner)

    def create_conversation(self, agent_id: str, summary: str | None = None) -> Conversation:
        return self.store.create_conversation(Conversation(agent_id=agent_id, summary=summary))

    def fork_conversation(self, agent_id: str, conversation_id: str | None) -> Conversation:
        """A new conversation that goes on from where the agent's
        `conversation_id` is now (agent/conversations.py)."""
        from memgpt_lite.agent.conversations import fork_conversation

        return fork_conversation(self.store, agent_id, conversation_id)

    def update_conversation(self, conversation_id: str, summary: str | None) -> Conversation:
        return self.store.update_conversation_summary(conversation_id, summary)

    def delete_conversation(self, conversation_id: str) -> None:
        """The conversation and its messages (the agent's memory stays)."""
        self.store.delete_conversation(conversation_id)

    # Letta's runs: every send of Letta's is one (server/letta/run_life.py)

    def start_run(
        self,
        owner: str,
        agent_id: str,
        conversation_id: str | None = None,
        *,
        background: bool = False,
    ) -> Run:
        """A new run of the owner's agent (in its conversation; None: its
        default one), stored as running."""
        run = Run(
            owner=owner,
            agent_id=agent_id,
            conversation_id=conversation_id,
            status="running",
            background=background,
        )
        self.store.save_run(run)
        return run

    def save_run(self, run: Run) -> None:
        self.store.save_run(run)

    def end_run(self, run: Run, last_chunk: tuple[int, str] | None = None) -> Run:
        """Store how the run's step ended (a cancelled run stays cancelled),
        with the last chunk of its kept stream if given, together: a reader
        that sees the run ended finds every chunk. Returns it as stored."""
        with self.store.transaction():
            if last_chunk is not None:
                self.store.add_run_chunks(run.id, [last_chunk])
            return self.store.end_run(run)

    def run(self, run_id: str, owner: str) -> Run:
        """The owner's run; NotFoundError for another owner's, word for word."""
        return self.store.get_run(run_id, owner)

    def runs(self, owner: str, limit: int, agent_id: str | None = None) -> list[Run]:
        """The owner's newest `limit` runs (of one agent, if given), newest first."""
        return self.store.list_runs(owner, agent_id, limit=limit)

    def messages_by_id(self, agent_id: str, ids: Sequence[str]) -> list[Message]:
        """The agent's messages among `ids` (of any conversation), oldest first."""
        return self.store.messages_by_id(agent_id, ids)

    def step_messages(self, agent_id: str, step_ids: Sequence[str]) -> list[Message]:
        """The agent's messages of these steps (of any conversation), oldest first."""
        return self.store.step_messages(agent_id, step_ids)

    # Token usage and the server's API keys (keys.py)

    def steps(
        self,
        owner: str,
        limit: int,
        agent_id: str | None = None,
        step_ids: Sequence[str] | None = None,
    ) -> list[StepUsage]:
        """The newest `limit` steps with usage of the owner's agents (of one
        agent, among `step_ids`, if given), newest first, each with its totals."""
        return self.store.list_steps(owner, agent_id, step_ids, limit)

    def set_step_feedback(
        self,
        agent_id: str,
        step_id: str,
        feedback: StepFeedback | None,
        tags: Sequence[str] | None = None,
    ) -> None:
        """Store a user's feedback on the agent's step (None takes it away),
        and its tags if given (None keeps them)."""
        self.store.set_step_feedback(agent_id, step_id, feedback, tags)

    def step_usage(self, agent_id: str, step_id: str) -> list[UsageRecord]:
        """The usage records of one step of the agent, in the order stored."""
        return self.store.step_usage(agent_id, step_id)

    def usage_by_model(self, agent_id: str) -> list[ModelUsage]:
        """The agent's stored token totals, one per model."""
        return self.store.usage_by_model(agent_id)

    def create_key(self, user: str, *, admin: bool = False) -> tuple[ApiKey, str]:
        """A new key of `user` (an admin key with `admin`), and its secret
        (shown once, never stored)."""
        return keys.create_key(self.store, user, admin=admin)

    def api_keys(self) -> list[ApiKey]:
        """Every key, oldest first (revoked ones too); no secret."""
        return self.store.list_api_keys()

    def revoke_key(self, key_id: str) -> ApiKey:
        return self.store.revoke_api_key(key_id)

    def user_for_key(self, secret: str) -> str | None:
        """The user whose key `secret` is; None if unknown or revoked."""
        return keys.user_for_key(self.store, secret)

    def key_for_secret(self, secret: str) -> ApiKey | None:
        """The key whose secret is `secret`; None if unknown or revoked."""
        return keys.key_for_secret(self.store, secret)


def _forget_messages(stored: AgentState) -> None:
    # No message is left for these to point into (and a new message's seq
    # may be lower than a deleted one's).
    stored.summary, stored.context_start, stored.reflected_seq = "", 0, 0
    stored.pressure_warned = False


def copy_database(
    source: str | os.PathLike[str],
    destination: str | os.PathLike[str],
    *,
    on_keys: Callable[[int], None] | None = None,
) -> list[AgentCopy]:
    """Copy every agent and API key of one database into another
    (`memgpt-lite copy-db`; see storage/copy.py): what was copied of each
    agent. `on_keys` is told how many keys were."""
    return copy.copy_database(source, destination, on_keys=on_keys)
