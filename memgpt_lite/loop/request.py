"""One model call of a step: a request that fits, streamed back as events.

Before each call the whole request is counted against the agent's window:

- past the warning threshold (75%), a one-time memory-pressure alert asks the
  model to save what matters; it is re-armed by the next compaction;
- past the compaction threshold (90%), or when the endpoint answers
  `context_length_exceeded`, the oldest messages are compacted (compaction.py);
  a server that runs a smaller window than ours, as its refusal or the usage
  of an answer shows, has that window learned (window_learning.py).

What the model asked for comes first: the messages of the step in progress
(the user's message, the model's calls and the results it asked for) are
never evicted, and are clipped only once compaction has evicted all that is
older, then to the room left, the latest results whole the longest.

Fallbacks always terminate: a failed summary falls back to dropping whole
exchanges, the step in progress is clipped to the room there is, and when
the system message and core memory alone cannot fit, `ContextBudgetError`
names each section.

While the model answers, its text is yielded as `ThoughtDelta`s and the text
of a `send_message` call as `MessageDelta`s, as they arrive.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from memgpt_lite.errors import ContextFullError, LLMError
from memgpt_lite.events import (
    Compacted,
    MemoryWarned,
    MessageDelta,
    RequestSent,
    StepEvent,
    ThoughtDelta,
)
from memgpt_lite.llm.model import Completion, ContextWindowExceeded, TextDelta, ToolCallDelta
from memgpt_lite.loop.compaction import compact
from memgpt_lite.loop.message_stream import MessageStream
from memgpt_lite.loop.steplock import StepLock
from memgpt_lite.loop.stopping import StopRequest
from memgpt_lite.loop.window_learning import learn_from_refusal, learn_from_usage
from memgpt_lite.memory.core.blocks import load_prompt, memory_prompt
from memgpt_lite.memory.recall.window import (
    NO_MORE_TOOLS,
    CompiledContext,
    OfferedTools,
    budget_error,
    budget_for,
    compile_context,
    step_start,
)
from memgpt_lite.models import SEND_MESSAGE, AgentState, Message, StepResult
from memgpt_lite.storage.protocol import MainContext
from memgpt_lite.tools.deps import AgentDeps
from memgpt_lite.tools.rules import RuleBook
from memgpt_lite.tools.schema import Tool

MAX_FIT_ATTEMPTS = 6
MAX_ENDPOINT_RETRIES = 3


@dataclass
class StepRun:
    """A step in progress: whose, which, what it did so far, and the events
    (compactions, warnings) waiting to be reported."""

    agent: AgentDeps
    step_id: str
    tools: dict[str, Tool] = field(default_factory=dict)
    tools_in_threads: bool = True
    lock: StepLock | None = None
    owns_lock: bool = False  # taken for this step (not a caller's): its last write may release it
    done: bool = False  # the model answered without asking to go on
    result: StepResult = field(default_factory=StepResult)
    pending: list[StepEvent] = field(default_factory=list)
    rules: RuleBook = field(default_factory=RuleBook)  # the tool rules, as the step goes
    # What the first request is built from, read as the user's message was
    # stored (in one round trip where the store can: `Storage.main_context`).
    first_read: MainContext | None = None
    # The tools the step's client runs, offered beside the agent's (also
    # in `tools`, for the tool rules): loop/client_tools.py.
    client_tools: OfferedTools = NO_MORE_TOOLS
    stop: StopRequest | None = None  # asked from outside to stop (loop/stopping.py)
    manages_group: bool = False  # the agent is a group's main agent (`StepStart`)

    def stop_requested(self) -> bool:
        """Whether the step was asked to stop (checked at its safe points)."""
        return self.stop is not None and self.stop.requested()

    def renew_lock(self) -> None:
        """Keep the step lock's lease through a long step: before each model
        call and each tool (a no-op without the lock)."""
        if self.lock is not None:
            self.lock.renew()

    def take_pending(self) -> list[StepEvent]:
        events, self.pending = self.pending, []
        return events


def add_pressure_alert(run: StepRun, compiled: CompiledContext) -> None:
    agent = run.agent
    percent = round(100 * compiled.total_tokens / budget_for(agent).window)
    alert = Message(
        agent_id=agent.state.id,
        conversation_id=agent.state.conversation_id,
        role="system",
        step_id=run.step_id,
        content=memory_prompt("memory_pressure", agent.state.settings.tool_set).replace(
            "{percent}", str(percent)
        ),
    )

    def warned(state: AgentState) -> None:
        state.pressure_warned = True

    with agent.store.transaction():
        agent.store.add_messages([alert])
        # The flag alone: the rest of agent.state may be older than the row.
        agent.state = agent.store.update_agent(agent.state.id, warned, agent.state.conversation_id)
    run.result.memory_warnings += 1
    run.pending.append(MemoryWarned(step_id=run.step_id, prompt_tokens=compiled.total_tokens))


async def fit_request(run: StepRun, pressure: int = 0) -> CompiledContext:
    """The next request, made to fit the budget: warn, compact, then fall back
    to dropping exchanges and, once only the step in progress is left,
    clipping its messages to the room there is. Raises ContextBudgetError when
    even the system message and core memory do not fit, and ContextFullError
    when the step in progress, which is never evicted, does not."""
    agent, step_id = run.agent, run.step_id
    budget = budget_for(agent)
    read, run.first_read = run.first_read, None
    more = run.client_tools
    compiled = compile_context(agent, step_id=step_id, read=read, more_tools=more)
    if compiled.fixed_tokens > budget.compact_at:
        raise budget_error(agent, compiled, budget)
    if (
        budget.warning_at < compiled.total_tokens <= budget.compact_at
        and not agent.state.pressure_warned
        and pressure == 0
    ):
        add_pressure_alert(run, compiled)
        compiled = compile_context(agent, step_id=step_id, more_tools=more)
    for attempt in range(MAX_FIT_ATTEMPTS):
        if compiled.total_tokens <= budget.compact_at and not pressure:
            return compiled
        report = await compact(
            agent, compiled, pressure=pressure + attempt, summarize=attempt == 0, step_id=step_id
        )
        if not report.evicted:
            break  # only the step in progress is left
        run.result.compactions += 1
        run.pending.append(Compacted(step_id=step_id, **report.model_dump()))
        compiled = compile_context(agent, step_id=step_id, more_tools=more)
        pressure = 0 if compiled.total_tokens <= budget.compact_at else pressure
    if compiled.total_tokens > budget.compact_at or pressure:
        compiled = _clip_step(run, compiled, budget.compact_at, pressure)
    if compiled.total_tokens <= budget.compact_at:
        return compiled
    if compiled.fixed_tokens > budget.compact_at:  # the summary grew meanwhile
        raise budget_error(agent, compiled, budget)
    raise ContextFullError(
        f"agent {agent.state.name!r}: the messages of the step in progress take "
        f"{sum(compiled.message_tokens)} tokens, more than the "
        f"{budget.compact_at - compiled.fixed_tokens} that its {budget.window}-token window "
        "leaves beside the system message"
    )


def _clip_step(
    run: StepRun, compiled: CompiledContext, usable: int, pressure: int
) -> CompiledContext:
    """The request with the messages of the step in progress clipped to the
    room left beside everything else (halved for each time the endpoint
    refused it: its count differs from ours), once nothing older can leave."""
    step_id = run.step_id
    step_tokens = sum(compiled.message_tokens[step_start(compiled.messages, step_id) :])
    room = (usable - compiled.total_tokens + step_tokens) >> pressure
    return compile_context(
        run.agent, step_id=step_id, step_room=max(0, room), more_tools=run.client_tools
    )


async def call_model(run: StepRun) -> AsyncIterator[StepEvent | Completion]:
    """Call the model with a request that fits; yield the events of the call
    and, last, the model's `Completion`. An empty answer (no text and no tool
    call, which local servers sometimes send) is asked for again once, with a
    reminder to call a tool; a second one is an LLMError. Neither is stored:
    an empty assistant message would make every later request invalid."""
    reminder = None
    for _ in range(2):
        completion = None
        async for item in _call_fitting(run, reminder):
            if isinstance(item, Completion):
                completion = item
            else:
                yield item
        if completion is None:
            raise LLMError(f"{run.agent.llm.name} ended its answer without a completion")
        if not completion.is_empty:
            yield completion
            return
        run.result.usage.add(completion.usage)
        reminder = {"role": "system", "content": load_prompt("empty_reply")}
    raise LLMError(
        f"{run.agent.llm.name} answered twice with an empty message "
        "(no text and no tool call); nothing of it was stored"
    )


async def _call_fitting(
    run: StepRun, reminder: dict[str, str] | None
) -> AsyncIterator[StepEvent | Completion]:
    """One answer to a request that fits, with `reminder` appended. If the
    endpoint still says the request is too long (its count or window differs
    from ours), compact harder and try again."""
    agent, pressure = run.agent, 0
    while True:
        compiled = await fit_request(run, pressure)
        for event in run.take_pending():
            yield event
        run.result.prompt_tokens_estimate = compiled.total_tokens
        messages = compiled.request_messages + ([reminder] if reminder else [])
        yield RequestSent(
            step_id=run.step_id,
            prompt_tokens=compiled.total_tokens,
            messages=len(messages),
            stored=[message.id for message in run.result.messages],
        )
        try:
            async for item in _stream_answer(run, messages, run.rules.offered(compiled.tools)):
                if isinstance(item, Completion):  # a truncated prompt (Ollama) shows here
                    sent = compiled.total_tokens
                    learned = await learn_from_usage(agent, run.step_id, sent, item)
                    if learned is not None:
                        yield learned
                yield item
            return
        except ContextWindowExceeded as exc:
            learned = await learn_from_refusal(agent, run.step_id, exc)
            if learned is not None:  # the smaller window alone decides what to compact
                yield learned
                continue
            pressure += 1
            if pressure > MAX_ENDPOINT_RETRIES:
                raise


async def _stream_answer(
    run: StepRun, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> AsyncIterator[StepEvent | Completion]:
    """The model's answer: its deltas as events, then its Completion."""
    agent, step_id = run.agent, run.step_id
    sent_messages: dict[int, MessageStream] = {}
    async for chunk in agent.llm.stream(agent.state.llm, messages, tools):
        if isinstance(chunk, TextDelta):
            if chunk.text:
                yield ThoughtDelta(step_id=step_id, text=chunk.text)
        elif isinstance(chunk, ToolCallDelta):
            if chunk.name == SEND_MESSAGE:
                sent_messages[chunk.index] = MessageStream()
            parser = sent_messages.get(chunk.index)
            text = parser.feed(chunk.arguments) if parser is not None else ""
            if text:
                yield MessageDelta(step_id=step_id, text=text, index=chunk.index)
        else:
            yield chunk
