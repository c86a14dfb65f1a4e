"""The context window: what of recall memory the next request holds, and its
token budget. Recall-tier logic, so the memory tools and history edits use
it; the loop (loop/request.py, loop/compaction.py) owns the step that sends
the request, makes it fit and evicts.

The request is the system message (instructions, core memory blocks,
metadata and the recursive summary), the messages in the window, and the tool
schemas. Each is counted against the agent's window minus a reserve for the
reply (`Budget`). A single huge message is clipped with a marker in the request
(never in storage), and messages whose step failed before the model answered
are left out.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

from pydantic import BaseModel

from memgpt_lite.errors import ContextBudgetError
from memgpt_lite.llm.object_runs import common_run
from memgpt_lite.llm.tokens import REPLY_PRIMER_TOKENS, TokenCounter
from memgpt_lite.memory.core.blocks import (
    compact_wording,
    join_sections,
    render_block,
    system_sections,
)
from memgpt_lite.memory.deps import MemoryDeps
from memgpt_lite.models import Block, Message, utcnow

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


def clip_text(counter: TokenCounter, text: str, max_tokens: int, note: str) -> str:
    """`text` cut to about `max_tokens` tokens, with a marker saying so."""
    tokens = counter.encoding.encode_ordinary(text)
    if len(tokens) <= max_tokens:
        return text
    marker = f"\n[clipped: {len(tokens)} tokens, {note}]"
    keep = max(0, max_tokens - counter.count_text(marker))
    return counter.encoding.decode(tokens[:keep]) + marker


def _clip_message(counter: TokenCounter, message: dict[str, Any], limit: int) -> dict[str, Any]:
    note = "too long for the context window; the full text is in recall memory"
    clipped = dict(message)
    share = max(16, limit // (1 + len(message.get("tool_calls") or [])))
    if clipped.get("content"):
        clipped["content"] = clip_text(counter, clipped["content"], share, note)
    if clipped.get("tool_calls"):
        clipped["tool_calls"] = [
            {
                **c,
                "function": {
                    **c["function"],
                    "arguments": clip_text(counter, c["function"]["arguments"], share, note),
                },
            }
            for c in clipped["tool_calls"]
        ]
    return clipped


def unanswered(messages: Sequence[Message], step_id: str | None = None) -> list[Message]:
    """The user messages among `messages` that no model response followed in
    their step (it failed or was cancelled first), but those of step `step_id`,
    the one in progress. They stay stored, but are left out of requests: the
    user was told and can send them again, and the next turn must not answer
    a heap of messages the user thought were gone."""
    answered = {m.step_id for m in messages if m.role == "assistant"}
    return [
        m
        for m in messages
        if m.role == "user" and m.step_id not in answered and m.step_id not in (None, step_id)
    ]


class KeptSteps:
    """What `unanswered` needs of one agent's window, kept between requests
    (compile_context runs it over the whole window on every one): each
    message's role and step as it came in, and per step how many user and
    assistant messages the window holds. A new window is brought up to date
    from the messages that left the last one and those that entered it,
    found by object in C (`common_run`); so a turn walks in Python only its
    new messages. Same object, same role and step: the store hands out an
    object again only while it holds what it held (`Storage.messages_from`)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # a server may compile one agent's context twice at once
        self.messages: list[Message] = []  # the window's, held: compared by object
        self.steps: list[tuple[str, str | None]] = []  # (role, step_id) of each
        self.users: Counter[str | None] = Counter()
        self.assistants: Counter[str | None] = Counter()
        self.unanswered: set[str | None] = set()  # steps with users and no assistant

    def unanswered_in(self, messages: Sequence[Message], step_id: str | None) -> list[Message]:
        """`unanswered(messages, step_id)`, from what is kept."""
        with self.lock:
            self._update(messages)
            asked = self.unanswered - {None, step_id}
            if not asked:
                return []
            return [
                m
                for m, (role, step) in zip(messages, self.steps, strict=True)
                if role == "user" and step in asked
            ]

    def _update(self, messages: Sequence[Message]) -> None:
        at, run = common_run(self.messages, messages)
        if run == 0:  # nothing kept (a store that hands out new objects): count afresh
            for kept in (self.messages, self.steps, self.users, self.assistants, self.unanswered):
                kept.clear()
        self._count(self.steps[:at] + self.steps[at + run :], -1)  # those that left
        del self.messages[at + run :], self.steps[at + run :]
        del self.messages[:at], self.steps[:at]
        entered = [(m.role, m.step_id) for m in messages[run:]]
        self._count(entered, 1)
        self.messages += messages[run:]
        self.steps += entered

    def _count(self, steps: list[tuple[str, str | None]], change: int) -> None:
        for role, step in steps:
            if role == "user":
                counter = self.users
            elif role == "assistant":
                counter = self.assistants
            else:
                continue
            counter[step] += change
            if counter[step] == 0:
                del counter[step]
            if step in self.users and step not in self.assistants:
                self.unanswered.add(step)
            else:
                self.unanswered.discard(step)


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
    agent: MemoryDeps, clip_tokens: int | None = None, step_id: str | None = None
) -> CompiledContext:
    """Build the next request from the store, for step `step_id` if one is in
    progress. Messages over `clip_tokens` (default: half the room left for
    messages) are clipped in the request; unanswered ones are left out."""
    counter, budget = agent.token_counter, budget_for(agent)
    state = agent.state
    messages, blocks, stats = agent.store.main_context(state.id, state.context_start)
    left_out = {m.id for m in _unanswered_in_window(agent, messages, step_id)}
    if left_out:
        messages = [m for m in messages if m.id not in left_out]
    sections = system_sections(
        state.system,
        blocks,
        stats,
        utcnow(),
        state.summary,
        hidden_messages=max(0, stats.message_count - len(messages)),
        compact=compact_wording(budget.window),
    )
    system = {"role": "system", "content": join_sections(sections)}
    tools = agent.tool_schemas()
    fixed = _fixed_tokens(agent, system)
    if clip_tokens is None:
        clip_tokens = max(64, (budget.compact_at - fixed) // 2)
    requests, counts = counter.window(messages)  # no Python call per message
    request: list[dict[str, Any]] = [system, *requests]
    if counts and max(counts) > clip_tokens:
        for i, tokens in enumerate(counts):
            if tokens > clip_tokens:
                request[i + 1] = _clip_message(counter, request[i + 1], clip_tokens)
                counts[i] = counter.count_message(request[i + 1])
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


def _fixed_tokens(agent: MemoryDeps, system: dict[str, Any]) -> int:
    """Tokens of a request besides its messages: system message, tools, primer."""
    return agent.token_counter.count_message(system) + agent.tool_tokens() + REPLY_PRIMER_TOKENS


def core_memory_overflow(agent: MemoryDeps, block: Block, new_value: str) -> str | None:
    """Why giving `block` the value `new_value` would crowd the conversation
    out of the agent's context window, or None if the edit is fine. An edit
    that does not grow the system message is always fine, so an agent already
    over the limit can still be trimmed."""
    compiled = compile_context(agent)
    edited = render_block(block.model_copy(update={"value": new_value}))
    sections = [
        (name, edited if name == f"block:{block.label}" else text)
        for name, text in compiled.sections
    ]
    after = _fixed_tokens(agent, {"role": "system", "content": join_sections(sections)})
    budget = budget_for(agent)
    if after <= budget.core_limit or after <= compiled.fixed_tokens:
        return None
    return (
        f"with this edit the system message and core memory would take {after:,} tokens, "
        f"over the {budget.core_limit:,} that the agent's {budget.window:,}-token context "
        "window leaves for them (the rest is kept for the conversation)"
    )


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
