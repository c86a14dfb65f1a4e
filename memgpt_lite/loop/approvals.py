"""Tool calls that wait for the user's approval (human in the loop).

A call needs approval when its tool was made with `requires_approval=True`
or the agent has a `requires_approval` tool rule for it. A model answer that
holds such a call waits whole: it is stored with its calls and no results,
and none of them runs (the ones that need no approval included, so they all
run in the order the model wrote them) until the user answers. That stored
answer is the whole of the pending state: the newest message of an agent is
an assistant message with tool calls only while it waits, since every other
answer is stored together with its results. So the wait survives restarts,
and a new user message is refused until the user approves or denies.

An approved call runs as any other, tool rules included; a denied one gets
an error result that gives the user's reason, and the step goes on so the
model can respond to it. A call of a client-side tool (loop/client_tools.py)
waits the same way, for the client's result (`ToolReturn`) or its denial.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memgpt_lite.errors import ApprovalError
from memgpt_lite.models import Approval, Message, ToolCall
from memgpt_lite.step_input import Answer, ToolReturn
from memgpt_lite.storage.protocol import Storage
from memgpt_lite.tools.deps import AgentDeps
from memgpt_lite.tools.rules import RuleBook
from memgpt_lite.tools.schema import Tool


def asks_approval(tools: Mapping[str, Tool], rules: RuleBook, call: ToolCall) -> bool:
    """Whether `call` waits for the user's approval. A call of a tool the
    agent lacks does not: it only gets an error result."""
    tool = tools.get(call.name)
    return tool is not None and (tool.requires_approval or rules.asks_approval(call.name))


def calls_to_approve(
    tools: Mapping[str, Tool], rules: RuleBook, calls: Sequence[ToolCall]
) -> list[ToolCall]:
    """The calls among `calls` that wait for the user's word: those that
    need approval, and those of client-side tools (marked `client`)."""
    return [call for call in calls if call.client or asks_approval(tools, rules, call)]


def calls_waiting(
    tools: Mapping[str, Tool], rules: RuleBook, answer: Message | None
) -> list[ToolCall]:
    """The calls of the waiting `answer` that wait for the user's word: those
    that need approval or a client's result, or all of them should none
    need it any more (the answer still waits: it has no results); none
    without an answer."""
    if answer is None:
        return []
    return calls_to_approve(tools, rules, answer.tool_calls) or list(answer.tool_calls)


def waiting_in(newest: Message | None) -> Message | None:
    """The answer whose tool calls wait for approval, given the agent's
    newest stored message: that message, when it is an answer with tool calls."""
    if newest is not None and newest.role == "assistant" and newest.tool_calls:
        return newest
    return None


def stored_waiting_answer(
    store: Storage, agent_id: str, conversation: str | None = None
) -> Message | None:
    """The agent's stored answer whose tool calls wait for approval, if any
    (in `conversation`; None: the default one)."""
    newest = store.last_messages(agent_id, 1, conversation)
    return waiting_in(newest[-1] if newest else None)


def waiting_answer(agent: AgentDeps) -> Message | None:
    """The agent's stored answer whose tool calls wait for approval, if any."""
    return stored_waiting_answer(agent.store, agent.state.id, agent.state.conversation_id)


def waiting_calls(agent: AgentDeps, tools: Mapping[str, Tool], rules: RuleBook) -> list[ToolCall]:
    """The tool calls that wait for the user's approval, oldest first."""
    return calls_waiting(tools, rules, waiting_answer(agent))


def still_waiting(agent_name: str, calls: Sequence[ToolCall]) -> ApprovalError:
    """The error for a new message sent while `calls` wait for approval."""
    names = ", ".join(dict.fromkeys(call.name for call in calls))
    if any(call.client for call in calls):
        return ApprovalError(
            f"agent {agent_name!r} is waiting for the result of a client-side tool call "
            f"({names}): send its result, or deny it, before sending a new message"
        )
    return ApprovalError(
        f"agent {agent_name!r} is waiting for approval of a tool call ({names}): "
        "approve or deny it before sending a new message"
    )


def decisions_for(waiting: Sequence[ToolCall], answers: Sequence[Answer]) -> dict[str, Answer]:
    """The answer to each call of `waiting` (by call id), from `answers`: an
    approval without a `tool_call_id` answers every call it does not name.
    Refuses (ApprovalError) an answer to a call that does not wait, two
    answers to one call, a waiting call left unanswered, a result for a call
    that runs on the server, and an approval of a client-side call (the
    client runs it: it sends the result)."""
    by_id = {call.id: call for call in waiting}
    named: dict[str, Answer] = {}
    for answer in answers:
        if answer.tool_call_id is None:
            continue
        if answer.tool_call_id not in by_id:
            raise ApprovalError(
                f"tool call {answer.tool_call_id!r} is not waiting for approval; "
                f"waiting: {', '.join(by_id)}"
            )
        if answer.tool_call_id in named:
            raise ApprovalError(f"tool call {answer.tool_call_id!r} is answered twice")
        named[answer.tool_call_id] = answer
    general = [a for a in answers if a.tool_call_id is None]
    if len(general) > 1:
        raise ApprovalError("only one answer may leave out tool_call_id")
    decisions = {}
    for call in waiting:
        decision = named.get(call.id) or (general[0] if general else None)
        if decision is None:
            hint = ": send its result, or deny it" if call.client else ""
            raise ApprovalError(f"tool call {call.id!r} ({call.name}) is not answered{hint}")
        _check_fits(call, decision)
        decisions[call.id] = decision
    return decisions


def _check_fits(call: ToolCall, answer: Answer) -> None:
    """Refuses a result for a call that runs on the server, and an approval
    of a client-side call, which the client runs."""
    if isinstance(answer, ToolReturn) and not call.client:
        raise ApprovalError(
            f"tool call {call.id!r} ({call.name}) runs on the server: approve or deny it; "
            "a result is sent only for a client-side tool's call"
        )
    if isinstance(answer, Approval) and answer.approve and call.client:
        raise ApprovalError(
            f"tool call {call.id!r} ({call.name}) is a client-side tool's: the client runs "
            "it and sends its result (or denies it)"
        )


def denial(call: ToolCall, reason: str) -> str:
    """The result the model reads for a call the user denied."""
    text = f"Error: the user denied this call of {call.name}; it did not run."
    return f"{text} Their reason: {reason}" if reason.strip() else text


def turn_rules(agent: AgentDeps, rules: RuleBook) -> RuleBook:
    """`rules`, having seen the calls that ran since the user's last message,
    for a step that goes on after an approval: the tool rules apply to a whole
    turn, however many waits split it. A stored result is taken as a call that
    ran unless it is an error, which every failed call's result starts with."""
    book = RuleBook(rules.rules)
    state = agent.state
    messages = agent.store.window(state.id, state.context_start, state.conversation_id)  # read only
    users = [i for i, message in enumerate(messages) if message.role == "user"]
    for message in messages[users[-1] + 1 if users else 0 :]:
        if (
            message.role == "tool"
            and message.name
            and not (message.content or "").startswith("Error:")
        ):
            book.record(message.name)
    return book
