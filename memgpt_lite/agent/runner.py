"""Where an agent's steps run: the `Runner` that every `Agent` has, as
`agent.runner`.

The agent (agent.py) is the user's object: its configuration and its memory.
Its runner holds what running steps needs besides: the model client and the
token counter (built on first use, for the agent's model, and rebuilt when
the model changes), the embedder and the in-memory vector indexes of hybrid
search, the step lock (one step at a time per agent, across threads,
processes and hosts; re-entrant in one thread), and the engine of the four
drivers `agent.step()`, `astep()`, `stream()` and `astream()`: `events()`,
which runs the loop's one step core (loop/step.py). It also runs the other
work that calls the model: `retry()`, `summarize()` (a compaction now),
`reflect()`, and the reflection (and the sleep-time agents' pass,
sleeptime.py) that starts in the background after a step.

The layers below take the runner, not the agent: it satisfies `AgentDeps`
(tools/deps.py), `MemoryDeps` (memory/deps.py) and the loop's `StepHost`.
Its `state`, `store` and `tools` are its agent's own, so what a step stores
and reloads is what the agent shows. (llm/runner.py is another thing: how
synchronous code runs a coroutine, which the drivers use.)
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from memgpt_lite.agent import sleeptime
from memgpt_lite.agent.providers import provider_endpoint
from memgpt_lite.agent.setup import embedder_for
from memgpt_lite.embeddings.embedder import Embedder
from memgpt_lite.errors import ConfigError, NotFoundError
from memgpt_lite.events import StepEvent, StepFailed, StepFinished
from memgpt_lite.llm import runner as sync
from memgpt_lite.llm.model import Model
from memgpt_lite.llm.openai_chat import OpenAIChatModel, chat_request
from memgpt_lite.llm.tokens import TokenCounter
from memgpt_lite.loop import reflection
from memgpt_lite.loop.compaction import CompactionReport, compact
from memgpt_lite.loop.reflection import ReflectionReport
from memgpt_lite.loop.step import run_step
from memgpt_lite.loop.steplock import OnWait, StepLock, lease_seconds
from memgpt_lite.loop.stopping import StopRequest
from memgpt_lite.memory.core.blocks import compact_wording
from memgpt_lite.memory.recall.history import pop_for_retry
from memgpt_lite.memory.recall.window import budget_for, compile_context
from memgpt_lite.memory.retrieval.search import check_embedder
from memgpt_lite.memory.retrieval.vector_index import VectorIndex
from memgpt_lite.models import AgentState, Message, StepInput, StepResult, new_id
from memgpt_lite.settings.resolve import resolve_endpoint, resolve_timeout
from memgpt_lite.settings.values import Settings
from memgpt_lite.step_input import GroupTurn, plain_input
from memgpt_lite.storage.protocol import MainContext, Owner, Storage
from memgpt_lite.tools.rules import RuleBook
from memgpt_lite.tools.schema import Tool, ToolContext, ToolOutcome
from memgpt_lite.tools.sets import agent_tools

Endpoint = tuple[str | None, str | None]  # base URL and API key given for this session


class AgentParts(Protocol):
    """What a runner reads of the agent it runs steps for: its row as last
    read (which a step reloads and keeps there), its store and tools, the
    settings the edge resolved, and whom to tell when a step waits."""

    state: AgentState
    store: Storage
    tools: dict[str, Tool]
    process_settings: Settings
    on_wait: OnWait | None


@dataclass
class _Parts:
    """An agent's parts without its `Agent`: a background reflection's own."""

    state: AgentState
    store: Storage
    tools: dict[str, Tool]
    process_settings: Settings
    on_wait: OnWait | None = None


class Runner:
    """Runs the steps of one agent (see the module's doc)."""

    def __init__(
        self,
        agent: AgentParts,
        *,
        endpoint: Endpoint = (None, None),
        timeout: float | None = None,
        llm: Model | None = None,
        embedder: Embedder | None = None,
        open_peer: Callable[[AgentState], Runner] | None = None,
    ) -> None:
        self.agent = agent
        # Opens another agent for the multi-agent tools (agent.py's _peer_opener).
        self._open_peer = open_peer
        self.store = agent.store
        self.tools = agent.tools
        self._endpoint = endpoint
        self._timeout = timeout  # the limit on one model request, retries included; not stored
        self._llm = llm
        self._given_llm = llm  # shared with the background reflection's runner
        self._embedder = embedder
        self._vector_indexes: dict[str, VectorIndex] = {}
        self._archive: Runner | None = None  # of the archive attached (attached_archive)
        self._held_locks: dict[int, StepLock] = {}  # by thread
        self._counter: TokenCounter | None = None
        self._tool_tokens: dict[bool, int] = {}  # by wording: compact or not
        # The step lock's lease, by the timeouts it was worked out from:
        # config.toml is read once per runner, as the model reads it.
        self._lease: tuple[tuple[float | None, float | None], float] | None = None

    def for_agent(self, agent: AgentParts) -> Runner:
        """A runner for another copy of this agent (in another conversation),
        with this one's endpoint, timeout, model, embedder and peers."""
        return Runner(
            agent,
            endpoint=self._endpoint,
            timeout=self._timeout,
            llm=self._given_llm,
            embedder=self._embedder,
            open_peer=self._open_peer,
        )

    @property
    def state(self) -> AgentState:
        """The agent's row as last read: the agent's own `state`."""
        return self.agent.state

    @state.setter
    def state(self, value: AgentState) -> None:
        self.agent.state = value

    # What a step calls: the model, and what counts its tokens

    @property
    def llm(self) -> Model:
        """The model the agent calls: the one given, or its endpoint's."""
        if self._llm is None:
            config = self.state.llm
            endpoint = resolve_endpoint(config, *self._model_endpoint())
            timeout = resolve_timeout(config, self._timeout)
            self._llm = OpenAIChatModel(config, endpoint.base_url, endpoint.api_key, timeout)
        return self._llm

    def _model_endpoint(self) -> tuple[str | None, str | None]:
        """The base URL and key the agent's requests go with: its provider's
        as they are now (agent/providers.py), else those it was given."""
        provider = self.state.llm.provider
        if provider is None:
            return self._endpoint
        return provider_endpoint(self.store, self.state.owner, provider)

    @property
    def token_counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = TokenCounter(
                self.state.llm.model, self.agent.process_settings.cache_dir
            )
        return self._counter

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The tool schemas, in the compact wording in a small window."""
        return [t.schema(self._compact()) for t in self.tools.values()]

    def tool_tokens(self) -> int:
        compact = self._compact()
        if compact not in self._tool_tokens:  # the tools do not change, so count them once
            self._tool_tokens[compact] = self.token_counter.count_tools(self.tool_schemas())
        return self._tool_tokens[compact]

    def _compact(self) -> bool:
        return compact_wording(budget_for(self).window)

    def model_changed(self) -> None:
        """Forget the model client and the counts made for the old model."""
        self._llm = self._counter = None
        self._tool_tokens = {}

    # Hybrid search

    @property
    def embedder(self) -> Embedder | None:
        """The agent's embedder, built from `settings.embedder` on first use."""
        if self._embedder is None and self.state.settings.embedder:
            base_url, api_key = self._model_endpoint()
            self._embedder = embedder_for(
                self.state.settings.embedder,
                self.agent.process_settings,
                base_url=base_url or self.state.llm.base_url,
                api_key=api_key,
            )
            check_embedder(self)
        return self._embedder

    def set_embedder(self, embedder: Embedder) -> None:
        """Use `embedder` from now on (it must match the stored vectors), and
        store its name in the agent's settings."""
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

    def attached_archive(self) -> Runner | None:
        """A runner of the row holding the passages of the archive attached
        to the agent, None without one. Its row is read anew each time (its
        embedding space may have been recorded elsewhere); the runner, with
        its embedder and vector indexes, is kept while the same archive with
        the same embedder is attached."""
        store_id = self.state.attached_archive
        if store_id is None:
            return None
        state = self.store.archive_store(store_id)
        kept = self._archive
        if kept is not None and _same_store(kept.state, state):
            kept.state = state
        else:
            kept = self._archive = self._open_archive(state)
        return kept

    def _open_archive(self, state: AgentState) -> Runner:
        """A runner for an archive's row, opened as the multi-agent tools
        open an agent (its own key by the same rule); by a runner that opens
        none (a background reflection's), with this one's endpoint and key
        for an archive of the same endpoint only."""
        if self._open_peer is not None:
            return self._open_peer(state)
        same = state.llm.base_url == self.state.llm.base_url
        parts = _Parts(
            state=state, store=self.store, tools={}, process_settings=self.agent.process_settings
        )
        return Runner(
            parts, endpoint=self._endpoint if same else (None, None), timeout=self._timeout
        )

    def context_messages(self) -> list[Message]:
        """The messages in the context window, oldest first."""
        state = self.state
        return self.store.messages_from(state.id, state.context_start, state.conversation_id)

    def run_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Run the agent's tool `name` now, outside any step, as its user's
        own call (no tool rule or approval applies: trying a tool, say). It
        holds the agent's step lock, so no step runs meanwhile, and reads the
        agent's row afresh first; what the tool changes (a memory block,
        archival memory) stays changed. NotFoundError for a tool the agent
        does not have."""
        tool = self.tools.get(name)
        if tool is None:
            raise NotFoundError(
                f"agent {self.state.name!r} has no tool named {name!r}; "
                f"its tools are: {', '.join(self.tools)}"
            )
        context = ToolContext(deps=self, step_id=new_id("step"))
        with self.step_lock():
            state = self.state
            self.state = self.store.get_agent(state.id, conversation=state.conversation_id)
            limit = self.state.settings.tool_result_max_chars
            return sync.run(tool.arun(context, json.dumps(arguments), limit, in_thread=False))

    def preview_request(self, message: str) -> dict[str, Any]:
        """The body of the request a step would send first for the user's
        `message`, sending and storing nothing: the system message and
        window as compiled now, the message after them, and the tools the
        tool rules offer at a step's start. A window over its budget is
        shown as it is (the step would compact it first)."""
        state = self.state = self.store.get_agent(
            self.state.id, conversation=self.state.conversation_id
        )
        messages, blocks, stats = self.store.main_context(
            state.id, state.context_start, conversation=state.conversation_id
        )
        step_id = new_id("step")  # the step in progress, whose message is kept
        user = Message(
            agent_id=state.id,
            role="user",
            content=message,
            step_id=step_id,
            conversation_id=state.conversation_id,
        )
        read = MainContext([*messages, user], blocks, stats)
        compiled = compile_context(self, step_id=step_id, read=read)
        tools = RuleBook(state.settings.tool_rules).offered(compiled.tools)
        llm = state.llm
        return chat_request(llm, compiled.request_messages, tools, llm.tool_choice, llm.stream)

    # The step lock (loop/steplock.py)

    @contextmanager
    def step_lock(self) -> Iterator[StepLock]:
        """Hold the agent's step lock: wait while a step of this agent runs in
        another thread, process or host. Re-entrant in one thread, so a retry
        holds it across its pop and its step."""
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

    def new_step_lock(self, starts_step: bool = False) -> StepLock:
        """The agent's step lock, not yet taken (`with` or `async with` it);
        a step's (`starts_step`) reads what the step starts from as it is
        taken (`StepLock.start`)."""
        given = (self.state.llm.timeout_seconds, self._timeout)
        if self._lease is None or self._lease[0] != given:
            self._lease = given, lease_seconds(resolve_timeout(self.state.llm, self._timeout))
        state, on_wait = self.state, self.agent.on_wait
        return StepLock(
            self.store,
            state.id,
            state.name,
            self._lease[1],
            on_wait,
            starts_step,
            conversation=state.conversation_id,
        )

    def rollback_interrupted(self) -> None:
        """Roll back what a step interrupted in this thread (Ctrl-C) left
        open: its writes are transactions, so the history keeps whole
        answers only."""
        self.store.rollback_interrupted()

    # Steps: the engine of the four drivers, on the step core (loop/step.py)

    def events(
        self, message: StepInput, *, in_thread: bool, stop: StopRequest | None = None
    ) -> AsyncGenerator[StepEvent, None]:
        """The events of one step, as `agent.stream()` and `astream()` give
        them. A sync tool runs in a worker thread when `in_thread`. An empty
        message or a missing API key fails here, before anything is stored.
        `stop`: see loop/stopping.py."""
        given = plain_input(message)
        text = given.text() if isinstance(given, GroupTurn) else given
        if isinstance(text, str) and not text.strip():
            raise ConfigError("the message is empty")
        _ = self.llm  # a missing API key fails here, before waiting or storing anything
        held = self._held_locks.get(threading.get_ident())
        return run_step(self, message, held_lock=held, tools_in_threads=in_thread, stop=stop)

    def step(self, message: StepInput, stop: StopRequest | None = None) -> StepResult:
        """One step, run to its end from synchronous code: its result, or
        its error raised."""
        return _result(sync.run(_last(self.events(message, in_thread=False, stop=stop))))

    async def astep(self, message: StepInput, stop: StopRequest | None = None) -> StepResult:
        """`step`, awaited."""
        return _result(await _last(self.events(message, in_thread=True, stop=stop)))

    async def message_agent(self, agent: AgentState, message: str) -> StepResult:
        """A step of another agent on `message`, for the multi-agent tools
        (tools/multi_agent.py, which check the owner and the chain): its
        result, or its error raised."""
        if self._open_peer is None:  # a background reflection's runner runs no tools
            raise ConfigError(f"agent {self.state.name!r} cannot message other agents here")
        peer = self._open_peer(agent)
        try:
            return await peer.astep(message)
        finally:
            # Opened for this message alone: its connections are closed now,
            # in the loop they belong to, not whenever it is collected.
            await peer.aclose_model()

    async def aclose_model(self) -> None:
        """Close the model client's connections, in the event loop they
        belong to (a runner opened for one step, in a loop that ends)."""
        if isinstance(self._llm, OpenAIChatModel):
            await self._llm.aclose()

    def after_step(self, manages_group: bool) -> None:
        """Called by the step core once a step ended: start a reflection in
        the background when `reflect_every` turns went unread, and, for the
        main agent of a group, a pass of its sleep-time agents when theirs
        are due (sleeptime.py)."""
        if reflection.due(self):
            reflection.start_background(self.state.id, self._twin)
        # A background reflection's runner (no `_open_peer`) steps no group.
        if manages_group and self._open_peer is not None:
            sleeptime.after_turn(self.store, self.state.id, self._open_helper)

    def _open_helper(self, state: AgentState) -> Runner:
        """A sleep-time agent of this one, opened for a pass as the
        multi-agent tools open an agent, with nobody to tell when it waits
        (a wait is logged)."""
        if self._open_peer is None:
            raise ConfigError(f"agent {self.state.name!r} cannot open other agents here")
        helper = self._open_peer(state)
        helper.agent.on_wait = None
        return helper

    def _twin(self) -> Runner:
        """A runner of this agent for another thread: its own model client."""
        custom = {name: tool for name, tool in self.tools.items() if name in self.state.tool_names}
        state = self.store.get_agent(self.state.id)
        parts = _Parts(
            state=state,
            store=self.store,
            tools=agent_tools(state.settings.tool_set, custom),
            process_settings=self.agent.process_settings,
        )
        return Runner(
            parts,
            endpoint=self._endpoint,
            timeout=self._timeout,
            llm=self._given_llm,
            embedder=self._embedder,
        )

    # The other work that calls the model

    def retry(self) -> StepResult:
        """Remove the last exchange and send its user message again, as one
        step: no other step of the agent comes between the two."""
        _ = self.llm  # a missing API key fails here, before anything is deleted
        with self.step_lock():
            return self.step(pop_for_retry(self))

    def summarize(self) -> CompactionReport:
        """Force a compaction now: the older messages leave the window and are
        folded into the summary (they stay searchable in recall memory)."""
        with self.step_lock():
            state = self.state
            self.state = self.store.get_agent(state.id, conversation=state.conversation_id)
            return sync.run(compact(self, compile_context(self), force=True))

    def reflect(self) -> ReflectionReport:
        """Read the messages no reflection has read and update memory from
        them (loop/reflection.py)."""
        return sync.run(reflection.reflect(self))

    async def areflect(self) -> ReflectionReport:
        """`reflect`, awaited."""
        return await reflection.reflect(self)


def _same_store(kept: AgentState, now: AgentState) -> bool:
    """Whether a runner built for the row `kept` serves it as it is `now`:
    the same row, embedder and endpoint."""
    return (kept.id, kept.settings.embedder, kept.llm.base_url) == (
        now.id,
        now.settings.embedder,
        now.llm.base_url,
    )


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
