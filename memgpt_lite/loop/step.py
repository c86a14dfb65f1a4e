"""The step core: one async generator runs a step and yields its events.

`agent.step()`, `agent.astep()`, `agent.stream()` and `agent.astream()` all
drive `run_step`, through the agent's runner (agent/runner.py), which is the
`StepHost` here; there is no other loop. A step stores the user's message,
then calls the model, runs the tools it asked for, and goes on while a tool
asked for a heartbeat or failed, up to the step limit. An answer with a call
that needs the user's approval ends the step instead; the step that carries
the user's answer goes on from there (loop/approvals.py).

The invariant of the protocol lives in `_run_calls` alone: every tool call of
a model answer gets exactly one tool result, stored in the same transaction as
the answer (or, for an answer that waited for approval, as the user's
answer), whatever a tool did. A step stopped at any point (an error,
Ctrl-C, a client that went away) leaves the stored agent consistent: answers
are stored whole or not at all, and a user message the model never answered
is left out of later requests (see window.unanswered).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Protocol

from memgpt_lite.errors import ApprovalError, ContextFullError, MemGPTError
from memgpt_lite.events import (
    ApprovalRequested,
    ReplyDelivered,
    StepEvent,
    StepFailed,
    StepFinished,
    StepStarted,
    ToolCallStarted,
    ToolReturned,
    UsageReported,
)
from memgpt_lite.llm.model import Completion
from memgpt_lite.loop import approvals
from memgpt_lite.loop.client_tools import client_outcome, client_tools, mark_client_calls
from memgpt_lite.loop.request import StepRun, call_model
from memgpt_lite.loop.steplock import StepLock
from memgpt_lite.loop.stopping import NOT_RUN, StopRequest
from memgpt_lite.models import (
    AgentState,
    Approval,
    Message,
    StepInput,
    ToolCall,
    ToolResult,
    Usage,
    UsageRecord,
    new_id,
)
from memgpt_lite.step_input import Answer, GroupTurn, Said, StepWithClientTools, ToolReturn
from memgpt_lite.tools.deps import AgentDeps
from memgpt_lite.tools.rules import RuleBook
from memgpt_lite.tools.schema import Tool, ToolContext, ToolOutcome


class StepHost(AgentDeps, Protocol):
    """What the step core needs of an agent, beyond its dependencies."""

    tools: dict[str, Tool]

    def new_step_lock(self, starts_step: bool = False) -> StepLock:
        """A step lock for this agent, not yet taken; a step's (`starts_step`)
        reads what the step starts from as it is taken (`StepLock.start`)."""
        ...

    def after_step(self, manages_group: bool) -> None:
        """Called once a step finished and released its lock (a reflection
        may start in the background then, and, for the main agent of a
        group, `manages_group`, a pass of its sleep-time agents)."""
        ...


async def run_step(
    agent: StepHost,
    message: StepInput,
    *,
    held_lock: StepLock | None = None,
    tools_in_threads: bool = True,
    stop: StopRequest | None = None,
) -> AsyncIterator[StepEvent]:
    """Run one step and yield its events, ending with `StepFinished` or, for
    any MemGPTError, `StepFailed`. `message` is the user's message (or a
    group chat's messages, `GroupTurn`), or the user's answer (`Approval`s)
    to the tool calls waiting for approval.
    Given with client-side tools (`StepWithClientTools`), the model is
    offered those too, and a call of one waits for the client's result
    (loop/client_tools.py). Waits for the agent's step lock unless the
    caller already holds it (`held_lock`). Synchronous tools run in a worker thread when
    `tools_in_threads`, so a slow one does not stall the event loop (and the
    other agents on it). `stop`, once requested, stops the step at its next
    safe point (loop/stopping.py)."""
    run = StepRun(agent, new_id("step"), dict(agent.tools), tools_in_threads, stop=stop)
    lock: AbstractAsyncContextManager[StepLock | None]
    lock = nullcontext(held_lock) if held_lock is not None else agent.new_step_lock(True)
    try:
        async with lock as taken:
            run.lock, run.owns_lock = taken, held_lock is None
            async for event in _steps(run, message):
                yield event
    except MemGPTError as exc:
        yield StepFailed(
            step_id=run.step_id,
            message=str(exc),
            error_type=type(exc).__name__,
            result=run.result,
            error=exc,
        )
        return
    yield StepFinished(step_id=run.step_id, result=run.result)
    # Reached when the caller reads on to the end, as the drivers do.
    agent.after_step(run.manages_group)


async def _steps(run: StepRun, message: StepInput) -> AsyncIterator[StepEvent]:
    agent = run.agent
    if isinstance(message, StepWithClientTools):
        client = client_tools(message.client_tools, run.tools, agent.token_counter)
        run.tools.update(client.tools)
        run.client_tools, message = client.offered, message.message
    # Another process may have changed the agent, or answered or stored a
    # message: read as the lock was taken, or now under a caller's lock.
    start = run.lock.start if run.owns_lock and run.lock is not None else None
    begun = start or agent.store.agent_and_newest_message(
        agent.state.id, agent.state.conversation_id
    )
    agent.state, newest, run.manages_group = begun
    run.rules = RuleBook(agent.state.settings.tool_rules)
    if run.stop_requested():  # asked to stop while it waited to begin: nothing stored
        run.result.stop_reason = "cancelled"
        return
    waiting = approvals.waiting_in(newest)
    if isinstance(message, str | GroupTurn):
        if waiting is not None:
            calls = approvals.calls_waiting(run.tools, run.rules, waiting)
            raise approvals.still_waiting(agent.state.name, calls)
        said = message.said if isinstance(message, GroupTurn) else [Said(content=message)]
        users = [
            Message(
                agent_id=agent.state.id,
                role="user",
                content=item.content,
                name=item.sender,
                step_id=run.step_id,
                conversation_id=agent.state.conversation_id,
            )
            for item in said
        ]
        # Committed before the call, so a failure loses nothing; the first
        # request's window comes back with it (one round trip where it can).
        run.first_read = agent.store.main_context(
            agent.state.id, agent.state.context_start, users, agent.state.conversation_id
        )
        run.result.messages.extend(users)
        text = message.text() if isinstance(message, GroupTurn) else message
        yield StepStarted(step_id=run.step_id, agent_id=agent.state.id, user_message=text)
    else:
        async for event in _resume(run, waiting, message):
            yield event
        if run.done:
            return
    async for event in _loop(run):
        yield event


async def _resume(
    run: StepRun, waiting: Message | None, answers: Approval | Sequence[Answer]
) -> AsyncIterator[StepEvent]:
    """Go on with the answer whose calls waited for approval: run the
    approved ones, give the denied ones their denial and the client-side
    ones the client's result, in the model's order."""
    agent = run.agent
    answers = [answers] if isinstance(answers, Approval) else list(answers)
    if waiting is None:
        raise ApprovalError(f"agent {agent.state.name!r} has no tool call waiting for approval")
    asking = approvals.calls_waiting(run.tools, run.rules, waiting)
    decisions = approvals.decisions_for(asking, answers)
    run.step_id = waiting.step_id or run.step_id  # the turn's step goes on
    run.rules = approvals.turn_rules(agent, run.rules)
    yield StepStarted(
        step_id=run.step_id, agent_id=agent.state.id, user_message="", approvals=answers
    )
    async for event in _run_calls(run, waiting, decisions, None):
        yield event


async def _loop(run: StepRun) -> AsyncIterator[StepEvent]:
    """Call the model and act on its answers until the step ends."""
    agent, result = run.agent, run.result
    seconds_before = agent.llm.seconds_in_calls
    for _ in range(agent.state.settings.max_chained_steps):
        if run.stop_requested():  # before the next request: what is stored is whole
            result.stop_reason = "cancelled"
            return
        run.renew_lock()
        completion, usage_before = None, result.usage.model_copy()
        try:
            async for item in call_model(run):
                if isinstance(item, Completion):
                    completion = item
                else:
                    yield item
        except ContextFullError:
            if not any(m.role != "user" for m in result.messages):
                raise  # not even the user's message fits
            result.stop_reason = "context_full"
            return
        result.llm_seconds = agent.llm.seconds_in_calls - seconds_before
        if completion is None:  # call_model yields one last, or raises
            raise RuntimeError("call_model ended without an answer")
        _remember_fallbacks(agent, completion)
        result.usage.add(completion.usage)
        yield UsageReported(step_id=run.step_id, usage=completion.usage)
        async for event in _answer(run, completion, _spent_since(result.usage, usage_before)):
            yield event
        if run.done:
            return
    result.stop_reason = "step_limit"


def _remember_fallbacks(agent: AgentDeps, completion: Completion) -> None:
    """Store what the endpoint turned out not to support (tool_choice
    "required", streaming), so later requests do not ask for it. The fields
    alone: a whole-row save could undo a compaction made meanwhile elsewhere."""
    config = agent.state.llm
    changes: list[Callable[[AgentState], None]] = []
    if completion.tool_choice != config.tool_choice:
        changes.append(lambda state: setattr(state.llm, "tool_choice", completion.tool_choice))
    if config.stream and not completion.streamed:
        changes.append(lambda state: setattr(state.llm, "stream", False))
    if changes:

        def use(state: AgentState) -> None:
            for change in changes:
                change(state)

        agent.state = agent.store.update_agent(agent.state.id, use, agent.state.conversation_id)


def _spent_since(usage: Usage, before: Usage) -> Usage:
    """What a model call cost: the step's usage now less `before` (so an
    empty answer asked for again counts too)."""
    return Usage(
        prompt_tokens=usage.prompt_tokens - before.prompt_tokens,
        completion_tokens=usage.completion_tokens - before.completion_tokens,
        total_tokens=usage.total_tokens - before.total_tokens,
        requests=usage.requests - before.requests,
    )


def _usage_record(run: StepRun, spent: Usage, answer: Message) -> UsageRecord:
    """The record of what the answer cost: as the endpoint reported it, or,
    when it reported nothing, our own count of the request and the answer."""
    agent = run.agent
    record = UsageRecord(
        agent_id=agent.state.id,
        step_id=run.step_id,
        model=agent.state.llm.model,
        **spent.model_dump(),
    )
    if spent.prompt_tokens == 0 and spent.total_tokens == 0:
        record.estimated = True
        record.prompt_tokens = run.result.prompt_tokens_estimate * max(1, spent.requests)
        record.completion_tokens = agent.token_counter.count_message(answer.to_openai())
        record.total_tokens = record.prompt_tokens + record.completion_tokens
    return record


def _store_answer(
    run: StepRun, messages: list[Message], usage: UsageRecord | None, ends_step: bool
) -> None:
    """An answer's messages and what it cost, in one transaction; the step's
    own lock goes with it when it ends the step (one transaction less)."""
    store = run.agent.store
    if not (ends_step and run.owns_lock and run.lock is not None):
        store.add_messages(messages, usage)
        return
    run.lock.give_up_with(lambda release: store.add_messages(messages, usage, release))


async def _answer(run: StepRun, completion: Completion, spent: Usage) -> AsyncIterator[StepEvent]:
    """Act on a model answer: run its tool calls, or, when one needs the
    user's approval, store it and ask. Sets `run.done` and the stop reason
    when the step ends."""
    agent, result, step_id = run.agent, run.result, run.step_id
    assistant = Message(
        agent_id=agent.state.id,
        conversation_id=agent.state.conversation_id,
        role="assistant",
        content=completion.content,
        tool_calls=completion.tool_calls,
        step_id=step_id,
    )
    usage = _usage_record(run, spent, assistant)
    if not assistant.tool_calls:
        # A plain text reply (tool_choice "auto" endpoints): it is the answer.
        _store_answer(run, [assistant], usage, ends_step=True)
        result.messages.append(assistant)
        result.stop_reason, run.done = "text_reply", True
        if assistant.content:
            result.replies.append(assistant.content)
            yield ReplyDelivered(step_id=step_id, text=assistant.content)
        return
    if assistant.content:
        result.thoughts.append(assistant.content)
    assistant.tool_calls = mark_client_calls(assistant.tool_calls, run.tools, run.rules)
    asking = approvals.calls_to_approve(run.tools, run.rules, assistant.tool_calls)
    if asking and not run.stop_requested():  # a stopped step asks nothing: its calls are not run
        _store_answer(run, [assistant], usage, ends_step=True)  # the wait: calls, no results
        result.messages.append(assistant)
        result.pending_approvals = asking
        result.stop_reason, run.done = "approval_required", True
        yield ApprovalRequested(step_id=step_id, message_id=assistant.id, calls=asking)
        return
    async for event in _run_calls(run, assistant, {}, usage):
        yield event


async def _run_calls(
    run: StepRun,
    assistant: Message,
    decisions: dict[str, Answer],
    usage: UsageRecord | None,
) -> AsyncIterator[StepEvent]:
    """Run an answer's tool calls (or give a denied one its denial, a
    client-side one the client's result), then
    store exactly one result per call together with the answer and what it
    cost (`usage`), or, for an answer stored when it asked for approval
    (`usage` None), the results alone."""
    agent, result, step_id = run.agent, run.result, run.step_id
    context = ToolContext(deps=agent, step_id=step_id)
    # The tools run outside any write transaction: one that waits on the
    # network (an embedding, a custom tool's request) must not hold the
    # database's write lock, which every other agent's step needs. Their own
    # writes commit as they go; the answer and its results follow, together.
    outcomes: list[ToolOutcome] = []
    stopped = False
    for call in assistant.tool_calls:
        yield ToolCallStarted(step_id=step_id, call=call)
        decision = decisions.get(call.id)
        stopped = stopped or run.stop_requested()  # then this call and the rest are not run
        if stopped and not isinstance(decision, ToolReturn):  # a client's result: it ran
            outcome = ToolOutcome(NOT_RUN, ok=False)
        else:
            outcome = await _outcome(run, context, call, decision)
        outcomes.append(outcome)
        yield ToolReturned(
            step_id=step_id, call_id=call.id, name=call.name, content=outcome.content, ok=outcome.ok
        )
    answers = [
        Message(
            agent_id=agent.state.id,
            conversation_id=agent.state.conversation_id,
            role="tool",
            content=outcome.content,
            tool_call_id=call.id,
            name=call.name,
            step_id=step_id,
        )
        for call, outcome in zip(assistant.tool_calls, outcomes, strict=True)
    ]
    stored = answers if usage is None else [assistant, *answers]
    replied = bool(context.replies)
    stop_reason = (
        "cancelled" if stopped else _end_after(run, assistant.tool_calls, outcomes, replied)
    )
    _store_answer(run, stored, usage, ends_step=stop_reason is not None)
    result.messages += stored
    result.tool_results += [
        ToolResult(call=call, content=outcome.content, ok=outcome.ok)
        for call, outcome in zip(assistant.tool_calls, outcomes, strict=True)
    ]
    result.replies.extend(context.replies)
    for reply in context.replies:
        yield ReplyDelivered(step_id=step_id, text=reply)
    if stop_reason is not None:
        result.stop_reason, run.done = stop_reason, True


def _end_after(
    run: StepRun, calls: list[ToolCall], outcomes: list[ToolOutcome], replied: bool
) -> str | None:
    """Why the step ends after an answer's tool calls, or None if it goes
    on: a tool that ends the step ran, or none asked to go on (a heartbeat,
    a failure, a tool that continues the step), or the tool rules leave
    nothing to call."""
    rules = run.rules
    ran = [call.name for call, outcome in zip(calls, outcomes, strict=True) if outcome.ok]
    go_on = any(
        not outcome.ok or outcome.heartbeat or (outcome.ok and rules.continues(call.name))
        for call, outcome in zip(calls, outcomes, strict=True)
    )
    if rules.ends_step(ran) or (go_on and not rules.allowed(run.tools)):
        return "tool_rule"
    if not go_on:
        return "send_message" if replied else "no_heartbeat"
    return None


async def _outcome(
    run: StepRun, context: ToolContext, call: ToolCall, decision: Answer | None
) -> ToolOutcome:
    """A call's outcome: the client's result, a denial, or the call run."""
    if isinstance(decision, ToolReturn):
        outcome = client_outcome(decision, run.agent.state.settings.tool_result_max_chars)
        if outcome.ok:
            run.rules.record(call.name)
        return outcome
    if decision is not None and not decision.approve:
        return ToolOutcome(approvals.denial(call, decision.reason), ok=False)
    return await _run_tool_call(run, context, call)


async def _run_tool_call(run: StepRun, context: ToolContext, call: ToolCall) -> ToolOutcome:
    run.renew_lock()  # a slow tool must not outlast the step's lease
    tools = run.tools
    tool = tools.get(call.name)
    if tool is None:
        return ToolOutcome(
            f"Error: there is no tool named {call.name!r}. The tools are: {', '.join(tools)}.",
            ok=False,
        )
    refused = run.rules.violation(call.name, tools)
    if refused is not None:
        return ToolOutcome(refused, ok=False)
    max_chars = run.agent.state.settings.tool_result_max_chars
    outcome = await tool.arun(context, call.arguments, max_chars, in_thread=run.tools_in_threads)
    if outcome.ok:
        run.rules.record(call.name)
    return outcome
