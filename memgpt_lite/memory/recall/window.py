"""The context window: what of recall memory the next request holds, and its
token budget. Recall-tier logic, so the memory tools and history edits use
it; the loop (loop/request.py, loop/compaction.py) owns the step that sends
the request, makes it fit and evicts.

The request is the system message (instructions, core memory blocks,
metadata and the recursive summary), the messages in the window, and the tool
schemas. Each is counted against the agent's window minus a reserve for the
reply (`Budget`). A single huge message is clipped with a marker in the request
(never in storage), and the user messages of steps that stopped before a
reply reached the user are left out (memory/recall/answered.py).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple
from weakref import WeakKeyDictionary

from pydantic import BaseModel

from memgpt_lite.errors import ContextBudgetError
from memgpt_lite.llm.tokens import REPLY_PRIMER_TOKENS, TokenCounter
from memgpt_lite.memory.core.blocks import (
    compact_wording,
    join_sections,
    render_block,
    system_sections,
)
from memgpt_lite.memory.deps import MemoryDeps
from memgpt_lite.memory.recall.answered import KeptSteps
from memgpt_lite.memory.recall.clipping import Clipper
from memgpt_lite.models import Block, Message, utcnow
from memgpt_lite.storage.protocol import MainContext

# Context windows of well-known models, by name prefix; the first match wins,
# so longer prefixes come first.
DEFAULT_CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("chatgpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-0125", 128_000),
    ("gpt-4-1106", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("gpt-5", 400_000),
    ("gpt-oss", 131_072),
    ("o1-mini", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
)
# Local models vary widely; a cautious default. Set `context_window` for yours.
UNKNOWN_MODEL_WINDOW = 8_192
# The window an agent works in by default when its model's is larger (see
# AgentSettings.working_window): the model's whole window, sent every turn
# before a compaction, would cost up to ~115k prompt tokens a turn on a 128k
# model, and models attend less reliably to a long context. 32k keeps a few
# hundred messages in view; the summary and recall search hold the rest.
DEFAULT_WORKING_WINDOW = 32_000
# The least room kept for the conversation when core memory grows: an edit that
# would leave less is refused (see `core_memory_overflow`).
MIN_MESSAGE_ROOM = 256
# Core memory's own share of a window, kept for its blocks even where the
# instructions and tool schemas leave the conversation less than its quarter
# (small windows): the blocks may always grow to this many tokens, as long as
# the conversation keeps MIN_MESSAGE_ROOM, so a small window still keeps its
# key facts, such as the user's name (`Budget.core_reserve`).
MIN_CORE_RESERVE = 256


def known_window(model: str) -> int | None:
    """The context window of a well-known model, by its name; None for others."""
    name = model.rsplit("/", 1)[-1].lower()
    return next((size for prefix, size in DEFAULT_CONTEXT_WINDOWS if name.startswith(prefix)), None)


def window_for_model(model: str) -> int:
    return known_window(model) or UNKNOWN_MODEL_WINDOW


def working_window(model_window: int, setting: int | None) -> int:
    """The window an agent works in: its `working_window` setting (None: the
    default; 0: off) when the model's window is larger, else the model's."""
    wanted = DEFAULT_WORKING_WINDOW if setting is None else setting
    return min(model_window, wanted) if wanted > 0 else model_window


@dataclass(frozen=True)
class Budget:
    """Token limits for one agent's requests."""

    window: int  # the window the agent works in (see `working_window`)
    reserve: int  # kept free for the reply
    warning_at: int
    compact_at: int
    model_window: int  # the model's whole window

    @property
    def summary_tokens(self) -> int:
        return max(64, min(1000, self.window // 10))

    @property
    def core_limit(self) -> int:
        """The most tokens the system message (core memory included) and the
        tool schemas may grow to: the rest of the usable window, at least a
        quarter, is the conversation's."""
        return self.compact_at - max(MIN_MESSAGE_ROOM, self.compact_at // 4)

    @property
    def core_reserve(self) -> int:
        """The tokens the blocks of core memory may always take, up to
        `core_floor`, even past `core_limit`: an eighth of the window, at least
        MIN_CORE_RESERVE."""
        return max(MIN_CORE_RESERVE, self.window // 8)

    @property
    def core_floor(self) -> int:
        """The most the system message and tool schemas may ever take: the
        conversation keeps at least MIN_MESSAGE_ROOM tokens of the usable window."""
        return self.compact_at - MIN_MESSAGE_ROOM


def budget_for(agent: MemoryDeps) -> Budget:
    settings = agent.state.settings
    model_window = settings.context_window or window_for_model(agent.state.llm.model)
    window = working_window(model_window, settings.working_window)
    reserve = settings.reply_reserve_tokens
    if reserve is None:
        reserve = min(4096, math.ceil(window * 0.1))
    compact_at = min(int(window * settings.compaction_threshold), window - reserve)
    warning_at = min(int(window * settings.warning_threshold), compact_at)
    return Budget(window, reserve, warning_at, compact_at, model_window)


class OfferedTools(NamedTuple):
    """Tools a step offers beside the agent's own (a client's: loop/
    client_tools.py): their schemas and the tokens those take."""

    schemas: list[dict[str, Any]]
    tokens: int


NO_MORE_TOOLS = OfferedTools([], 0)


@dataclass
class CompiledContext:
    """The next request, as it would be sent, with its token counts."""

    sections: list[tuple[str, str]]
    messages: list[Message]
    message_tokens: list[int]
    request_messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    fixed_tokens: int  # system message, tool schemas and reply primer
    summary_tokens: int
    stored_messages: int

    @property
    def total_tokens(self) -> int:
        return self.fixed_tokens + sum(self.message_tokens)


# Per agent (its token counter is one per agent object), dropped with it.
_kept_steps: WeakKeyDictionary[TokenCounter, KeptSteps] = WeakKeyDictionary()
_kept_steps_lock = threading.Lock()


def _unanswered_in_window(
    agent: MemoryDeps, messages: list[Message], step_id: str | None
) -> list[Message]:
    with _kept_steps_lock:
        steps = _kept_steps.get(agent.token_counter)
        if steps is None:
            steps = _kept_steps[agent.token_counter] = KeptSteps()
    return steps.unanswered_in(messages, step_id)


def compile_context(
    agent: MemoryDeps,
    *,
    step_id: str | None = None,
    step_room: int | None = None,
    read: MainContext | None = None,
    more_tools: OfferedTools = NO_MORE_TOOLS,
) -> CompiledContext:
    """Build the next request from the store, for step `step_id` if one is in
    progress; unanswered messages are left out. A message over `message_limit`
    is clipped in the request, but one of the step in progress (what the
    model asked for) that could fit whole once older ones are evicted: the
    caller compacts, then, if the step is still too long, compiles again
    with `step_room` to clip the step's messages together to fit in it
    (`Clipper.fit_step`). `read`: what the store gave as the step began
    (`Storage.main_context` with the user's message), instead of reading.
    `more_tools`: tools the step offers beside the agent's own."""
    counter, budget = agent.token_counter, budget_for(agent)
    state = agent.state
    if read is None:
        read = agent.store.main_context(
            state.id, state.context_start, conversation=state.conversation_id
        )
    messages, blocks, stats = read
    left_out = {m.id for m in _unanswered_in_window(agent, messages, step_id)}
    if left_out:
        messages = [m for m in messages if m.id not in left_out]
    sections = _system_sections(agent, read, len(messages), budget.window)
    system = {"role": "system", "content": join_sections(sections)}
    tools = [*agent.tool_schemas(), *more_tools.schemas]
    fixed = _fixed_tokens(agent, system) + more_tools.tokens
    requests, counts = counter.window(messages)  # no Python call per message
    request: list[dict[str, Any]] = [system, *requests]
    first = step_start(messages, step_id)
    limit = message_limit(budget, fixed)
    clipper = Clipper(counter, requests, request, counts)
    if counts and max(counts) > limit:
        whole_room = budget.compact_at - fixed
        for i in range(len(counts)):
            # One of the step's, if it can fit whole, is left whole: room is
            # made for it by compaction (loop/request.py).
            if i < first or counts[i] > whole_room:
                clipper.clip(i, limit)
    if step_room is not None:
        clipper.fit_step(first, step_room)
    return CompiledContext(
        sections,
        messages,
        counts,
        request,
        tools,
        fixed,
        counter.count_text(state.summary),
        stats.message_count,
    )


def _system_sections(
    agent: MemoryDeps, read: MainContext, shown: int, window: int
) -> list[tuple[str, str]]:
    """The system message's parts, for a request that shows `shown` of the
    conversation's messages in a window of `window` tokens."""
    _, blocks, stats = read
    state = agent.state
    hidden = max(0, stats.message_count - shown)
    compact = compact_wording(window)
    return system_sections(
        state.system, blocks, stats, utcnow(), state.summary, hidden, compact=compact
    )


def message_limit(budget: Budget, fixed_tokens: int) -> int:
    """The most tokens one message of an earlier step keeps in a request: half
    the room the fixed part leaves for messages. The search tools size their
    pages to it (`result_room`), so that a page is seldom clipped, in its
    step or later."""
    return max(64, (budget.compact_at - fixed_tokens) // 2)


def result_room(agent: MemoryDeps) -> int:
    """The tokens a tool result may take, to be shown whole (`message_limit`)."""
    compiled = compile_context(agent)
    return message_limit(budget_for(agent), compiled.fixed_tokens)


def step_start(messages: Sequence[Message], step_id: str | None) -> int:
    """Index of the first message of step `step_id`, the newest ones (len(messages)
    if none): walked from the end, so a turn walks only its own step."""
    first = len(messages)
    if step_id is None:
        return first
    while first > 0 and messages[first - 1].step_id == step_id:
        first -= 1
    return first


def _fixed_tokens(agent: MemoryDeps, system: dict[str, Any]) -> int:
    """Tokens of a request besides its messages: system message, tools, primer."""
    return agent.token_counter.count_message(system) + agent.tool_tokens() + REPLY_PRIMER_TOKENS


def core_memory_overflow(agent: MemoryDeps, block: Block, new_value: str) -> str | None:
    """Why giving `block` the value `new_value` would crowd the conversation
    out of the agent's context window, or None if the edit is fine. An edit
    that does not grow the system message is always fine, so an agent already
    over the limit can still be trimmed; one that keeps the blocks within the
    budget's `core_reserve` is fine while the conversation keeps its least
    room, so a short fact always fits. The reason says how many tokens the
    edit adds and how many fit, so the model can shorten it to fit."""
    compiled = compile_context(agent)
    edited = render_block(
        block.model_copy(update={"value": new_value}), compact_wording(budget_for(agent).window)
    )
    sections = [
        (name, edited if name == f"block:{block.label}" else text)
        for name, text in compiled.sections
    ]
    after = _fixed_tokens(agent, {"role": "system", "content": join_sections(sections)})
    before = compiled.fixed_tokens
    if after <= before:
        return None
    budget, counter = budget_for(agent), agent.token_counter
    blocks_before = counter.count_text(_blocks_text(compiled.sections))
    reserved = min(budget.core_floor, before + budget.core_reserve - blocks_before)
    limit = max(budget.core_limit, reserved)
    if after <= limit:
        return None
    room = max(0, limit - before)
    return (
        f"this edit adds {after - before:,} tokens to core memory, and the agent's "
        f"{budget.window:,}-token context window has room for {room:,} more "
        f"(core memory, the instructions and the tools would take {after:,} tokens, "
        f"over the {limit:,} it leaves them; the rest is kept for the conversation)"
    )


def full_core_memory(problem: str, condense: str) -> str:
    """What a memory tool tells the model when `core_memory_overflow` refuses
    its edit (`problem`): every way on, so the fact is never just dropped.
    `condense` names the tool of its set that replaces text in a block."""
    return (
        f"{problem}. Nothing was changed. Ways on: keep only the key fact here, in a "
        f"line short enough to fit (such as the user's name); make room by condensing or "
        f"removing older text of a block with {condense}; and save the rest with "
        "archival_memory_insert, where archival_memory_search finds it again."
    )


def _blocks_text(sections: list[tuple[str, str]]) -> str:
    return join_sections([(name, text) for name, text in sections if name.startswith("block:")])


def budget_error(
    agent: MemoryDeps, compiled: CompiledContext, budget: Budget
) -> ContextBudgetError:
    counter = agent.token_counter
    sizes = [f"{name} {counter.count_text(text)}" for name, text in compiled.sections]
    sizes.append(f"tool schemas {agent.tool_tokens()}")
    name = agent.state.name
    larger = "the larger window its model has (AgentSettings.context_window)"
    if budget.window < budget.model_window:
        larger = (
            f"more of its model's {budget.model_window:,}-token window "
            "(AgentSettings.working_window; 0 for all of it)"
        )
    return ContextBudgetError(
        f"agent {name!r}: the system message and core memory alone need "
        f"{compiled.fixed_tokens} tokens, over the {budget.compact_at} usable of a "
        f"{budget.window}-token window ({', '.join(sizes)}). To recover, shorten the "
        f"largest block (memgpt-lite blocks {name} LABEL --edit, or agent.set_block), "
        f"keeping its detail in archival memory (memgpt-lite archival {name} insert), "
        f"or give the agent {larger}."
    )


class ContextOverview(BaseModel):
    """Where the tokens of the next request go."""

    model: str
    context_window: int  # the window the agent works in
    model_window: int  # the model's whole window, of which the above may be a part
    reply_reserve: int
    total_tokens: int
    sections: dict[str, int]
    messages_in_context: int
    messages_in_storage: int


def overview(agent: MemoryDeps) -> ContextOverview:
    compiled, budget, counter = compile_context(agent), budget_for(agent), agent.token_counter
    sections = {name: counter.count_text(text) for name, text in compiled.sections}
    sections["messages"] = sum(compiled.message_tokens)
    sections["tool schemas"] = agent.tool_tokens()
    return ContextOverview(
        model=agent.state.llm.model,
        context_window=budget.window,
        model_window=budget.model_window,
        reply_reserve=budget.reserve,
        total_tokens=compiled.total_tokens,
        sections=sections,
        messages_in_context=len(compiled.messages),
        messages_in_storage=compiled.stored_messages,
    )
