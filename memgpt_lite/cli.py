"""The `memgpt-lite` command. Each command's docstring is its --help."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .agent import Agent, default_blocks
from .cli_archival import archival
from .cli_base import FriendlyGroup, load_agent, store_for
from .models import AgentSettings, StepResult


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
@click.option("--model", "-m", required=True, help="Model name, e.g. gpt-4o-mini or llama3.2.")
@click.option("--persona", help="Text of the persona block (default: the built-in persona).")
@click.option("--human", help="Text of the human block (default: the built-in template).")
@click.option("--system", help="System instructions (default: prompts/system.md).")
@click.option("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL).")
@click.option("--context-window", type=int, help="Context window of the model, in tokens.")
@click.option(
    "--embedder",
    help='Embedder for hybrid search: "local" (offline) or "endpoint:MODEL". Default: none.',
)
@click.pass_context
def create(
    ctx: click.Context,
    name: str,
    model: str,
    persona: str | None,
    human: str | None,
    system: str | None,
    base_url: str | None,
    context_window: int | None,
    embedder: str | None,
) -> None:
    """Create an agent called NAME.

    Example: memgpt-lite create sam --model gpt-4o-mini --persona "I am Sam."
    """
    Agent.create(
        name,
        model,
        blocks=default_blocks(persona, human),
        system=system,
        base_url=base_url,
        settings=AgentSettings(context_window=context_window),
        embedder=embedder,
        store=store_for(ctx),
    )
    click.echo(f"Created agent {name!r} ({model}).")


@cli.command()
@click.argument("name")
@click.argument("message")
@click.option("--verbose", "-v", is_flag=True, help="Also show inner thoughts and tool calls.")
@click.pass_context
def send(ctx: click.Context, name: str, message: str, verbose: bool) -> None:
    """Send MESSAGE to agent NAME and print its replies, one per line.

    Example: memgpt-lite send sam "Hi, my name is Alice"
    """
    agent = load_agent(ctx, name)
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


@cli.command(name="agents")
@click.pass_context
def list_agents(ctx: click.Context) -> None:
    """List the agents: name, model and number of messages."""
    rows = store_for(ctx).list_agents()
    if not rows:
        click.echo("No agents yet. Create one with: memgpt-lite create NAME --model MODEL")
    for state, stats in rows:
        click.echo(f"{state.name}\t{state.llm.model}\t{stats.message_count} messages")


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
    table = Table(title=f"{name}: {view.model}", show_edge=False)
    table.add_column("section")
    table.add_column("tokens", justify="right")
    for section, tokens in view.sections.items():
        table.add_row(section, f"{tokens:,}")
    table.add_row("total (exact request)", f"{view.total_tokens:,}", style="bold")
    console = Console(highlight=False)
    console.print(table)
    used = 100 * view.total_tokens / view.context_window
    click.echo(
        f"{view.total_tokens:,} of {view.context_window:,} tokens ({used:.0f}%), "
        f"{view.reply_reserve:,} reserved for the reply; messages: "
        f"{view.messages_in_context} in context, {view.messages_in_storage} stored"
    )


@cli.command()
@click.argument("name")
@click.pass_context
def summarize(ctx: click.Context, name: str) -> None:
    """Compact agent NAME's context now: older messages are folded into the
    summary and leave the window (they stay searchable)."""
    report = load_agent(ctx, name).summarize()
    if report.evicted == 0:
        click.echo("Nothing to compact: the window holds only the latest exchange.")
        return
    how = "summarized" if report.summarized else "dropped without a summary (summarizer failed)"
    click.echo(
        f"{report.evicted} messages left the window, {how}; the request went from "
        f"{report.tokens_before:,} to {report.tokens_after:,} tokens."
    )


# Command families kept in their own modules.
cli.add_command(archival)


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="memgpt-lite")
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
