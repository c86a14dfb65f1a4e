"""The `memgpt-lite` command. Each command's docstring is its --help."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from .agent import Agent
from .cli_agents import AGENT_COMMANDS
from .cli_archival import archival
from .cli_base import FriendlyGroup, load_agent, store_for
from .cli_chat import chat, timeout_option
from .cli_transfer import export_command, import_command
from .models import StepResult
from .repl_commands import context_summary, context_table


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

    Example: memgpt-lite send sam "Hi, my name is Alice" --timeout 60
    """
    agent = Agent.load(name, store=store_for(ctx), timeout=timeout)
    result = agent.step(message)
    if verbose:
        _show_details(result)
    for reply in result.replies:
        click.echo(reply)
    if not result.replies:
        click.echo(f"({name} ended its turn without a reply: {result.stop_reason})", err=True)


def _show_details(result: StepResult) -> None:
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
cli.add_command(export_command)
cli.add_command(import_command)
for command in AGENT_COMMANDS:
    cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="memgpt-lite")
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
