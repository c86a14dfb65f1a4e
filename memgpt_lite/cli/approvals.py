"""Tool calls waiting for the user's approval, as the command line and the
chat show them (the waiting itself is loop/approvals.py): a call written as
the model made it, `delete_file(path='/tmp/a')`, and the line that tells how
to answer.

Start-up: like every module of `cli/`, this one imports only click and the
standard library at module level (see `base.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memgpt_lite.models import AgentState, ToolCall
    from memgpt_lite.storage.protocol import Storage


def call_text(call: ToolCall) -> str:
    """`call` as a Python-like call, each argument in full: what the user
    approves must not be cut short. Arguments that are not a JSON object
    are shown as the model wrote them."""
    from memgpt_lite.text import JSONProblem, parse_json  # it loads pydantic

    try:
        arguments = parse_json(call.arguments) if call.arguments.strip() else {}
    except JSONProblem:
        return f"{call.name}({call.arguments})"
    if not isinstance(arguments, dict):
        return f"{call.name}({call.arguments})"
    return f"{call.name}({', '.join(f'{key}={value!r}' for key, value in arguments.items())})"


def calls_text(calls: Sequence[ToolCall]) -> str:
    """The waiting calls in one line; with more than one, each with its id,
    which `--call` takes."""
    if len(calls) == 1:
        return call_text(calls[0])
    return "; ".join(f"{call_text(call)} [{call.id}]" for call in calls)


def waiting_note(agent_name: str, calls: Sequence[ToolCall]) -> str:
    """What `send` (and `approve`, `deny`) say when the step ends waiting:
    what waits and the commands that answer it, in one line."""
    verb = "is" if len(calls) == 1 else "are"
    return (
        f"{calls_text(calls)} {verb} waiting for approval: memgpt-lite approve {agent_name}, "
        f"or memgpt-lite deny {agent_name} --reason ..."
    )


def stored_waiting_calls(store: Storage, state: AgentState) -> list[ToolCall]:
    """The calls of `state`'s agent waiting for approval, read from the store
    alone, for `show`, which opens no agent (its custom tools are not at
    hand). Of the waiting answer's calls, those that the tool rules or the
    built-in tools ask approval for; all of them when none is (a custom tool
    made with requires_approval=True)."""
    from memgpt_lite.loop.approvals import calls_waiting, stored_waiting_answer
    from memgpt_lite.tools.rules import RuleBook
    from memgpt_lite.tools.sets import agent_tools

    answer = stored_waiting_answer(store, state.id)
    tools = agent_tools(state.settings.tool_set, {})
    return calls_waiting(tools, RuleBook(state.settings.tool_rules), answer)
