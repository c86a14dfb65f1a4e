"""The agent, the object users hold: its state in the store, its memory
tiers, its tools and its model, and four ways to run a step.

`step()`, `astep()`, `stream()` and `astream()` all drive the one step core
in loop/step.py, which yields typed events (events.py): `step` and
`astep` return the step's result (or raise its error), `stream` and `astream`
hand over each event as it happens, the reply's words included.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memgpt_lite.agent_setup import Wanted, embedder_for, new_state, stored_as_wanted
from memgpt_lite.embeddings.embedder import Embedder, check_embedder_name
from memgpt_lite.errors import AlreadyExistsError, ConfigError, ModelRetry, validation_messages
from memgpt_lite.events import StepEvent, StepFailed, StepFinished
from memgpt_lite.llm import runner
from memgpt_lite.llm.model import Model
from memgpt_lite.llm.openai_chat import OpenAIChatModel
from memgpt_lite.llm.tokens import TokenCounter
from memgpt_lite.loop import approvals, reflection
from memgpt_lite.loop.compaction import CompactionReport, compact
from memgpt_lite.loop.reflection import ReflectionReport
from memgpt_lite.loop.step import StepInput, run_step
from memgpt_lite.loop.steplock import OnWait, StepLock, lease_seconds
from memgpt_lite.memory.archival.passages import ArchivalMemory
from memgpt_lite.memory.core.block_history import USER, pick_version
from memgpt_lite.memory.core.blocks import default_blocks, set_block_value
from memgpt_lite.memory.recall import history
from memgpt_lite.memory.recall.window import (
    ContextOverview,
    compile_context,
    core_memory_overflow,
    overview,
    unanswered,
)
from memgpt_lite.memory.retrieval.search import check_embedder
from memgpt_lite.memory.retrieval.vector_index import VectorIndex
from memgpt_lite.models import (
    DEFAULT_USER,
    AgentSettings,
    AgentState,
    Approval,
    Block,
    BlockVersion,
    Message,
    StepResult,
    ToolCall,
)
from memgpt_lite.settings.endpoint import check_base_url, check_timeout
from memgpt_lite.settings.resolve import (
    resolve_db,
    resolve_endpoint,
    resolve_settings,
    resolve_timeout,
)
from memgpt_lite.settings.values import Settings
from memgpt_lite.storage.open import open_storage
from memgpt_lite.storage.protocol import Owner, Storage
from memgpt_lite.tools.builtin import BUILTIN_TOOLS
from memgpt_lite.tools.rules import RuleBook
from memgpt_lite.tools.schema import Tool, as_tool
from memgpt_lite.tools.sets import agent_tools

log = logging.getLogger(__name__)

ToolLike = Tool | Callable[..., Any]


def _open_store(store: Storage | None, db: str | Path | None, settings: Settings) -> Storage:
    """`store`, else the database at `db` (a SQLite file or a postgresql://
    URL), else the one the command line would use: $MEMGPT_LITE_DB, then `db`
    in config.toml, then the default file."""
    if store is not None:
        return store
    return open_storage(str(resolve_db(db).value), settings=settings.storage)


def _custom_tools(tools: Iterable[ToolLike]) -> dict[str, Tool]:
    found: dict[str, Tool] = {}
    for item in tools:
        custom = as_tool(item)
        if custom.name in BUILTIN_TOOLS or custom.name in found:
            raise ConfigError(f"two tools are named {custom.name!r}")
        found[custom.name] = custom
    return found


class Agent:
    """A MemGPT-style agent. Make one with `Agent.create`, reopen it with `Agent.load`.

    The agent is an edge of the settings: `process_settings` (as
    `resolve_settings` gives them; by default resolved from the environment
    when the agent is made) and, when it builds its model, its endpoint and
    timeout (`resolve_endpoint`, `resolve_timeout`: the environment and
    config.toml as they are then) are handed to what it builds."""

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
    ) -> None:
        self.state = state
        self.store = store
        self.process_settings = (
            process_settings if process_settings is not None else resolve_settings()
        )
        self.archival = ArchivalMemory(self)
        self._embedder = embedder
        self._vector_indexes: dict[str, VectorIndex] = {}
        given = _custom_tools(tools)
        missing = [name for name in state.tool_names if name not in given]
        if missing:
            log.warning(
                "agent %s: tools %s were not given, so the model will not see them",
                state.name,
                ", ".join(missing),
            )
        self.tools: dict[str, Tool] = agent_tools(state.settings.tool_set, given)
        self._endpoint = (base_url, api_key)
        # The limit on one model request, retries included; not stored.
        self._timeout = None if timeout is None else check_timeout(timeout, "timeout")
        # Told, with one line of text, when a step waits for another one of
        # this agent (another process, thread or host); None: a log warning.
        self.on_wait: OnWait | None = None
        self._held_locks: dict[int, StepLock] = {}  # by thread
        self._llm: Model | None = llm
        self._given_llm = llm  # shared with the background reflection's agent
        self._counter: TokenCounter | None = None
        self._tool_tokens: int | None = None
        # The step lock's lease, by the timeouts it was worked out from:
        # config.toml is read once per agent object, as the model reads it.
        self._lease: tuple[tuple[float | None, float | None], float] | None = None

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
        """Create and store a new agent. `blocks` defaults to `persona` and
        `human` from the templates; a block object already attached to another
        agent is shared, not copied. `llm_options` sets the other `LLMConfig`
        fields (temperature, max_retries, timeout_seconds, tool_choice). `embedder`
        ("local", "endpoint:MODEL" or an `Embedder`) turns on hybrid search. The
        API key and `timeout` (seconds for one model request, retries included)
        are never stored; `llm_options={"timeout_seconds": ...}` stores one.
        `llm` is the model to call instead of the endpoint's (any `Model`, such
        as the in-process fakes of memgpt_lite.testing.model); not stored.
        `db`: a SQLite file or a postgresql:// URL (default: as the command
        line chooses, see `settings.resolve.resolve_db`); `store`: an open
        `Storage`. `process_settings`: as an edge resolved them
        (`resolve_settings`); None: resolved here from the environment.
        `owner`: the user the agent belongs to (the HTTP server's users; the
        command line's and the library's agents belong to "local").

        An agent of that name already stored is an `AlreadyExistsError`, or with
        `exist_ok=True` it is opened as `Agent.load` would, nothing stored
        changed: the given blocks' texts only start a new agent (a stored one
        keeps what it learned), but a model, block label, system prompt,
        base_url, llm option, setting or embedder given that the stored agent
        does not have is a ConfigError naming the first difference. An agent
        of that name that belongs to another owner is an AlreadyExistsError,
        with `exist_ok` too: it is not opened."""
        if timeout is not None:
            check_timeout(timeout, "timeout")  # before anything is stored
        if base_url is not None:
            base_url = check_base_url(base_url, "the base_url argument")
        tools = list(tools)
        custom = _custom_tools(tools)
        given_blocks = blocks is not None
        blocks = list(blocks) if blocks is not None else default_blocks(name=name)
        settings = (settings or AgentSettings()).model_copy()
        agent_tools(settings.tool_set, custom)  # a name clash is refused before storing
        if embedder is not None:  # a name is checked here, before anything is stored
            settings.embedder = (
                check_embedder_name(embedder) if isinstance(embedder, str) else embedder.name
            )
        labels = [b.label for b in blocks]
        if len(set(labels)) != len(labels):
            raise ConfigError(f"block labels must be unique, got {labels}")
        llm_config = {"model": model, "base_url": base_url, **(llm_options or {})}
        state = new_state(name, llm_config, system, list(custom), settings, owner)
        resolved = process_settings if process_settings is not None else resolve_settings()
        store = _open_store(store, db, resolved)
        try:
            store.create_agent(state, blocks)
        except AlreadyExistsError:
            if not exist_ok:
                raise
            wanted = Wanted(
                state=state,
                llm_keys={"model", *(llm_options or {}), *(["base_url"] if base_url else [])},
                settings_keys=set(settings.model_fields_set),
                system_given=system is not None,
                labels=labels if given_blocks else [],
            )
            state = stored_as_wanted(store, wanted)
        agent = cls(
            state,
            store,
            tools,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            llm=llm,
            process_settings=resolved,
        )
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
        """Reopen a stored agent by name. Pass the same custom tools it was
        created with (and its embedder, if not built from its settings).
        `timeout` limits each model request, for this session only; `llm`
        is a model to call instead of the endpoint's; `process_settings` as
        for `create`."""
        resolved = process_settings if process_settings is not None else resolve_settings()
        store = _open_store(store, db, resolved)
        state = store.get_agent(name)
        agent = cls(
            state,
            store,
            tools,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            llm=llm,
            process_settings=resolved,
        )
        if embedder is not None:
            agent.set_embedder(embedder)
        return agent

    # Embeddings

    @property
    def embedder(self) -> Embedder | None:
        """The agent's embedder, built from `settings.embedder` on first use."""
        if self._embedder is None and self.state.settings.embedder:
            base_url, api_key = self._endpoint
            self._embedder = embedder_for(
                self.state.settings.embedder,
                self.process_settings,
                base_url=base_url or self.state.llm.base_url,
                api_key=api_key,
            )
            check_embedder(self)
        return self._embedder

    def set_embedder(self, embedder: Embedder) -> None:
        """Use `embedder` from now on (it must match the stored vectors)."""
        self._embedder = embedder
        self._vector_indexes.clear()
        check_embedder(self)
        if self.state.settings.embedder != embedder.name:

            def use(state: AgentState) -> None:
                state.settings.embedder = embedder.name

            self.state = self.store.update_agent(self.state.id, use)

    def vector_index(self, owner: Owner) -> VectorIndex:
        dimension = self.state.embedding_dimension or 0
        index = self._vector_indexes.get(owner)
        if index is None or index.dimension != dimension:
            index = VectorIndex(self.store, self.state.id, owner, dimension)
            self._vector_indexes[owner] = index
        return index

    def save(self) -> None:
        """Store changes made to `agent.state` (model, settings, ...). Each step
        reloads the state from the database, so unsaved changes do not last.
        Raises ConflictError, saving nothing, if the stored agent changed since
        `agent.state` was read (another process compacted it, say): saving
        would undo that. Reload (`Agent.load`) and make the change again."""
        self.store.save_agent(self.state)

    # Memory

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
            problem = core_memory_overflow(self, block, value)
            if problem:
                raise ConfigError(
                    f"block {label!r}: {problem}; nothing was changed. Shorten the text, "
                    "or give the agent a larger context window."
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

    def rename(self, new_name: str) -> None:
        """Give the agent another name (its id, memory and history stay)."""
        renamed = self.state.model_copy()
        try:
            renamed.name = new_name  # validated on assignment
        except ValidationError as exc:
            raise ConfigError(
                f"cannot rename agent to {new_name!r}: {validation_messages(exc)}"
            ) from None
        self.state = self.store.rename_agent(self.state.id, new_name)

    def attach_block(self, block: Block) -> None:
        """Add a block, or share another agent's block with this one."""
        self.store.attach_block(self.state.id, block)

    def system_message(self) -> str:
        """The system message the next call would send."""
        return compile_context(self).request_messages[0]["content"]

    def context_messages(self) -> list[Message]:
        """The messages in the context window, oldest first."""
        return self.store.messages_from(self.state.id, self.state.context_start)

    def unanswered(self) -> list[Message]:
        """The user's messages in the context window that the model never
        answered (their step failed or was cancelled before it responded),
        oldest first. They are left out of requests; `retry()` sends the last
        one again, `pop_exchanges()` drops it."""
        return unanswered(self.context_messages())

    def tool_schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self.tools.values()]

    def tool_tokens(self) -> int:
        if self._tool_tokens is None:  # the tools do not change, so count them once
            self._tool_tokens = self.token_counter.count_tools(self.tool_schemas())
        return self._tool_tokens

    @property
    def token_counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = TokenCounter(self.state.llm.model, self.process_settings.cache_dir)
        return self._counter

    def context_overview(self) -> ContextOverview:
        """The window size and the tokens each section of the next request uses."""
        return overview(self)

    def summarize(self) -> CompactionReport:
        """Force a compaction now: the older messages leave the window and are
        folded into the summary (they stay searchable in recall memory)."""
        with self.step_lock():
            self.state = self.store.get_agent(self.state.id)
            return runner.run(compact(self, compile_context(self), force=True))

    def set_model(self, model: str) -> None:
        """Use another model from the next call on, and store the choice."""
        if not model.strip():
            raise ConfigError("the model name is empty")

        def use(state: AgentState) -> None:
            state.llm.model = model.strip()

        self.state = self.store.update_agent(self.state.id, use)
        self._llm = self._counter = self._tool_tokens = None  # built for the old model

    # History edits (see memory/recall/history.py)

    def pop_exchanges(self, n: int = 1) -> int:
        """Delete the last `n` exchanges (a user message and all that followed
        it). Returns how many messages were deleted."""
        return history.pop_exchanges(self, n)

    def retry(self) -> StepResult:
        """Remove the last exchange and send its user message again."""
        _ = self.llm  # a missing API key fails here, before anything is deleted
        with self.step_lock():  # no other step between the pop and the new one
            return self.step(history.pop_for_retry(self))

    def rethink(self, text: str) -> Message:
        """Replace the inner thought of the last response that made tool calls."""
        return history.rethink(self, text)

    def rewrite(self, text: str) -> Message:
        """Replace the last reply the user saw."""
        return history.rewrite(self, text)

    # The loop: four drivers of the one step core (loop/step.py)

    def step(self, user_message: StepInput) -> StepResult:
        """Handle one user message: call the model, run its tool calls, and go on
        while a tool asked for a heartbeat or failed, up to the step limit. Waits
        while another step of this agent runs (see `step_lock`). Raises the
        step's error (MemGPTError) if it fails. Given `Approval`s instead, it
        answers the tool calls waiting for approval and goes on from there."""
        return _result(runner.run(_last(self._events(user_message, in_thread=False))))

    async def astep(self, user_message: StepInput) -> StepResult:
        """`step`, awaited: many agents can step at once in one event loop.
        An `async def` tool is awaited; a plain one runs in a worker thread."""
        return _result(await _last(self.astream(user_message)))

    def stream(self, user_message: StepInput) -> Iterator[StepEvent]:
        """`step`, as the events of the step while they happen (see
        events.py): the model's words as it writes them, each tool call
        and result, each reply. The last event is `StepFinished` (with the
        result) or `StepFailed` (with the error, which is not raised). Leaving
        the loop early stops the step; what it stored stays consistent."""
        return runner.iterate(self._events(user_message, in_thread=False))

    def astream(self, user_message: StepInput) -> AsyncIterator[StepEvent]:
        """`stream`, for `async for`."""
        return self._events(user_message, in_thread=True)

    def _events(
        self, user_message: StepInput, *, in_thread: bool
    ) -> AsyncGenerator[StepEvent, None]:
        if isinstance(user_message, str) and not user_message.strip():
            raise ConfigError("the message is empty")
        _ = self.llm  # a missing API key fails here, before waiting or storing anything
        held = self._held_locks.get(threading.get_ident())
        return run_step(self, user_message, held_lock=held, tools_in_threads=in_thread)

    # Reflection (loop/reflection.py)

    def reflect(self) -> ReflectionReport:
        """Read the messages no reflection has read and update memory from them."""
        return runner.run(reflection.reflect(self))

    async def areflect(self) -> ReflectionReport:
        """`reflect`, awaited."""
        return await reflection.reflect(self)

    def after_step(self) -> None:
        if reflection.due(self):
            reflection.start_background(self.state.id, self._twin)

    def _twin(self) -> Agent:
        """Another object for this agent, for another thread: its own model client."""
        custom = [tool for tool in self.tools.values() if tool.name in self.state.tool_names]
        base_url, api_key = self._endpoint
        return Agent(
            self.store.get_agent(self.state.id),
            self.store,
            custom,
            base_url=base_url,
            api_key=api_key,
            timeout=self._timeout,
            embedder=self._embedder,
            llm=self._given_llm,
            process_settings=self.process_settings,
        )

    # Approvals (loop/approvals.py)

    def pending_approvals(self) -> list[ToolCall]:
        """The tool calls waiting for the user's approval, if any."""
        rules = RuleBook(self.state.settings.tool_rules)
        return approvals.waiting_calls(self, self.tools, rules)

    def approve(self, tool_call_id: str | None = None) -> StepResult:
        """Run the waiting tool call (`tool_call_id`, or every one) and go on."""
        return self.step(Approval(approve=True, tool_call_id=tool_call_id))

    def deny(self, reason: str = "", tool_call_id: str | None = None) -> StepResult:
        """Refuse the waiting tool call (`tool_call_id`, or every one): the model
        reads the refusal and `reason` as its result, and goes on."""
        return self.step(Approval(approve=False, reason=reason, tool_call_id=tool_call_id))

    @contextmanager
    def step_lock(self) -> Iterator[StepLock]:
        """Hold the agent's step lock (see loop/steplock.py): wait while a step
        of this agent runs in another thread, process or host. Re-entrant in
        one thread, so `retry` can hold it across its pop and its step."""
        owner = threading.get_ident()
        held = self._held_locks.get(owner)
        if held is not None:
            yield held
            return
        with self.new_step_lock() as lock:
            self._held_locks[owner] = lock
            try:
                yield lock
            finally:
                del self._held_locks[owner]

    def new_step_lock(self) -> StepLock:
        """The agent's step lock, not yet taken (`with` or `async with` it)."""
        given = (self.state.llm.timeout_seconds, self._timeout)
        if self._lease is None or self._lease[0] != given:
            self._lease = given, lease_seconds(resolve_timeout(self.state.llm, self._timeout))
        return StepLock(self.store, self.state.id, self.state.name, self._lease[1], self.on_wait)

    @property
    def llm(self) -> Model:
        """The model the agent calls: the one given, or its endpoint's."""
        if self._llm is None:
            config = self.state.llm
            endpoint = resolve_endpoint(config, *self._endpoint)
            timeout = resolve_timeout(config, self._timeout)
            self._llm = OpenAIChatModel(config, endpoint.base_url, endpoint.api_key, timeout)
        return self._llm


async def _last(events: AsyncIterator[StepEvent]) -> StepEvent | None:
    last = None
    async for event in events:
        last = event
    return last


def _result(event: StepEvent | None) -> StepResult:
    """The result a finished step's last event carries; its error if it failed."""
    if isinstance(event, StepFinished):
        return event.result
    if isinstance(event, StepFailed) and event.error is not None:
        raise event.error
    raise RuntimeError(f"a step ended with {event!r}")  # run_step ends with one of the two
