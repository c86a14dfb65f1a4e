"""Tool calls waiting for the user's approval, as the command line and the
chat show them: a call written as the model made it,
`delete_file(path='/tmp/a')`, and the line that tells how to answer. (The
waiting itself is loop/approvals.py; the calls that wait come from the
agent, `agent.pending_approvals()`, or, where no agent is opened, from the
workspace, `Workspace.waiting_calls`.)

Start-up: like every module of `cli/`, this one imports only click and the
standard library at module level (see `base.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memgpt_lite.models import ToolCall


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
