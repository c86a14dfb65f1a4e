"""The agent, the object users hold: its configuration and its memory, and
the four ways to run a step.

An `Agent` is its stored row (`state`), its store, its tools, and its three
tiers of memory: core memory blocks (here: `block`, `set_block`, ...),
recall memory (`agent.history`: search, and edits to the end of the
window) and archival memory (`agent.archival`), and the sleep-time agent
that may look after its blocks (`agent.sleeptime`, sleeptime.py). Its
configuration (model, name, embedder) is changed here and stored at once.

Running steps is its runner's work (runner.py, `agent.runner`): the model
client, the token counter, the step lock, and the engine behind `step()`,
`astep()`, `stream()` and `astream()`, which all drive the one step core in
loop/step.py and its typed events (events.py): `step` and `astep` return the
step's result (or raise its error), `stream` and `astream` hand over each
event as it happens, the reply's words included. The runner also retries,
summarizes and reflects (`agent.runner.retry()`, `.summarize()`,
`.reflect()`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memgpt_lite.agent.conversations import Conversations
from memgpt_lite.agent.runner import Runner
from memgpt_lite.agent.setup import (
    ToolLike,
    agent_custom_tools,
    check_registered,
    given_tools,
    new_agent,
    open_store,
    store_new_agent,
)
from memgpt_lite.agent.sizing import fit_new_agent
from memgpt_lite.agent.sleeptime import SleeptimeAgents
from memgpt_lite.embeddings.embedder import Embedder
from memgpt_lite.errors import ConfigError, ModelRetry, validation_messages
from memgpt_lite.events import StepEvent
from memgpt_lite.llm import runner as sync
from memgpt_lite.llm.model import Model
from memgpt_lite.loop import approvals
from memgpt_lite.loop.steplock import OnWait
from memgpt_lite.loop.stopping import StopRequest
from memgpt_lite.memory.archival.passages import ArchivalMemory
from memgpt_lite.memory.core.block_history import USER, pick_version
from memgpt_lite.memory.core.blocks import set_block_value
from memgpt_lite.memory.recall.history import History
from memgpt_lite.memory.recall.window import (
    ContextOverview,
    compile_context,
    core_memory_overflow,
    overview,
)
from memgpt_lite.models import (
    DEFAULT_USER,
    AgentSettings,
    AgentState,
    Approval,
    Block,
    BlockVersion,
    Message,
    StepInput,
    StepResult,
    ToolCall,
)
from memgpt_lite.settings.endpoint import check_timeout
from memgpt_lite.settings.resolve import resolve_settings
from memgpt_lite.settings.values import Settings
from memgpt_lite.storage.protocol import Storage
from memgpt_lite.tools.rules import RuleBook
from memgpt_lite.tools.sets import agent_tools

log = logging.getLogger(__name__)

# The API key for the model requests of an agent this one messages (the
# multi-agent tools), chosen for its stored row; None: none given.
PeerKey = Callable[[AgentState], str | None]


class Agent:
    """A MemGPT-style agent. Make one with `Agent.create`, reopen it with `Agent.load`.

    The agent is an edge of the settings: `process_settings` (as
    `resolve_settings` gives them; by default resolved from the environment
    when the agent is made) and, when its runner builds the model, its
    endpoint and timeout (`resolve_endpoint`, `resolve_timeout`: the
    environment and config.toml as they are then) are handed to what it builds.
    `peer_api_key` chooses the API key of each agent it messages with the
    multi-agent tools, for that agent's row (the server's rule; see
    `_peer_opener` for the default)."""

    def __init__(
        self,
        state: AgentState,
        store: Storage,
        tools: Iterable[ToolLike] = (),
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        embedder: Embedder | None = None,
        llm: Model | None = None,
        process_settings: Settings | None = None,
        peer_api_key: PeerKey | None = None,
    ) -> None:
        self.state = state
        self.store = store
        self.process_settings = (
            process_settings if process_settings is not None else resolve_settings()
        )
        given = given_tools(tools)
        attached = [*state.tool_names, *given.attached]
        custom, missing = agent_custom_tools(state, store, given.custom, self.process_settings)
        if missing:
            log.warning(
                "agent %s: tools %s were not given, nor registered, so the model will not see them",
                state.name,
                ", ".join(missing),
            )
        self.tools = agent_tools(state.settings.tool_set, custom, attached)
        # Told, with one line of text, when a step waits for another one of
        # this agent (another process, thread or host); None: a log warning.
        self.on_wait: OnWait | None = None
        self.runner = Runner(
            self,
            endpoint=(base_url, api_key),
            timeout=None if timeout is None else check_timeout(timeout, "timeout"),
            llm=llm,
            embedder=embedder,
            open_peer=_peer_opener(self, (base_url, api_key), timeout, peer_api_key),
        )
        self.archival = ArchivalMemory(self.runner)
        self.history = History(self.runner)
        # Its conversations: separate message histories over its one memory.
        self.conversations: Conversations[Agent] = Conversations(self)
        # Its sleep-time agent: `agent.sleeptime.add(frequency=5)` (sleeptime.py).
        self.sleeptime = SleeptimeAgents(self)

    @classmethod
    def create(
        cls,
        name: str,
        model: str,
        *,
        blocks: Sequence[Block] | None = None,
        tools: Iterable[ToolLike] = (),
        system: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        settings: AgentSettings | None = None,
        llm_options: dict[str, Any] | None = None,
        embedder: Embedder | str | None = None,
        db: str | Path | None = None,
        store: Storage | None = None,
        llm: Model | None = None,
        exist_ok: bool = False,
        owner: str = DEFAULT_USER,
        process_settings: Settings | None = None,
    ) -> Agent:
        """Create and store a new agent (each argument: docs/python/index.md).
        `tools`: functions or `Tool`s (run here), built-in or registered tool
        names. Not stored: `api_key`, `timeout`, `llm` (a `Model` to call
        instead). `exist_ok=True` opens an agent of that name that has what was
        given. The working window is fitted to the agent (agent/sizing.py): one
        that could not step in it is a ConfigError naming the sizes, never stored."""
        tools = list(tools)
        new = new_agent(  # every argument checked before anything is stored
            name,
            model,
            blocks=blocks,
            tools=tools,
            system=system,
            base_url=base_url,
            timeout=timeout,
            settings=settings,
            llm_options=llm_options,
            embedder=embedder,
            owner=owner,
        )
        chosen = process_settings if process_settings is not None else resolve_settings()
        store = open_store(store, db, chosen)
        check_registered(store, owner, given_tools(tools).registered)
        with store.transaction():  # an agent that cannot step in its window is not stored
            state = store_new_agent(store, new, exist_ok)  # with its base_url, read by the runner
            agent = cls(
                state,
                store,
                tools,
                api_key=api_key,
                timeout=timeout,
                llm=llm,
                process_settings=chosen,
            )
            if state is new.state:  # created now, not opened
                fit_new_agent(agent.runner)
        if embedder is not None and not isinstance(embedder, str):
            agent.set_embedder(embedder)
        return agent

    @classmethod
    def load(
        cls,
        name: str,
        *,
        tools: Iterable[ToolLike] = (),
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        embedder: Embedder | None = None,
        db: str | Path | None = None,
        store: Storage | None = None,
        llm: Model | None = None,
        process_settings: Settings | None = None,
    ) -> Agent:
        """Reopen a stored agent by name. Its registered tools come from its
        owner's registry; pass the functions it was created with (a function
        wins over a registered tool of its name), and its embedder if not
        built from its settings.
        `timeout` limits each model request, for this session only; `llm`
        is a model to call instead of the endpoint's; `process_settings` as
        for `create`."""
        chosen = process_settings if process_settings is not None else resolve_settings()
        store = open_store(store, db, chosen)
        state = store.get_agent(name)
        agent = cls(
            state,
            store,
            tools,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            llm=llm,
            process_settings=chosen,
        )
        if embedder is not None:
            agent.set_embedder(embedder)
        return agent

    # Configuration

    @property
    def embedder(self) -> Embedder | None:
        """The agent's embedder, built from `settings.embedder` on first use."""
        return self.runner.embedder

    def set_embedder(self, embedder: Embedder) -> None:
        """Use `embedder` from now on (it must match the stored vectors)."""
        self.runner.set_embedder(embedder)

    def save(self) -> None:
        """Store changes made to `agent.state` (model, settings, ...). Each step
        reloads the state from the database, so unsaved changes do not last.
        Raises ConflictError, saving nothing, if the stored agent changed since
        `agent.state` was read (another process compacted it, say): saving
        would undo that. Reload (`Agent.load`) and make the change again."""
        self.store.save_agent(self.state)

    def rename(self, new_name: str, display_name: str | None = None) -> None:
        """Give the agent another name, and display name (None: none; see
        memgpt_lite/names.py); its id, memory and history stay."""
        renamed = self.state.model_copy()
        try:
            renamed.name = new_name  # validated on assignment
            renamed.display_name = display_name
        except ValidationError as exc:
            raise ConfigError(
                f"cannot rename agent to {new_name!r}: {validation_messages(exc)}"
            ) from None
        self.state = self.store.rename_agent(self.state.id, new_name, renamed.display_name)

    def set_model(self, model: str) -> None:
        """Use another model from the next call on, and store the choice."""
        if not model.strip():
            raise ConfigError("the model name is empty")

        def use(state: AgentState) -> None:
            state.llm.model = model.strip()

        self.state = self.store.update_agent(self.state.id, use)
        self.runner.model_changed()  # its client and counts were for the old model

    # Core memory

    @property
    def blocks(self) -> list[Block]:
        return self.store.get_blocks(self.state.id)

    def block(self, label: str) -> Block:
        for block in self.blocks:
            if block.label == label:
                return block
        raise ConfigError(f"agent {self.state.name!r} has no block labelled {label!r}")

    def set_block(
        self, label: str, value: str, *, expected: str | None = None, author: str = USER
    ) -> Block:
        """Replace a block's value by hand, under the same limit and read-only
        rules. With `expected`, refuse if the block no longer holds that text
        (the agent, or another process, changed it while the user was editing).
        The block's history records the change by `author`."""
        with self.store.transaction():
            block = self.block(label)
            if expected is not None and block.value != expected:
                raise ConfigError(
                    f"block {label!r} was changed by someone else while you edited it; "
                    "nothing was changed"
                )
            if not block.read_only and len(value) > block.limit:
                # Said to the user, not the model: no advice about memory tools.
                raise ConfigError(
                    f"block {label!r} would hold {len(value)} characters, over its limit of "
                    f"{block.limit}; nothing was changed"
                )
            try:
                value = set_block_value(block, value)
            except ModelRetry as exc:
                raise ConfigError(str(exc)) from None
            problem = core_memory_overflow(self.runner, block, value)
            if problem:
                raise ConfigError(
                    f"block {label!r}: {problem}; nothing was changed. Shorten the text, "
                    "or give the agent a larger context window (memgpt-lite window "
                    f"{self.state.name} TOKENS)."
                )
            block.value = value
            self.store.save_block(block, author=author)
        return block

    def block_history(self, label: str) -> list[BlockVersion]:
        """Every value the block held, oldest first: the last is its value now."""
        return self.store.block_history(self.block(label).id)

    def revert_block(self, label: str, version: int | datetime) -> Block:
        """Set the block back to version `version` of its history (0 the
        first, -1 the last) or to what it held at a time, as `set_block` would."""
        return self.set_block(label, pick_version(self.block_history(label), version).value)

    def attach_block(self, block: Block) -> None:
        """Add a block, or share another agent's block with this one."""
        self.store.attach_block(self.state.id, block)

    # The context window

    def system_message(self) -> str:
        """The system message the next call would send."""
        return compile_context(self.runner).request_messages[0]["content"]

    def context_messages(self) -> list[Message]:
        """The messages in the context window, oldest first."""
        return self.runner.context_messages()

    def context_overview(self) -> ContextOverview:
        """The window size and the tokens each section of the next request uses."""
        return overview(self.runner)

    # Steps: four drivers of the one step core (loop/step.py), run by the runner

    def step(self, user_message: StepInput, stop: StopRequest | None = None) -> StepResult:
        """Handle one user message: call the model, run its tool calls, and go on
        while a tool asked for a heartbeat or failed, up to the step limit. Waits
        while another step of this agent runs (see `runner.step_lock`). Raises
        the step's error (MemGPTError) if it fails. Given `Approval`s instead, it
        answers the tool calls waiting for approval and goes on from there.
        `stop.stop()`, from another thread, stops it at its next safe point
        (stop reason "cancelled", see loop/stopping.py); so for every driver."""
        return self.runner.step(user_message, stop)

    async def astep(self, user_message: StepInput, stop: StopRequest | None = None) -> StepResult:
        """`step`, awaited: many agents can step at once in one event loop.
        An `async def` tool is awaited; a plain one runs in a worker thread."""
        return await self.runner.astep(user_message, stop)

    def stream(
        self, user_message: StepInput, stop: StopRequest | None = None
    ) -> Iterator[StepEvent]:
        """`step`, as the events of the step while they happen (see
        events.py): the model's words as it writes them, each tool call
        and result, each reply. The last event is `StepFinished` (with the
        result) or `StepFailed` (with the error, which is not raised). Leaving
        the loop early stops the step; what it stored stays consistent."""
        return sync.iterate(self.runner.events(user_message, in_thread=False, stop=stop))

    def stream_into(
        self,
        user_message: StepInput,
        on_event: Callable[[StepEvent], None],
        stop: StopRequest | None = None,
    ) -> None:
        """`stream`, each event handed to `on_event` as it happens: for a
        caller that passes the events on (the server, to its event loop),
        cheaper than the iterator, which takes a turn of the loop per event."""
        sync.drive(self.runner.events(user_message, in_thread=False, stop=stop), on_event)

    def astream(
        self, user_message: StepInput, stop: StopRequest | None = None
    ) -> AsyncIterator[StepEvent]:
        """`stream`, for `async for`."""
        return self.runner.events(user_message, in_thread=True, stop=stop)

    # Approvals (loop/approvals.py)

    def pending_approvals(self) -> list[ToolCall]:
        """The tool calls waiting for the user's approval, if any."""
        rules = RuleBook(self.state.settings.tool_rules)
        return approvals.waiting_calls(self.runner, self.tools, rules)

    def approve(self, tool_call_id: str | None = None) -> StepResult:
        """Run the waiting tool call (`tool_call_id`, or every one) and go on."""
        return self.step(Approval(approve=True, tool_call_id=tool_call_id))

    def deny(self, reason: str = "", tool_call_id: str | None = None) -> StepResult:
        """Refuse the waiting tool call (`tool_call_id`, or every one): the model
        reads the refusal and `reason` as its result, and goes on."""
        return self.step(Approval(approve=False, reason=reason, tool_call_id=tool_call_id))


def _peer_opener(
    caller: Agent,
    endpoint: tuple[str | None, str | None],
    timeout: float | None,
    key: PeerKey | None,
) -> Callable[[AgentState], Runner]:
    """How `caller`'s multi-agent tools open the agent they message (the
    runner of an `Agent` for its stored row): on the caller's store, with its
    settings and request timeout, and the API key `key` chooses for it,
    handed on down the chain (the server's rule: server/context.py). Without
    `key`, the key given to the caller goes to an agent of the same endpoint
    only (the base URL given to the caller, else the one stored with it);
    another resolves its own, as `Agent.load` would."""
    base_url, api_key = endpoint

    def key_for(state: AgentState) -> str | None:
        if key is not None:
            return key(state)
        same = state.llm.base_url == (base_url or caller.state.llm.base_url)
        return api_key if same else None

    def open_peer(state: AgentState) -> Runner:
        peer = Agent(
            state,
            caller.store,
            api_key=key_for(state),
            timeout=timeout,
            process_settings=caller.process_settings,
            peer_api_key=key,
        )
        peer.on_wait = caller.on_wait  # told when the agent messaged is busy
        return peer.runner

    return open_peer
