"""The `memgpt-lite` command. Each command's docstring is its --help.

Only click and the light modules of `cli/` load at start-up; each command
imports what it runs (see `base.py`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from memgpt_lite.cli.agents import AGENT_COMMANDS
from memgpt_lite.cli.archival import archival
from memgpt_lite.cli.base import FriendlyGroup, load_agent, timeout_option
from memgpt_lite.cli.chat import chat
from memgpt_lite.cli.doctor import doctor, models
from memgpt_lite.cli.log import configure_logging, show_details
from memgpt_lite.cli.transfer import export_command, import_command
from memgpt_lite.errors import MemGPTError

if TYPE_CHECKING:
    from memgpt_lite.agent import Agent
    from memgpt_lite.models import StepResult


@click.group(cls=FriendlyGroup)
@click.version_option(package_name="memgpt-lite")
@click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="MEMGPT_LITE_DB",
    help="Database file (default: $MEMGPT_LITE_HOME/memgpt_lite.db or ~/.memgpt_lite/).",
)
@click.pass_context
def cli(ctx: click.Context, db: Path | None) -> None:
    """memgpt-lite: agents that remember, with state in SQLite."""
    configure_logging()
    ctx.ensure_object(dict)
    ctx.obj["db"] = db


@cli.command()
@click.argument("name")
@click.argument("message")
@click.option("--verbose", "-v", is_flag=True, help="Also show inner thoughts and tool calls.")
@timeout_option
@click.pass_context
def send(ctx: click.Context, name: str, message: str, verbose: bool, timeout: float | None) -> None:
    """Send MESSAGE to agent NAME and print its replies, one per line.

    If the endpoint fails, the message stays stored but unanswered, and is left
    out of later requests: `memgpt-lite retry NAME` sends it again,
    `memgpt-lite pop NAME` drops it.

    Example: memgpt-lite send sam "Hi, my name is Alice" --timeout 60
    """
    if verbose:
        show_details()
    agent = load_agent(ctx, name, timeout)
    _print_result(agent, _explained(agent, lambda: agent.step(message)), verbose)


@cli.command()
@click.argument("name")
@click.option("--verbose", "-v", is_flag=True, help="Also show inner thoughts and tool calls.")
@timeout_option
@click.pass_context
def retry(ctx: click.Context, name: str, verbose: bool, timeout: float | None) -> None:
    """Send agent NAME's last message again, after removing its last exchange
    (that message and everything that followed it): for a message the endpoint
    failed to answer, or an answer you want redone."""
    from memgpt_lite.memory.history import pop_for_retry

    if verbose:
        show_details()
    agent = load_agent(ctx, name, timeout)
    _ = agent.llm  # a missing API key fails here, before anything is removed
    with agent.step_lock():  # no other step between the pop and the new one
        text = pop_for_retry(agent)
        click.echo(f"Sending again: {text}", err=True)
        result = _explained(agent, lambda: agent.step(text))
    _print_result(agent, result, verbose)


@cli.command()
@click.argument("name")
@click.argument("count", default=1, type=click.IntRange(min=1))
@click.pass_context
def pop(ctx: click.Context, name: str, count: int) -> None:
    """Remove agent NAME's last COUNT exchanges (default 1): each a message of
    yours and everything after it. Memory edits the agent made stay."""
    deleted = load_agent(ctx, name).pop_exchanges(count)
    click.echo(f"Removed {count} exchange(s): {deleted} messages.")


def _explained(agent: Agent, step: Callable[[], StepResult]) -> StepResult:
    """Run a step; if it fails before the model answered, the error also says
    how to send the message again or drop it."""
    try:
        return step()
    except MemGPTError as exc:
        from memgpt_lite.memory.history import unanswered_note

        name = agent.state.name
        note = unanswered_note(agent, f"memgpt-lite retry {name}", f"memgpt-lite pop {name}")
        # One line, so scripts and logs keep one line per failure.
        raise click.ClickException(
            f"{exc} — {note[0].lower()}{note[1:]}" if note else str(exc)
        ) from None


def _print_result(agent: Agent, result: StepResult, verbose: bool) -> None:
    if verbose:
        _show_steps(result)
    for reply in result.replies:
        click.echo(reply)
    if not result.replies:
        name = agent.state.name
        click.echo(f"({name} ended its turn without a reply: {result.stop_reason})", err=True)


def _show_steps(result: StepResult) -> None:
    from rich.console import Console
    from rich.markup import escape

    console = Console(stderr=True, highlight=False)
    for thought in result.thoughts:
        console.print(f"[dim]thought: {escape(thought)}[/dim]")
    for tool_result in result.tool_results:
        call = tool_result.call
        mark = "" if tool_result.ok else " [red](failed)[/red]"
        console.print(
            f"[dim]{escape(call.name)}({escape(call.arguments)}) -> "
            f"{escape(tool_result.content)}[/dim]{mark}"
        )


@cli.command()
@click.argument("name")
@click.pass_context
def memory(ctx: click.Context, name: str) -> None:
    """Show agent NAME's core memory blocks."""
    agent = load_agent(ctx, name)
    for block in agent.blocks:
        flags = ", read-only" if block.read_only else ""
        click.echo(f"[{block.label}] {len(block.value)}/{block.limit} chars{flags}")
        click.echo(block.value)
        click.echo()


@cli.command()
@click.argument("name")
@click.pass_context
def context(ctx: click.Context, name: str) -> None:
    """Show where the tokens of agent NAME's next request go, section by section."""
    from rich.console import Console

    from memgpt_lite.cli.repl_commands import context_summary, context_table

    view = load_agent(ctx, name).context_overview()
    Console(highlight=False).print(context_table(f"{name}: {view.model}", view))
    click.echo(context_summary(view))


@cli.command()
@click.argument("name")
@click.pass_context
def summarize(ctx: click.Context, name: str) -> None:
    """Compact agent NAME's context now: older messages are folded into the
    summary and leave the window (they stay searchable)."""
    click.echo(load_agent(ctx, name).summarize().describe())


# Command families kept in their own modules.
cli.add_command(archival)
cli.add_command(chat)
cli.add_command(doctor)
cli.add_command(models)
cli.add_command(export_command)
cli.add_command(import_command)
for command in AGENT_COMMANDS:
    cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI. Our errors are one line (FriendlyGroup); Ctrl-C anywhere,
    at a prompt included, is "Interrupted.", never click's "Aborted!"."""
    try:
        status = cli.main(args=argv, prog_name="memgpt-lite", standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except (click.Abort, KeyboardInterrupt, EOFError) as exc:
        if isinstance(exc, EOFError) or isinstance(exc.__context__, EOFError):
            click.echo("Stopped: the input ended before an answer.", err=True)
            sys.exit(1)
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    sys.exit(status if isinstance(status, int) else 0)
