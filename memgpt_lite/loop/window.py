"""Context window management: every request fits, and nothing is forgotten.

Before each call the whole request is counted (system message with core memory,
metadata and summary; the messages in the window; the tool schemas) against the
agent's window minus a reserve for the reply:

- past the warning threshold (75%), a one-time memory-pressure alert asks the
  model to save what matters; it is re-armed by the next compaction;
- past the compaction threshold (90%), or when the endpoint answers
  `context_length_exceeded`, the oldest messages are folded into the recursive
  summary by the model and leave the window. They stay in recall storage and
  searchable. An assistant message is never separated from its tool results.

Fallbacks always terminate: a failed or useless summary falls back to dropping
the oldest whole exchanges; a single huge message is clipped with a marker in
the request (never in storage); and when the system message and core memory
alone cannot fit, `ContextBudgetError` names each section and its size.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from memgpt_lite.errors import ContextBudgetError, ContextFullError, LLMError
from memgpt_lite.llm.openai_chat import Completion, ContextWindowExceeded
from memgpt_lite.llm.tokens import REPLY_PRIMER_TOKENS, TokenCounter
from memgpt_lite.memory.core import join_sections, load_prompt, render_block, system_sections
from memgpt_lite.models import AgentState, Block, Message, StepResult, utcnow

if TYPE_CHECKING:
    from memgpt_lite.agent import Agent

log = logging.getLogger(__name__)

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
# The least room kept for the conversation when core memory grows: an edit that
# would leave less is refused (see `core_memory_overflow`).
MIN_MESSAGE_ROOM = 256
MAX_FIT_ATTEMPTS = 6
MAX_ENDPOINT_RETRIES = 3
TRANSCRIPT_LINE_TOKENS = 300
_WINDOW_IN_ERROR = re.compile(r"maximum context length is (\d{1,9})\b")
# A stated window smaller than this is a server's mistake, not one to adopt:
# no agent could work in it, and the agent would be stuck with it.
MIN_LEARNED_WINDOW = 256


def window_for_model(model: str) -> int:
    name = model.rsplit("/", 1)[-1].lower()
    for prefix, window in DEFAULT_CONTEXT_WINDOWS:
        if name.startswith(prefix):
            return window
    return UNKNOWN_MODEL_WINDOW


@dataclass(frozen=True)
class Budget:
    """Token limits for one agent's requests."""

    window: int
    reserve: int  # kept free for the reply
    warning_at: int
    compact_at: int

    @property
    def summary_tokens(self) -> int:
        return max(64, min(1000, self.window // 10))

    @property
    def core_limit(self) -> int:
        """The most tokens the system message (core memory included) and the
        tool schemas may grow to: the rest of the usable window, at least a
        quarter, is the conversation's."""
        return self.compact_at - max(MIN_MESSAGE_ROOM, self.compact_at // 4)


def budget_for(agent: Agent) -> Budget:
    settings = agent.state.settings
    window = settings.context_window or window_for_model(agent.state.llm.model)
    reserve = settings.reply_reserve_tokens
    if reserve is None:
        reserve = min(4096, math.ceil(window * 0.1))
    compact_at = min(int(window * settings.compaction_threshold), window - reserve)
    warning_at = min(int(window * settings.warning_threshold), compact_at)
    return Budget(window, reserve, warning_at, compact_at)


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


def compile_context(
    agent: Agent, clip_tokens: int | None = None, step_id: str | None = None
) -> CompiledContext:
    """Build the next request from the store, for step `step_id` if one is in
    progress. Messages over `clip_tokens` (default: half the room left for
    messages) are clipped in the request; unanswered ones are left out."""
    counter, budget = agent.token_counter, budget_for(agent)
    state, store = agent.state, agent.store
    messages = store.messages_from(state.id, state.context_start)
    left_out = {m.id for m in unanswered(messages, step_id)}
    messages = [m for m in messages if m.id not in left_out]
    stats = store.agent_stats(state.id)
    sections = system_sections(
        state.system,
        store.get_blocks(state.id),
        stats,
        utcnow(),
        state.summary,
        hidden_messages=max(0, stats.message_count - len(messages)),
    )
    system = {"role": "system", "content": join_sections(sections)}
    tools = agent.tool_schemas()
    fixed = _fixed_tokens(agent, system)
    if clip_tokens is None:
        clip_tokens = max(64, (budget.compact_at - fixed) // 2)
    request, counts = [system], []
    for message in messages:
        as_sent = message.to_openai()
        tokens = counter.count_message(as_sent, cache_key=message.id)
        if tokens > clip_tokens:
            as_sent = _clip_message(counter, as_sent, clip_tokens)
            tokens = counter.count_message(as_sent)
        request.append(as_sent)
        counts.append(tokens)
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


def _fixed_tokens(agent: Agent, system: dict[str, Any]) -> int:
    """Tokens of a request besides its messages: system message, tools, primer."""
    return agent.token_counter.count_message(system) + agent.tool_tokens() + REPLY_PRIMER_TOKENS


def core_memory_overflow(agent: Agent, block: Block, new_value: str) -> str | None:
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


def choose_cut(messages: Sequence[Message], tokens: Sequence[int], keep_tokens: int) -> int:
    """Index of the first message to keep: as many recent messages as fit in
    `keep_tokens`, never fewer than the last exchange, and never starting at a
    tool result (which would separate it from the call it answers)."""
    cut, kept = len(messages), 0
    for i in reversed(range(len(messages))):
        kept += tokens[i]
        if messages[i].role == "tool":
            continue
        if cut < len(messages) and kept > keep_tokens:
            break
        cut = i
    return cut


def _first_of_step(messages: Sequence[Message], step_id: str) -> int:
    """Index of the first message of step `step_id` (len(messages) if none)."""
    return next((i for i, m in enumerate(messages) if m.step_id == step_id), len(messages))


class CompactionReport(BaseModel):
    evicted: int
    summarized: bool
    tokens_before: int
    tokens_after: int

    def describe(self) -> str:
        """One line for people: what left the window and what it saved."""
        if self.evicted == 0:
            return "Nothing to summarize: the window holds only the latest exchange."
        how = "summarized" if self.summarized else "dropped without a summary (summarizer failed)"
        return (
            f"{self.evicted} messages left the window, {how}; the request went from "
            f"{self.tokens_before:,} to {self.tokens_after:,} tokens."
        )


def _compaction_cut(
    agent: Agent, compiled: CompiledContext, pressure: int, force: bool, step_id: str | None
) -> int:
    """Index of the first message to keep after a compaction (see `compact`)."""
    budget = budget_for(agent)
    room = budget.compact_at - (compiled.fixed_tokens - compiled.summary_tokens)
    room -= budget.summary_tokens
    target = agent.state.settings.compaction_target
    keep = max(0, room * target) / (2**pressure)
    if force:  # asked for by the user: compact even when the window is far from full
        keep = min(keep, sum(compiled.message_tokens) * target)
    cut = choose_cut(compiled.messages, compiled.message_tokens, int(keep))
    if force and cut == 0 and len(compiled.messages) > 1:
        cut = choose_cut(compiled.messages, compiled.message_tokens, 0)
    if step_id is not None:
        cut = min(cut, _first_of_step(compiled.messages, step_id))
    return cut


def compact(
    agent: Agent,
    compiled: CompiledContext,
    *,
    pressure: int = 0,
    summarize: bool = True,
    force: bool = False,
    step_id: str | None = None,
) -> CompactionReport:
    """Evict the oldest messages from the window into the summary. Each level of
    `pressure` halves how much is kept; `summarize=False` drops whole exchanges
    without asking the model (the deterministic fallback). The messages of step
    `step_id`, the one in progress, always stay: the model must still see the
    question it is answering."""
    cut = _compaction_cut(agent, compiled, pressure, force, step_id)
    evicted = compiled.messages[:cut]
    before = compiled.total_tokens
    if not evicted:
        return CompactionReport(
            evicted=0, summarized=False, tokens_before=before, tokens_after=before
        )
    summary = summarize_messages(agent, agent.state.summary, evicted) if summarize else None
    # Everything evicted (only possible if the window held tool results alone):
    # the window restarts after the last of them.
    new_start = compiled.messages[cut].seq if cut < len(compiled.messages) else None
    new_start = new_start or (evicted[-1].seq or 0) + 1

    def evict(state: AgentState) -> None:
        if state.context_start >= new_start:
            return  # another process compacted further meanwhile
        state.context_start = new_start
        if summary is not None:
            state.summary = summary
        state.pressure_warned = False

    agent.state = agent.store.update_agent(agent.state.id, evict)
    after = compile_context(agent).total_tokens
    log.info(
        "agent %s: %d messages left the window (%d -> %d tokens, summarized: %s)",
        agent.state.name,
        len(evicted),
        before,
        after,
        summary is not None,
    )
    return CompactionReport(
        evicted=len(evicted),
        summarized=summary is not None,
        tokens_before=before,
        tokens_after=after,
    )


def transcript_line(counter: TokenCounter, message: Message) -> str:
    note = "shortened for the summary"
    if message.role == "tool":
        text = f"tool result ({message.name}): {message.content}"
    elif message.role == "assistant":
        calls = "; ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
        parts = [
            f"thought: {message.content}" if message.content and calls else message.content,
            f"calls: {calls}" if calls else None,
        ]
        text = "assistant " + " | ".join(p for p in parts if p)
    else:
        text = f"{message.role}: {message.content}"
    when = message.created_at.strftime("%Y-%m-%d %H:%M")
    return f"[{when}] " + clip_text(counter, text, TRANSCRIPT_LINE_TOKENS, note)


def summarize_messages(agent: Agent, previous: str, evicted: Sequence[Message]) -> str | None:
    """Fold `evicted` into `previous` with the model, in chunks that fit the
    window. None if the model fails or returns nothing."""
    counter, budget = agent.token_counter, budget_for(agent)
    words = max(40, int(budget.summary_tokens * 0.7))
    prompt = load_prompt("summarize").replace("{max_words}", str(words))
    room = budget.compact_at - counter.count_text(prompt) - 2 * budget.summary_tokens - 64
    lines = [transcript_line(counter, m) for m in evicted]
    if room < 2 * TRANSCRIPT_LINE_TOKENS:
        return None
    summary = previous
    chunk: list[str] = []
    used = 0
    for line in [*lines, None]:
        size = counter.count_text(line) if line is not None else 0
        if chunk and (line is None or used + size > room):
            summary = _summarize_chunk(agent, prompt, summary, chunk)
            if summary is None:
                return None
            chunk, used = [], 0
        if line is not None:
            chunk.append(line)
            used += size
    return summary


def _summarize_chunk(agent: Agent, prompt: str, previous: str, lines: list[str]) -> str | None:
    request = [
        {"role": "system", "content": prompt},
        {
            "role": "user",
            "content": (
                f"<previous_summary>\n{previous}\n</previous_summary>\n\n"
                "<messages_leaving_the_window>\n"
                + "\n".join(lines)
                + "\n</messages_leaving_the_window>"
            ),
        },
    ]
    try:
        completion = agent.llm.complete(agent.state.llm, request, [])
    except LLMError as exc:
        log.warning("agent %s: summarizing failed, dropping instead: %s", agent.state.name, exc)
        return None
    text = (completion.content or "").strip()
    if not text:
        return None
    budget = budget_for(agent)
    return clip_text(agent.token_counter, text, budget.summary_tokens, "summary cut to fit")


def _budget_error(agent: Agent, compiled: CompiledContext, budget: Budget) -> ContextBudgetError:
    counter = agent.token_counter
    sizes = [f"{name} {counter.count_text(text)}" for name, text in compiled.sections]
    sizes.append(f"tool schemas {agent.tool_tokens()}")
    name = agent.state.name
    return ContextBudgetError(
        f"agent {name!r}: the system message and core memory alone need "
        f"{compiled.fixed_tokens} tokens, over the {budget.compact_at} usable of a "
        f"{budget.window}-token window ({', '.join(sizes)}). To recover, shorten the "
        f"largest block (memgpt-lite blocks {name} LABEL --edit, or agent.set_block), "
        f"keeping its detail in archival memory (memgpt-lite archival {name} insert), "
        "or give the agent the larger window its model has (AgentSettings.context_window)."
    )


def add_pressure_alert(agent: Agent, compiled: CompiledContext, step_id: str) -> None:
    percent = round(100 * compiled.total_tokens / budget_for(agent).window)
    alert = Message(
        agent_id=agent.state.id,
        role="system",
        step_id=step_id,
        content=load_prompt("memory_pressure").replace("{percent}", str(percent)),
    )

    def warned(state: AgentState) -> None:
        state.pressure_warned = True

    with agent.store.transaction():
        agent.store.add_messages([alert])
        # The flag alone: the rest of agent.state may be older than the row.
        agent.state = agent.store.update_agent(agent.state.id, warned)


def fit_request(
    agent: Agent, result: StepResult, step_id: str, pressure: int = 0
) -> CompiledContext:
    """The next request, made to fit the budget: warn, compact, then fall back
    to dropping exchanges and clipping harder. Raises ContextBudgetError when
    even the system message and core memory do not fit, and ContextFullError
    when the step in progress, which is never evicted, does not."""
    budget = budget_for(agent)
    compiled = compile_context(agent, step_id=step_id)
    if compiled.fixed_tokens > budget.compact_at:
        raise _budget_error(agent, compiled, budget)
    if (
        budget.warning_at < compiled.total_tokens <= budget.compact_at
        and not agent.state.pressure_warned
        and pressure == 0
    ):
        add_pressure_alert(agent, compiled, step_id)
        result.memory_warnings += 1
        compiled = compile_context(agent, step_id=step_id)
    clip = None
    for attempt in range(MAX_FIT_ATTEMPTS):
        if compiled.total_tokens <= budget.compact_at and not pressure:
            return compiled
        report = compact(
            agent, compiled, pressure=pressure + attempt, summarize=attempt == 0, step_id=step_id
        )
        result.compactions += report.evicted > 0
        if report.evicted == 0:
            # Only the last exchange is left: clip its messages harder.
            clip = max(16, (clip or (budget.compact_at - compiled.fixed_tokens) // 2) // 2)
        compiled = compile_context(agent, clip, step_id)
        pressure = 0 if compiled.total_tokens <= budget.compact_at else pressure
    if compiled.total_tokens <= budget.compact_at:
        return compiled
    if compiled.fixed_tokens > budget.compact_at:  # the summary grew meanwhile
        raise _budget_error(agent, compiled, budget)
    raise ContextFullError(
        f"agent {agent.state.name!r}: the messages of the step in progress take "
        f"{sum(compiled.message_tokens)} tokens, more than the "
        f"{budget.compact_at - compiled.fixed_tokens} that its {budget.window}-token window "
        "leaves beside the system message"
    )


def call_model(agent: Agent, result: StepResult, step_id: str) -> Completion:
    """Call the model with a request that fits. An empty answer (no text and no
    tool call, which local servers sometimes send) is asked for again once,
    with a reminder to call a tool; a second one is an LLMError. Neither is
    stored: an empty assistant message would make every later request invalid."""
    reminder = None
    for _ in range(2):
        completion = _call_fitting(agent, result, step_id, reminder)
        if not completion.is_empty:
            return completion
        result.usage.add(completion.usage)
        reminder = {"role": "system", "content": load_prompt("empty_reply")}
    raise LLMError(
        f"the model endpoint {agent.llm.base_url} answered twice with an empty message "
        "(no text and no tool call); nothing of it was stored"
    )


def _call_fitting(
    agent: Agent, result: StepResult, step_id: str, reminder: dict[str, str] | None
) -> Completion:
    """One completion for a request that fits, with `reminder` appended. If the
    endpoint still says the request is too long (its count or window differs
    from ours), compact harder and try again."""
    pressure = 0
    while True:
        compiled = fit_request(agent, result, step_id, pressure)
        result.prompt_tokens_estimate = compiled.total_tokens
        messages = compiled.request_messages + ([reminder] if reminder else [])
        try:
            return agent.llm.complete(agent.state.llm, messages, compiled.tools)
        except ContextWindowExceeded as exc:
            pressure += 1
            if pressure > MAX_ENDPOINT_RETRIES:
                raise
            _learn_window(agent, str(exc))


def _learn_window(agent: Agent, error_text: str) -> None:
    """Adopt the window the endpoint states, when it is smaller than ours."""
    match = _WINDOW_IN_ERROR.search(error_text)
    stated = int(match.group(1)) if match else 0
    if MIN_LEARNED_WINDOW <= stated < budget_for(agent).window:

        def learn(state: AgentState) -> None:
            state.settings.context_window = stated

        agent.state = agent.store.update_agent(agent.state.id, learn)


class ContextOverview(BaseModel):
    """Where the tokens of the next request go."""

    model: str
    context_window: int
    reply_reserve: int
    total_tokens: int
    sections: dict[str, int]
    messages_in_context: int
    messages_in_storage: int


def overview(agent: Agent) -> ContextOverview:
    compiled, budget, counter = compile_context(agent), budget_for(agent), agent.token_counter
    sections = {name: counter.count_text(text) for name, text in compiled.sections}
    sections["messages"] = sum(compiled.message_tokens)
    sections["tool schemas"] = agent.tool_tokens()
    return ContextOverview(
        model=agent.state.llm.model,
        context_window=budget.window,
        reply_reserve=budget.reserve,
        total_tokens=compiled.total_tokens,
        sections=sections,
        messages_in_context=len(compiled.messages),
        messages_in_storage=compiled.stored_messages,
    )
