"""`memgpt-lite log`: an agent's stored messages, like `git log`.

(Not to be confused with `cli/log.py`, where the command line's own log
records go.) Everything is read through the workspace (agent/workspace.py):
no agent is loaded, so no endpoint, key or tokenizer is needed, and a
read-only database serves it. Start-up: only click and the standard library at module level.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click

from memgpt_lite.cli.base import workspace_for
from memgpt_lite.cli.scripting import BadInput

if TYPE_CHECKING:
    from memgpt_lite.models import Message, ToolCall

_ARGUMENTS_CHARS = 100
_RESULT_CHARS = 120
_INDENT = "    "


@click.command("log")
@click.argument("name")
@click.option(
    "--limit", "-n", default=20, show_default=True, type=click.IntRange(1, 10_000),
    help="Messages per page.",
)  # fmt: skip
@click.option(
    "--page", "-p", default=1, show_default=True, type=click.IntRange(1, 10**9),
    help="Which page: 1 holds the newest messages (or the best matches), 2 the ones before.",
)  # fmt: skip
@click.option("--search", "-s", "query", metavar="TEXT", help="Only messages matching any word.")
@click.option(
    "--since", metavar="DATE",
    help="Only messages from then on: 2026-11-23 or 2026-11-23T14:30 (local time unless "
    "it names a zone, like 2026-11-23T14:30Z).",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="One JSON object per message per line.")
@click.pass_context
def log_command(
    ctx: click.Context,
    name: str,
    limit: int,
    page: int,
    query: str | None,
    since: str | None,
    as_json: bool,
) -> None:
    """Show agent NAME's messages, like `git log`: time, role, text, tool calls
    (name and short arguments) and tool results, oldest first within a page.

    With --search, the user and assistant messages matching any word of TEXT
    (as the agent's conversation_search finds them), best first. On a
    terminal the output goes through a pager ($PAGER).

    Example: memgpt-lite log sam --search bees --since 2026-11-01 -n 5
    """
    since_time = parse_since(since) if since is not None else None
    if query is not None and not query.strip():
        raise BadInput("the search text is empty")
    workspace = workspace_for(ctx)
    agent_id = workspace.agent_state(name).id
    offset = (page - 1) * limit
    if query is None:
        messages, total = workspace.history_page(agent_id, limit, offset, since_time)
    else:
        messages, total = workspace.search_history(agent_id, query, limit, offset, since_time)
    if as_json:
        for message in messages:
            click.echo(message.model_dump_json())
        return
    if not messages:
        click.echo(f"No messages on page {page}." if total else "No messages.", err=True)
        return
    lines = [line for message in messages for line in message_lines(message)]
    if not sys.stdout.isatty():
        click.echo("\n".join(lines))
        return
    pages = -(-total // limit)
    more = f"; --page {page + 1} for more" if page < pages else ""
    lines.append(f"(page {page} of {pages}, {total} messages{more})")
    click.echo_via_pager("\n".join(lines))  # it ends the last line itself


def parse_since(value: str) -> datetime:
    """--since as an aware time; without a zone, it is local time."""
    try:
        parsed = datetime.fromisoformat(value.strip())
        return (parsed if parsed.tzinfo else parsed.astimezone()).astimezone(UTC)
    except (ValueError, OverflowError, OSError):
        raise BadInput(
            f"--since {value!r} is not a date or time: write 2026-11-23 or 2026-11-23T14:30"
        ) from None


def message_lines(message: Message) -> Iterator[str]:
    """A message as `#SEQ TIME ROLE: text`, its text's further lines and each
    tool call indented below; a tool result shortened to one line."""
    when = message.created_at.astimezone().strftime("%Y-%m-%d %H:%M:%S")
    head = f"#{message.seq} {when} {message.role}"
    text = message.content or ""
    if message.role == "tool":
        yield f"{head} {message.name or '?'}: {_shortened(_one_line(text), _RESULT_CHARS)}"
        return
    first, *rest = text.split("\n") if text else [""]
    yield f"{head}: {first}" if first else f"{head}:"
    yield from (f"{_INDENT}{line}" for line in rest)
    for call in message.tool_calls:
        yield f"{_INDENT}→ {call.name}({short_arguments(call)})"


def short_arguments(call: ToolCall) -> str:
    """A call's arguments as `key=value, ...` on one line, shortened; the raw
    text when the model sent something that is not a JSON object."""
    from memgpt_lite.text import JSONProblem, parse_arguments

    try:
        arguments = parse_arguments(call.arguments)
        # json.dumps, not repr: the values read as the model wrote them.
        shown = ", ".join(
            f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in arguments.items()
        )
    except (JSONProblem, ValueError):  # not an object, or a number of thousands of digits
        shown = _one_line(call.arguments)
    return _shortened(shown, _ARGUMENTS_CHARS)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _shortened(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"
