"""Reflection ("sleep time"): a separate model call that reads the messages
no reflection has read yet and keeps long-term memory current: new facts
become dated archival passages, passages they make out of date are superseded,
duplicates merged, and core memory blocks (the human block above all)
rewritten where the user's circumstances changed.

It is one request with one tool, `record_reflection`, whose arguments are
validated and then applied here: no second loop, and nothing a model could
get wrong leaves memory half-changed or stops the agent. It runs on demand
(`agent.runner.reflect()`, `memgpt-lite reflect NAME`) or, with
`AgentSettings.reflect_every`, in a background thread once that many turns
went unread, so it never delays the user's turn. It does not hold the step
lock while the model thinks: it reads, asks, then writes as any other writer
would; a block that changed meanwhile is left as it is. What it has read is
`AgentState.reflected_seq`, moved forward only once the changes are stored,
so a reflection that failed or was cut off is simply made again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime

from pydantic import BaseModel, Field

from memgpt_lite.errors import ConfigError, LLMError, MemGPTError, ModelRetry, NotFoundError
from memgpt_lite.llm import runner
from memgpt_lite.llm.model import Completion, complete
from memgpt_lite.loop.background import OnePerKey
from memgpt_lite.loop.compaction import transcript_line
from memgpt_lite.memory.archival.passages import ArchivalMemory
from memgpt_lite.memory.core.block_history import REFLECTION
from memgpt_lite.memory.core.blocks import load_prompt, set_block_value
from memgpt_lite.memory.recall.window import core_memory_overflow
from memgpt_lite.models import AgentState, Block, Message, UsageRecord, new_id, utcnow
from memgpt_lite.text import JSONProblem, parse_arguments
from memgpt_lite.tools.deps import AgentDeps

log = logging.getLogger(__name__)

RECORD_TOOL = "record_reflection"
MAX_MESSAGES = 80  # read by one model call; more are read by the next calls
MAX_CALLS = 5  # model calls of one reflection
RELATED_PASSAGES = 8  # stored passages shown, the closest to the new messages
FACT_TAG = "reflection"


class NewFact(BaseModel):
    """A durable fact from the messages, as one sentence that stands alone."""

    text: str = Field(min_length=1, description="One sentence, with names and absolute dates.")
    replaces: list[str] = Field(
        default_factory=list, description="Ids of stored passages this fact makes out of date."
    )


class Duplicates(BaseModel):
    """Stored passages that say the same thing."""

    keep: str = Field(description="The id of the passage to keep.")
    drop: list[str] = Field(description="The ids of the passages that repeat it.")


class BlockRewrite(BaseModel):
    """The whole new text of a core memory block."""

    label: str
    value: str


class Reflection(BaseModel):
    """The arguments of `record_reflection`: what the model wants recorded."""

    facts: list[NewFact] = Field(default_factory=list)
    duplicates: list[Duplicates] = Field(default_factory=list)
    blocks: list[BlockRewrite] = Field(default_factory=list)


class ReflectionReport(BaseModel):
    """What a reflection read and changed, and what it left alone and why."""

    messages_read: int = 0
    facts_added: int = 0
    passages_superseded: int = 0
    blocks_changed: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def describe(self) -> str:
        """One line for people."""
        if self.messages_read == 0:
            return "Nothing to reflect on: every message was read by an earlier reflection."
        changed = ", ".join(self.blocks_changed) or "none"
        return (
            f"Read {self.messages_read} messages: {self.facts_added} facts saved, "
            f"{self.passages_superseded} passages superseded, blocks changed: {changed}."
        )


def _schema() -> dict[str, object]:
    parameters = Reflection.model_json_schema()
    return {
        "type": "function",
        "function": {
            "name": RECORD_TOOL,
            "description": "Record what the newest messages teach about the user and the world.",
            "parameters": parameters,
        },
    }


def _unread(agent: AgentDeps) -> list[Message]:
    """The oldest messages no reflection has read, at most MAX_MESSAGES, read
    a page at a time (an agent's first reflection may follow years of
    history). A waiting or unfinished answer is no part of it yet: tool
    messages are read with the answer they belong to."""
    unread: list[Message] = []
    start = agent.state.reflected_seq + 1
    while len(unread) < MAX_MESSAGES:
        page = agent.store.first_messages(agent.state.id, start, MAX_MESSAGES)
        unread += [m for m in page if m.role in ("user", "assistant", "tool")]
        if len(page) < MAX_MESSAGES:
            break
        start = (page[-1].seq or 0) + 1
    return unread[:MAX_MESSAGES]


def _request(agent: AgentDeps, messages: Sequence[Message], related: str) -> list[dict[str, str]]:
    counter = agent.token_counter
    blocks = "\n".join(
        f'<block label="{b.label}" limit="{b.limit}" read_only="{str(b.read_only).lower()}">\n'
        f"{b.value}\n</block>"
        for b in agent.store.get_blocks(agent.state.id)
    )
    lines = "\n".join(transcript_line(counter, m) for m in messages)
    today = utcnow().strftime("%Y-%m-%d")
    return [
        {"role": "system", "content": load_prompt("reflect")},
        {
            "role": "user",
            "content": (
                f"Today is {today}.\n\n<core_memory>\n{blocks}\n</core_memory>\n\n"
                f"<stored_passages>\n{related}\n</stored_passages>\n\n"
                f"<new_messages>\n{lines}\n</new_messages>"
            ),
        },
    ]


def _related(agent: AgentDeps, messages: Sequence[Message]) -> str:
    """The current stored passages closest to what the user said, one per line."""
    said = " ".join(m.content or "" for m in messages if m.role == "user")
    if not said.strip():
        return ""
    memory = ArchivalMemory(agent)
    found, _ = memory.search(said[:2000], RELATED_PASSAGES, include_superseded=False)
    return "\n".join(f"[{p.id}] ({p.created_at:%Y-%m-%d}) {p.text}" for p in found)


def _parse(completion: Completion) -> Reflection:
    """The model's `record_reflection` arguments, validated."""
    calls = [c for c in completion.tool_calls if c.name == RECORD_TOOL]
    if not calls:
        raise LLMError(f"the model did not call {RECORD_TOOL}; nothing was recorded")
    try:
        return Reflection.model_validate(parse_arguments(calls[0].arguments))
    except (JSONProblem, ValueError) as exc:
        problem = str(exc).splitlines()[0]
        raise LLMError(f"the model's {RECORD_TOOL} arguments were unusable: {problem}") from None


def _store_fact(agent: AgentDeps, fact: NewFact, when: datetime, report: ReflectionReport) -> None:
    """Store a fact, superseding the passages it makes out of date; one that
    names an unknown passage, or cannot be stored, is noted instead."""
    try:
        stored = ArchivalMemory(agent).insert(
            fact.text, tags=[FACT_TAG], created_at=when, replaces=fact.replaces
        )
    except (NotFoundError, ConfigError) as exc:
        report.notes.append(f"fact {fact.text[:40]!r}: {exc}; left out")
        return
    report.facts_added += len(stored.stored)
    report.passages_superseded += len(stored.replaced)


def _merge(agent: AgentDeps, group: Duplicates, report: ReflectionReport) -> None:
    """Mark the passages that repeat `group.keep` superseded by it."""
    drop = [i for i in dict.fromkeys(group.drop) if i != group.keep]
    if not drop:
        return
    try:
        agent.store.supersede_passages(agent.state.id, drop, group.keep, utcnow())
    except (NotFoundError, ConfigError) as exc:
        report.notes.append(f"duplicates of {group.keep}: {exc}; left as they are")
        return
    report.passages_superseded += len(drop)


def _rewrite_block(
    agent: AgentDeps, blocks: dict[str, Block], change: BlockRewrite, report: ReflectionReport
) -> None:
    """Give a block its new value, unless it is unknown, read-only, over its
    limit, or changed since the model was shown it (noted instead)."""
    shown = blocks.get(change.label)
    if shown is None:
        report.notes.append(f"block {change.label!r}: no such block; left out")
        return
    if change.value == shown.value:
        return
    with agent.store.transaction():
        current = next(
            (b for b in agent.store.get_blocks(agent.state.id) if b.id == shown.id), None
        )
        if current is None or current.value != shown.value:
            report.notes.append(f"block {change.label!r}: changed meanwhile; left as it is")
            return
        try:
            value = set_block_value(current, change.value)
        except ModelRetry as exc:
            report.notes.append(f"block {change.label!r}: {str(exc).split('. ')[0]}; left out")
            return
        problem = core_memory_overflow(agent, current, value)
        if problem:
            report.notes.append(f"block {change.label!r}: {problem}; left out")
            return
        current.value = value
        agent.store.save_block(current, author=REFLECTION)
    report.blocks_changed.append(change.label)


def _apply(agent: AgentDeps, reflection: Reflection, when: datetime) -> ReflectionReport:
    report = ReflectionReport()
    for fact in reflection.facts:
        _store_fact(agent, fact, when, report)
    for group in reflection.duplicates:
        _merge(agent, group, report)
    blocks = {b.label: b for b in agent.store.get_blocks(agent.state.id)}
    for change in reflection.blocks:
        _rewrite_block(agent, blocks, change, report)
    return report


def _mark_read(agent: AgentDeps, seq: int) -> None:
    def advance(state: AgentState) -> None:
        state.reflected_seq = max(state.reflected_seq, seq)

    agent.state = agent.store.update_agent(agent.state.id, advance)


def _usage(agent: AgentDeps, step_id: str, completion: Completion) -> UsageRecord:
    return UsageRecord(
        agent_id=agent.state.id,
        step_id=step_id,
        model=agent.state.llm.model,
        **completion.usage.model_dump(),
    )


async def _reflect_once(agent: AgentDeps, messages: Sequence[Message]) -> ReflectionReport:
    """One model call over `messages`, and its changes applied."""
    request = _request(agent, messages, _related(agent, messages))
    config = agent.state.llm.model_copy(update={"stream": False})  # nobody watches it
    completion = await complete(agent.llm, config, request, [_schema()])
    agent.store.add_usage(_usage(agent, new_id("reflection"), completion))
    report = _apply(agent, _parse(completion), messages[-1].created_at)
    _mark_read(agent, messages[-1].seq or 0)
    report.messages_read = len(messages)
    return report


async def reflect(agent: AgentDeps) -> ReflectionReport:
    """Read the messages no reflection has read yet (in model calls of at most
    MAX_MESSAGES each, at most MAX_CALLS) and record what they teach. Raises
    LLMError when the model fails or answers unusably; what earlier calls of
    this reflection stored stays, and their messages count as read."""
    total = ReflectionReport()
    for _ in range(MAX_CALLS):
        agent.state = agent.store.get_agent(agent.state.id)
        messages = _unread(agent)
        if not messages:
            break
        report = await _reflect_once(agent, messages)
        total.messages_read += report.messages_read
        total.facts_added += report.facts_added
        total.passages_superseded += report.passages_superseded
        total.blocks_changed += [b for b in report.blocks_changed if b not in total.blocks_changed]
        total.notes += report.notes
        if len(messages) < MAX_MESSAGES:
            break
    return total


def due(agent: AgentDeps) -> bool:
    """Whether `reflect_every` turns went by that no reflection has read."""
    every = agent.state.settings.reflect_every
    if every is None:
        return False
    # The newest messages are enough to tell: a turn is at least two of them.
    newest = agent.store.last_messages(agent.state.id, 16 * every)
    turns = [m for m in newest if m.role == "user" and (m.seq or 0) > agent.state.reflected_seq]
    return len(turns) >= every


_background = OnePerKey("reflect")


def start_background(agent_id: str, make_agent: Callable[[], AgentDeps]) -> threading.Thread | None:
    """Reflect in a thread of its own, on an agent object of its own (from
    `make_agent`), unless a reflection of this agent already runs in this
    process. A failure is logged, not raised: nobody waits for it."""

    def work() -> None:
        try:
            agent = make_agent()
            report = runner.run(reflect(agent))
            log.info("agent %s reflected: %s", agent.state.name, report.describe())
        except MemGPTError as exc:
            log.warning("agent %s: reflection failed: %s", agent_id, exc)

    return _background.start(agent_id, work)


def wait_for_background(agent_id: str, timeout: float | None = None) -> bool:
    """Wait for this process's background reflection of the agent, if one
    runs; False if it still runs after `timeout` seconds."""
    return _background.wait(agent_id, timeout)
