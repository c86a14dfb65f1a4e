"""Client-side tools: tools that the client sending a step runs itself
(Letta's `client_tools`, a coding agent's shell or file editor).

A step's client-side tools (`StepWithClientTools`) are offered to the model
beside the agent's own, for that step alone: they are never stored as the
agent's tools. Their tool rules apply by name as to any tool. A model answer
with a call of one waits as an answer that asks for approval does
(loop/approvals.py): stored whole with its calls and no results, each
client-side call marked (`ToolCall.client`), so the wait survives a restart
and any server process can go on with it. The client runs the call and
sends its result (`ToolReturn`), or denies it; the step then goes on, the
result stored as the call's tool message, so every call still gets exactly
one result. A result's text is cleaned and cut to the agent's limit as any
tool's is; a failed one starts "Error:", as every failed call's result does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memgpt_lite.llm.tokens import TokenCounter
from memgpt_lite.memory.recall.window import NO_MORE_TOOLS, OfferedTools
from memgpt_lite.models import ToolCall
from memgpt_lite.step_input import ClientTool, ToolReturn
from memgpt_lite.text import clean_text
from memgpt_lite.tools.client import check_client_tool_names
from memgpt_lite.tools.external import ExternalTool
from memgpt_lite.tools.rules import RuleBook
from memgpt_lite.tools.schema import Tool, ToolOutcome, truncate

CLIENT_ORIGIN = "client"


@dataclass(frozen=True)
class ClientTools:
    """A step's client-side tools: as tools (for the tool rules), and as
    what its requests offer beside the agent's tools."""

    tools: dict[str, Tool]
    offered: OfferedTools


NO_CLIENT_TOOLS = ClientTools({}, NO_MORE_TOOLS)


def client_tools(
    declared: Sequence[ClientTool], own: Mapping[str, Tool], counter: TokenCounter
) -> ClientTools:
    """The step's client-side tools, `declared` by its sender. One named as
    one of the agent's own tools (`own`), or declared twice, is a
    ConfigError: the model could not tell which it calls."""
    if not declared:
        return NO_CLIENT_TOOLS
    check_client_tool_names(declared, own)
    tools = {given.name: _as_tool(given) for given in declared}
    schemas = [tool.schema() for tool in tools.values()]
    return ClientTools(tools, OfferedTools(schemas, counter.count_tools(schemas)))


def _as_tool(given: ClientTool) -> Tool:
    """`given` as a tool the loop knows by name. Its call never runs here: a
    call of it waits for the client (`mark_client_calls`); only one the tool
    rules refused reaches it, and that one gets the rules' error first."""
    name = given.name

    async def not_here(arguments: dict[str, Any], max_chars: int) -> ToolOutcome:
        return ToolOutcome(f"Error: {name} runs on the client; it was not run.", ok=False)

    return ExternalTool(
        name, given.description, given.parameters, not_here, origin=CLIENT_ORIGIN, heartbeat=False
    )


def mark_client_calls(
    calls: Sequence[ToolCall], tools: Mapping[str, Tool], rules: RuleBook
) -> list[ToolCall]:
    """`calls`, those of client-side tools marked `client`: the ones the tool
    rules allow at their turn, taking each call before it as run. A call
    the rules refuse is not the client's to run: it gets the rules' error."""
    book = rules.copy()
    marked = []
    for call in calls:
        allowed = book.violation(call.name, tools) is None
        tool = tools.get(call.name)
        if allowed and tool is not None and tool.origin == CLIENT_ORIGIN:
            call = call.model_copy(update={"client": True})
        marked.append(call)
        if allowed:
            book.record(call.name)
    return marked


def client_outcome(answer: ToolReturn, max_chars: int) -> ToolOutcome:
    """What the model reads for a client-side call the client ran: its
    result, cleaned and cut to the agent's limit; a failed one starts
    "Error:". The step goes on after it, so the model reads it."""
    text = clean_text(answer.content)
    if not answer.ok and not text.startswith("Error:"):
        text = f"Error: {text}"
    return ToolOutcome(truncate(text, max_chars), ok=answer.ok, heartbeat=True)
