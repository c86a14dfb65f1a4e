"""Compaction: the oldest messages leave the window, folded into the summary.

They stay in recall storage and searchable. The model writes the summary,
recursively: the previous summary and the evicted messages, in chunks that
fit the window, become the new one. When the model fails or says nothing, the
messages are dropped without a summary (the deterministic fallback). An
assistant message never leaves without its tool results, and the messages of
the step in progress never leave at all.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pydantic import BaseModel

from memgpt_lite.errors import LLMError
from memgpt_lite.llm.model import Completion, complete
from memgpt_lite.llm.tokens import TokenCounter
from memgpt_lite.memory.core.blocks import load_prompt
from memgpt_lite.memory.recall.clipping import clip_text
from memgpt_lite.memory.recall.window import CompiledContext, budget_for, compile_context
from memgpt_lite.models import AgentState, Message, UsageRecord, new_id
from memgpt_lite.tools.deps import AgentDeps

log = logging.getLogger(__name__)

TRANSCRIPT_LINE_TOKENS = 300


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
    agent: AgentDeps, compiled: CompiledContext, pressure: int, force: bool, step_id: str | None
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


async def compact(
    agent: AgentDeps,
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
    summary = None
    if summarize:
        step_id = step_id or new_id("compaction")  # its tokens are stored under it
        summary = await summarize_messages(agent, agent.state.summary, evicted, step_id)
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

    agent.state = agent.store.update_agent(agent.state.id, evict, agent.state.conversation_id)
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


async def summarize_messages(
    agent: AgentDeps, previous: str, evicted: Sequence[Message], step_id: str
) -> str | None:
    """Fold `evicted` into `previous` with the model, in chunks that fit the
    window. None if the model fails or returns nothing. The tokens of each
    summary request are stored as usage of step `step_id`."""
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
            summary = await _summarize_chunk(agent, prompt, summary, chunk, step_id)
            if summary is None:
                return None
            chunk, used = [], 0
        if line is not None:
            chunk.append(line)
            used += size
    return summary


async def _summarize_chunk(
    agent: AgentDeps, prompt: str, previous: str, lines: list[str], step_id: str
) -> str | None:
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
        # Not streamed: nobody watches a summary being written.
        config = agent.state.llm.model_copy(update={"stream": False})
        completion = await complete(agent.llm, config, request, [])
    except LLMError as exc:
        log.warning("agent %s: summarizing failed, dropping instead: %s", agent.state.name, exc)
        return None
    agent.store.add_usage(_summary_usage(agent, step_id, request, completion))
    text = (completion.content or "").strip()
    if not text:
        return None
    budget = budget_for(agent)
    return clip_text(agent.token_counter, text, budget.summary_tokens, "summary cut to fit")


def _summary_usage(
    agent: AgentDeps, step_id: str, request: list[dict[str, str]], completion: Completion
) -> UsageRecord:
    """What a summary request cost: as the endpoint reported it, or our own
    count of the request and the summary (marked estimated) if it did not."""
    usage = completion.usage
    record = UsageRecord(
        agent_id=agent.state.id, step_id=step_id, model=agent.state.llm.model, **usage.model_dump()
    )
    if usage.prompt_tokens == 0 and usage.total_tokens == 0:
        counter = agent.token_counter
        record.estimated = True
        record.prompt_tokens = counter.count_request(request)
        record.completion_tokens = counter.count_text(completion.content or "")
        record.total_tokens = record.prompt_tokens + record.completion_tokens
    return record
