"""Agents that call agents: Letta's multi-agent tools, by their names and
parameters (the descriptions are our own).

- `send_message_to_agent_and_wait_for_reply(message, other_agent_id)`: one
  other agent of the same owner, by name or id;
- `send_message_to_agents_matching_tags(message, match_all, match_some)`:
  each other agent of the owner that has every tag of `match_all` and at
  least one of `match_some` (its `AgentSettings.tags`), all at once;
- `send_message_to_all_agents_in_group(message)`: each agent of the
  supervisor group (agent/groups.py) whose main agent calls it, all at once.

An agent has them when they are attached by name (its `tool_names`; see
`ATTACHABLE_TOOLS` in tools/sets.py). The agent messaged runs a real step,
with its own step lock, memory, tools and model, through
`deps.message_agent`, which the agent layer provides: this module knows
agents only as stored rows. Another owner's agent is not found, word for
word as one that does not exist.

Chains are bounded, within a process:

- how deep a chain is travels with the call, in a context variable (each
  step of a chain runs inside the tool call that asked for it: in its task,
  or in a task or worker thread copied from it); a message that would go
  deeper than the strictest `max_agent_chain_depth` of the chain's agents is
  refused;
- which agent waits for which is kept for the whole process (`_WAITS`): a
  message to an agent that waits, itself or through others, for the sender
  would wait for the sender's own step lock and never be answered, so it is
  refused before it is sent. That covers an agent messaging itself, a cycle
  within a chain (A asks B, which asks A) and two chains that cross (A asks
  B while B, asked by someone else, asks A).

Steps in other processes are not seen: agents of two processes that message
each other in a cycle wait until a step lock's lease runs out.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from memgpt_lite.errors import MemGPTError, ModelRetry, NotFoundError
from memgpt_lite.models import AgentState, StepResult
from memgpt_lite.storage.protocols.groups import AgentGroup
from memgpt_lite.tools.schema import Tool, ToolContext, tool

# How many agents one tags message steps at once; the others wait their turn.
FANOUT_AT_ONCE = 4
# How many of the owner's agents an error names, when the one asked for is not found.
NAMED_AT_MOST = 20


@dataclass(frozen=True)
class _Chain:
    """The agents of a chain that wait for a reply, outermost first, and the
    strictest depth limit among them (None: no chain yet)."""

    names: tuple[str, ...] = ()
    limit: int | None = None


_NO_CHAIN = _Chain()
_CHAIN: ContextVar[_Chain] = ContextVar("memgpt_lite_agent_chain", default=_NO_CHAIN)


class _Waits:
    """Which agent's step waits for which other agent, in this process (by
    agent id; an agent that messages several at once waits for each)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._edges: dict[str, Counter[str]] = {}

    @contextmanager
    def waiting(self, sender: AgentState, target: AgentState) -> Iterator[None]:
        """Count `sender` as waiting for `target` while the block runs; a
        ModelRetry, before anything is sent, if `target` waits for `sender`."""
        with self._guard:
            if self._reaches(target.id, sender.id):
                raise ModelRetry(
                    f"{target.name} is itself waiting, directly or through other agents, for "
                    f"your reply: it could never answer. Answer without asking {target.name}."
                )
            self._edges.setdefault(sender.id, Counter())[target.id] += 1
        try:
            yield
        finally:
            with self._guard:
                edges = self._edges[sender.id]
                edges[target.id] -= 1
                if edges[target.id] <= 0:
                    del edges[target.id]
                if not edges:
                    del self._edges[sender.id]

    def _reaches(self, start: str, goal: str) -> bool:
        """Whether `start` waits for `goal`, directly or through others."""
        seen: set[str] = set()
        todo = [start]
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(self._edges.get(node, ()))
        return False


_WAITS = _Waits()


def _other_agent(ctx: ToolContext, ref: str) -> AgentState:
    """The owner's agent named or numbered `ref`; a ModelRetry naming the
    owner's other agents if there is none (another owner's is none)."""
    ref = ref.strip()
    try:
        found: AgentState | None = ctx.store.get_agent(ref, owner=ctx.state.owner) if ref else None
    except NotFoundError:
        found = None
    if found is not None and found.owner == ctx.state.owner:
        return found
    others = [s.name for s, _ in ctx.store.list_agents(owner=ctx.state.owner)]
    others = [name for name in others if name != ctx.state.name]
    if not others:
        raise ModelRetry(f"there is no agent named {ref!r}, and no other agent to message.")
    shown = ", ".join(others[:NAMED_AT_MOST]) + (", ..." if len(others) > NAMED_AT_MOST else "")
    raise ModelRetry(f"there is no agent named {ref!r}; the agents you can message: {shown}.")


def _framed(sender: AgentState, message: str) -> str:
    """The message as the other agent reads it: who sent it, and where its
    reply goes (it has not seen the sender's conversation)."""
    return (
        f"[A message from agent {sender.name}, not from your user. Your reply "
        f"(send_message) goes back to {sender.name}.]\n{message}"
    )


async def _ask(ctx: ToolContext, target: AgentState, message: str) -> StepResult:
    """Run `target`'s step on `message` and return its result, unless the
    chain would go too deep or the target waits for this agent (ModelRetry)."""
    me = ctx.state
    if target.id == me.id:
        raise ModelRetry("that agent is you. Answer yourself, or message another agent.")
    chain = _CHAIN.get()
    own_limit = me.settings.max_agent_chain_depth
    limit = own_limit if chain.limit is None else min(chain.limit, own_limit)
    names = (*chain.names, me.name)
    if len(names) > limit:
        raise ModelRetry(
            f"agents may message agents {limit} deep at most, and this chain is already "
            f"{' -> '.join(names)}: {target.name} was not asked. Answer with what you have."
        )
    with _WAITS.waiting(me, target):
        token = _CHAIN.set(_Chain(names, limit))
        try:
            return await ctx.deps.message_agent(target, _framed(me, message))
        except MemGPTError as exc:
            raise ModelRetry(f"{target.name} could not answer: {exc}") from None
        finally:
            _CHAIN.reset(token)


def _replied(target: AgentState, result: StepResult) -> str:
    """What the other agent said back (its send_message texts), or why it said nothing."""
    if result.replies:
        return f"{target.name} replied: " + "\n".join(result.replies)
    if result.pending_approvals:
        waiting = ", ".join(call.name for call in result.pending_approvals)
        return f"{target.name} did not reply: it waits for its user's approval of {waiting}."
    return f"{target.name} did not reply (its step ended: {result.stop_reason})."


@tool
async def send_message_to_agent_and_wait_for_reply(
    ctx: ToolContext, message: str, other_agent_id: str
) -> str:
    """Send a message to another agent of your user and wait for its reply,
    which is this tool's result. The other agent answers with its own memory
    and tools; it has not seen your conversation.

    Args:
        message: What to tell or ask the other agent, with everything it needs to know.
        other_agent_id: The other agent's name or id.
    """
    if not message.strip():
        raise ModelRetry("message is empty: write what the other agent should read.")
    target = _other_agent(ctx, other_agent_id)
    return _replied(target, await _ask(ctx, target, message))


def _tags(values: list[str] | None) -> set[str]:
    return {value.strip() for value in values or () if value.strip()}


def _matching(ctx: ToolContext, match_all: set[str], match_some: set[str]) -> list[AgentState]:
    """The owner's other agents with every tag of `match_all` and, if any
    are given, at least one of `match_some`."""
    found = []
    for state, _ in ctx.store.list_agents(owner=ctx.state.owner):
        tags = set(state.settings.tags)
        if state.id != ctx.state.id and match_all <= tags and (not match_some or match_some & tags):
            found.append(state)
    return found


@tool
async def send_message_to_agents_matching_tags(
    ctx: ToolContext,
    message: str,
    match_all: list[str] | None = None,
    match_some: list[str] | None = None,
) -> str:
    """Send one message to each other agent of your user that has the tags
    asked for, and wait for all their replies, which are this tool's result.

    Args:
        message: What to tell or ask the agents, with everything they need to know.
        match_all: Tags an agent must have every one of.
        match_some: Tags an agent must have at least one of.
    """
    wanted_all, wanted_some = _tags(match_all), _tags(match_some)
    if not wanted_all and not wanted_some:
        raise ModelRetry("give match_all or match_some: the tags of the agents to message.")
    if not message.strip():
        raise ModelRetry("message is empty: write what the other agents should read.")
    targets = _matching(ctx, wanted_all, wanted_some)
    if not targets:
        return "No other agent has those tags: nobody was messaged."
    replies = await _fan_out(ctx, targets, message)
    names = ", ".join(target.name for target in targets)
    return f"Sent to {len(targets)} agent(s) ({names}).\n" + "\n".join(replies)


async def _fan_out(ctx: ToolContext, targets: list[AgentState], message: str) -> list[str]:
    """Ask each of `targets` at once (FANOUT_AT_ONCE at a time); what each
    replied, or why it did not, in their order."""
    at_once = asyncio.Semaphore(FANOUT_AT_ONCE)

    async def one(target: AgentState) -> str:
        async with at_once:
            try:
                return _replied(target, await _ask(ctx, target, message))
            except ModelRetry as exc:
                return f"{target.name} was not asked or failed: {exc}"

    # A task group: were one to fail with a bug, the others are cancelled, not left running.
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(one(target)) for target in targets]
    return [task.result() for task in tasks]


def _supervised(ctx: ToolContext) -> AgentGroup:
    """The supervisor group whose main agent this agent is; a ModelRetry if none."""
    for group in ctx.store.agent_groups(ctx.state.id):
        if group.manager_type == "supervisor" and group.manager_agent_id == ctx.state.id:
            return group
    raise ModelRetry("you supervise no group of agents: there is nobody to message this way.")


@tool
async def send_message_to_all_agents_in_group(ctx: ToolContext, message: str) -> str:
    """Send one message to every agent of the group you supervise and wait
    for all their replies: this tool's result is a JSON list of them, one
    for each agent, in the group's order.

    Args:
        message: What to tell or ask the agents, with everything they need to know.
    """
    if not message.strip():
        raise ModelRetry("message is empty: write what the agents should read.")
    group = _supervised(ctx)
    workers = []
    for agent_id in group.agent_ids:
        try:
            workers.append(ctx.store.get_agent(agent_id, owner=ctx.state.owner))
        except NotFoundError:
            continue  # deleted meanwhile: it left the group
    if not workers:
        return json.dumps([])
    return json.dumps(await _fan_out(ctx, workers, message), ensure_ascii=False)


MULTI_AGENT_TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (send_message_to_agent_and_wait_for_reply, send_message_to_agents_matching_tags)
}
# The tool of a supervisor group's main agent (agent/groups.py attaches it).
GROUP_TOOL = send_message_to_all_agents_in_group
