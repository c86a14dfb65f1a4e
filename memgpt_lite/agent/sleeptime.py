"""Sleep-time agents (Letta's sleep-time groups): a second agent that looks
after a main agent's memory while the main agent talks.

`add_sleeptime_agent` makes one: an agent of the main agent's owner, on its
model, whose core memory is the main agent's blocks themselves (the same
rows, so what it writes is in the main agent's next system message), with a
system prompt of its own (prompts/sleeptime.md); and their group
(storage/protocols/groups.py), which starts at the main agent's newest
message: the sleep-time agent reads what is said from then on.

In Python: `agent.sleeptime.add(frequency=5)` (`SleeptimeAgents`).

After each step of the main agent (`after_turn`, called by its runner), once
`frequency` of its turns went by that no pass has read, a pass starts in a
thread of its own: a step of each sleep-time agent on the transcript of
those messages (at most MAX_MESSAGES, the oldest first; the next pass reads
on), in which it edits the shared blocks with its memory tools. Nobody waits
for a pass, so it never delays the main agent's step, nor fails it. A pass
that failed is logged and recorded on the group (`last_error`), and its
messages are read again by the next one; one that worked moves the group's
`processed_seq` on. One pass of a group runs at a time in a process.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Protocol

from memgpt_lite.errors import AlreadyExistsError, ConfigError, MemGPTError, NotFoundError
from memgpt_lite.llm import runner as sync
from memgpt_lite.llm.tokens import TokenCounter
from memgpt_lite.loop.background import OnePerKey
from memgpt_lite.loop.compaction import transcript_line
from memgpt_lite.memory.core.blocks import load_prompt
from memgpt_lite.models import AgentSettings, AgentState, Message, StepInput, StepResult, utcnow
from memgpt_lite.names import numbered
from memgpt_lite.storage.protocol import Storage
from memgpt_lite.storage.protocols.groups import (
    DEFAULT_FREQUENCY,
    SLEEPTIME_TYPES,
    AgentGroup,
    ManagerType,
)

log = logging.getLogger(__name__)

PROMPT = "sleeptime"  # prompts/sleeptime.md: the sleep-time agent's system prompt
SUFFIX = "-sleeptime"  # of a sleep-time agent's name, after its main agent's
MAX_MESSAGES = 60  # of the main agent's, read by one pass; the next pass reads on
# A turn is at least a user message and an answer; 16 messages a turn is plenty.
MESSAGES_PER_TURN = 16


class Helper(Protocol):
    """What a pass needs of a sleep-time agent: its runner (agent/runner.py)."""

    @property
    def token_counter(self) -> TokenCounter: ...

    async def astep(self, message: StepInput) -> StepResult: ...

    async def aclose_model(self) -> None: ...


# Opens a sleep-time agent for a pass: the runner of an `Agent` for its
# stored row, with the API key the main agent's rule gives it.
OpenAgent = Callable[[AgentState], Helper]


class AgentHolder(Protocol):
    """What `SleeptimeAgents` reads of the agent it serves: its `Agent`."""

    state: AgentState
    store: Storage


class SleeptimeAgents:
    """An agent's sleep-time agent, as `agent.sleeptime` (see the module's doc)."""

    def __init__(self, agent: AgentHolder) -> None:
        self._agent = agent

    def add(self, frequency: int = DEFAULT_FREQUENCY) -> AgentGroup:
        """Give the agent a sleep-time agent, which shares its blocks and,
        in the background after every `frequency` turns of it, reads them
        and edits the blocks; returns their group. AlreadyExistsError if it
        has one, ConfigError for a sleep-time agent itself."""
        return add_sleeptime_agent(self._agent.store, self._agent.state, frequency=frequency)

    @property
    def group(self) -> AgentGroup | None:
        """The agent's group, as stored now (how far its sleep-time agent
        read, when it last ran, its last error); None without one."""
        return managed_group(self._agent.store, self._agent.state.id)

    def remove(self) -> None:
        """Delete the agent's sleep-time agent and their group, if it has one."""
        remove_sleeptime_agents(self._agent.store, self._agent.state.id)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the pass running in this process, if one runs; False if
        it still runs after `timeout` seconds."""
        group = self.group
        return True if group is None else wait_for_pass(group.id, timeout)


def add_sleeptime_agent(
    store: Storage,
    main: AgentState,
    *,
    manager_type: ManagerType = "sleeptime",
    frequency: int = DEFAULT_FREQUENCY,
) -> AgentGroup:
    """Make `main`'s sleep-time agent and their group, in one transaction
    (see the module's doc). AlreadyExistsError if `main` has one already;
    ConfigError if `main` is a sleep-time agent itself, or for a frequency
    below 1."""
    if frequency < 1:
        raise ConfigError(f"frequency: a number of turns, 1 or more, not {frequency}")
    with store.transaction():
        groups = store.agent_groups(main.id)
        managed = next((g for g in groups if g.manager_agent_id == main.id), None)
        if managed is not None and managed.manager_type in SLEEPTIME_TYPES:
            raise AlreadyExistsError(f"agent {main.name!r} has a sleep-time agent already")
        if managed is not None:
            raise AlreadyExistsError(
                f"agent {main.name!r} is the main agent of {managed.manager_type} group "
                f"{managed.id!r}: an agent is the main agent of one group at most"
            )
        if any(g.manager_type in SLEEPTIME_TYPES for g in groups):
            raise ConfigError(f"agent {main.name!r} is a sleep-time agent: it cannot have one")
        helper = AgentState(
            name=_helper_name(store, main),
            owner=main.owner,
            llm=main.llm.model_copy(),
            system=load_prompt(PROMPT),
            settings=AgentSettings(
                context_window=main.settings.context_window,
                working_window=main.settings.working_window,
            ),
        )
        store.create_agent(helper, store.get_blocks(main.id))  # the same blocks: linked
        newest = store.last_messages(main.id, 1)
        group = AgentGroup(
            owner=main.owner,
            manager_type=manager_type,
            manager_agent_id=main.id,
            agent_ids=[helper.id],
            frequency=frequency,
            description=f"{helper.name} looks after the memory of {main.name}",
            processed_seq=(newest[0].seq or 0) if newest else 0,
        )
        store.save_group(group)
    return group


def _helper_name(store: Storage, main: AgentState) -> str:
    """`NAME-sleeptime` (numbered if the owner has one), within 64 characters."""
    taken = {state.name for state, _ in store.list_agents(owner=main.owner)}
    return numbered(main.name[: 64 - len(SUFFIX) - 4] + SUFFIX, taken)


def managed_group(store: Storage, agent_id: str) -> AgentGroup | None:
    """The sleep-time group whose main agent `agent_id` is, if it has one."""
    return next(
        (
            g
            for g in store.agent_groups(agent_id)
            if g.manager_agent_id == agent_id and g.manager_type in SLEEPTIME_TYPES
        ),
        None,
    )


def remove_sleeptime_agents(store: Storage, agent_id: str) -> None:
    """Delete the group of main agent `agent_id` and its sleep-time agents
    (the blocks they share stay the main agent's); nothing if it has none."""
    group = managed_group(store, agent_id)
    if group is None:
        return
    with store.transaction():
        store.delete_group(group.id)
        for helper in group.agent_ids:
            store.delete_agent(helper)


# The passes


def after_turn(store: Storage, agent_id: str, open_agent: OpenAgent) -> None:
    """Start a pass of the agent's group in the background, if it has one
    whose turns are due (called once a step of the agent ended)."""
    group = managed_group(store, agent_id)
    if group is not None and group.agent_ids and _due(store, group):
        start_pass(store, group.id, open_agent)


def _due(store: Storage, group: AgentGroup) -> bool:
    """Whether `frequency` turns of the main agent went by that no pass read."""
    newest = store.last_messages(group.manager_agent_id, MESSAGES_PER_TURN * group.frequency)
    turns = [m for m in newest if m.role == "user" and (m.seq or 0) > group.processed_seq]
    return len(turns) >= group.frequency


_passes = OnePerKey("sleeptime")


def start_pass(store: Storage, group_id: str, open_agent: OpenAgent) -> threading.Thread | None:
    """Run a pass of the group in a thread of its own, unless one of it runs
    in this process already."""

    def work() -> None:
        try:
            run_pass(store, group_id, open_agent)
        except MemGPTError as exc:  # the database itself failed: nothing could be noted
            log.warning("the sleep-time pass of group %s could not run: %s", group_id, exc)

    return _passes.start(group_id, work)


def wait_for_pass(group_id: str, timeout: float | None = None) -> bool:
    """Wait for this process's pass of the group, if one runs; False if it
    still runs after `timeout` seconds."""
    return _passes.wait(group_id, timeout)


def run_pass(store: Storage, group_id: str, open_agent: OpenAgent) -> None:
    """One pass: each sleep-time agent of the group steps on the transcript
    of the messages no pass has read; recorded on the group (a failure as
    its one line, logged; the messages then stay unread)."""
    try:
        group = store.get_group(group_id)
    except NotFoundError:
        return  # deleted meanwhile, with its main agent say
    messages = _unread(store, group)
    if not messages:
        return
    try:
        main = store.get_agent(group.manager_agent_id)
        for agent_id in group.agent_ids:
            helper = open_agent(store.get_agent(agent_id))
            sync.run(_step(helper, transcript(helper, main.name, messages)))
    except MemGPTError as exc:
        problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        log.warning("the sleep-time agents of %s failed: %s", group.manager_agent_id, problem)
        _record(store, group_id, error=problem)
        return
    _record(store, group_id, read_up_to=messages[-1].seq or 0)


def _unread(store: Storage, group: AgentGroup) -> list[Message]:
    """The oldest messages of the main agent no pass has read, at most
    MAX_MESSAGES: what the user said, the answers and the tools' results."""
    unread: list[Message] = []
    start = group.processed_seq + 1
    while len(unread) < MAX_MESSAGES:
        page = store.first_messages(group.manager_agent_id, start, MAX_MESSAGES)
        unread += [m for m in page if m.role in ("user", "assistant", "tool")]
        if len(page) < MAX_MESSAGES:
            break
        start = (page[-1].seq or 0) + 1
    return unread[:MAX_MESSAGES]


def transcript(helper: Helper, main_name: str, messages: Sequence[Message]) -> str:
    """The message a sleep-time agent steps on: the main agent's messages,
    one line each (a long one shortened), oldest first."""
    lines = "\n".join(transcript_line(helper.token_counter, m) for m in messages)
    return (
        f"The newest messages of the main agent, {main_name}, oldest first:\n"
        f"<transcript>\n{lines}\n</transcript>"
    )


async def _step(helper: Helper, text: str) -> StepResult:
    """A step of the sleep-time agent, its model's connections closed after
    it (in this thread's loop, which they belong to)."""
    try:
        return await helper.astep(text)
    finally:
        await helper.aclose_model()


def _record(
    store: Storage, group_id: str, *, read_up_to: int | None = None, error: str | None = None
) -> None:
    """Note on the group that a pass ran, how it ended, and what it read."""
    with store.transaction():
        try:
            group = store.get_group(group_id)
        except NotFoundError:
            return  # deleted while the pass ran
        group.last_run_at, group.last_error = utcnow(), error
        if read_up_to is not None:
            group.processed_seq = max(group.processed_seq, read_up_to)
        store.save_group(group)
