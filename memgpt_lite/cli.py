"""The `memgpt-lite` command. Each command's docstring is its --help."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .agent import Agent, default_blocks
from .errors import MemGPTError
from .models import AgentSettings, StepResult
from .store import Store


class FriendlyGroup(click.Group):
    """Turns our errors into one-line messages instead of tracebacks."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemGPTError as exc:
            raise click.ClickException(str(exc)) from None
        except ValidationError as exc:
            problems = "; ".join(e["msg"] for e in exc.errors(include_url=False))
            raise click.ClickException(problems) from None


def _store(ctx: click.Context) -> Store:
    db = ctx.obj.get("db")
    if "store" not in ctx.obj:
        ctx.obj["store"] = Store(db) if db else Store(_default_db())
        ctx.call_on_close(ctx.obj["store"].close)
    return ctx.obj["store"]


def _default_db() -> Path:
    from .config import default_db_path

    return default_db_path()


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
        store=_store(ctx),
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
    agent = Agent.load(name, store=_store(ctx))
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
    rows = _store(ctx).list_agents()
    if not rows:
        click.echo("No agents yet. Create one with: memgpt-lite create NAME --model MODEL")
    for state, stats in rows:
        click.echo(f"{state.name}\t{state.llm.model}\t{stats.message_count} messages")


@cli.command()
@click.argument("name")
@click.pass_context
def memory(ctx: click.Context, name: str) -> None:
    """Show agent NAME's core memory blocks."""
    agent = Agent.load(name, store=_store(ctx))
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
    view = Agent.load(name, store=_store(ctx)).context_overview()
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
    report = Agent.load(name, store=_store(ctx)).summarize()
    if report.evicted == 0:
        click.echo("Nothing to compact: the window holds only the latest exchange.")
        return
    how = "summarized" if report.summarized else "dropped without a summary (summarizer failed)"
    click.echo(
        f"{report.evicted} messages left the window, {how}; the request went from "
        f"{report.tokens_before:,} to {report.tokens_after:,} tokens."
    )


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="memgpt-lite")
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
