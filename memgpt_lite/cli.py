"""The `memgpt-lite` command. Each command's docstring is its --help."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from .agent import Agent, default_blocks
from .config import default_db_path
from .embeddings import make_embedder
from .errors import MemGPTError
from .models import AgentSettings, Passage, StepResult
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
        ctx.obj["store"] = Store(db or default_db_path())
        ctx.call_on_close(ctx.obj["store"].close)
    return ctx.obj["store"]


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


@cli.group()
@click.argument("name")
@click.pass_context
def archival(ctx: click.Context, name: str) -> None:
    """Inspect and edit agent NAME's archival memory.

    Example: memgpt-lite archival sam search "sister's wedding"
    """
    ctx.obj["agent_name"] = name


def _agent(ctx: click.Context) -> Agent:
    return Agent.load(ctx.obj["agent_name"], store=_store(ctx))


def _print_passages(passages: list[Passage], total: int) -> None:
    for passage in passages:
        when = passage.created_at.strftime("%Y-%m-%d %H:%M")
        tags = f"  [{', '.join(passage.tags)}]" if passage.tags else ""
        click.echo(f"{passage.id}  {when}{tags}\n  {passage.text}")
    click.echo(f"({len(passages)} shown of {total})")


@archival.command(name="list")
@click.option("--tag", "tags", multiple=True, help="Only passages with this tag (repeatable).")
@click.option("--limit", default=20, show_default=True)
@click.option("--offset", default=0)
@click.pass_context
def archival_list(ctx: click.Context, tags: tuple[str, ...], limit: int, offset: int) -> None:
    """List passages, newest first."""
    _print_passages(*_agent(ctx).archival.list(limit, offset, list(tags) or None))


@archival.command(name="search")
@click.argument("query")
@click.option("--tag", "tags", multiple=True, help="Only passages with this tag (repeatable).")
@click.option("--limit", default=5, show_default=True)
@click.pass_context
def archival_search(ctx: click.Context, query: str, tags: tuple[str, ...], limit: int) -> None:
    """Search passages for QUERY (plain text), best first."""
    _print_passages(*_agent(ctx).archival.search(query, limit, tags=list(tags) or None))


@archival.command(name="get")
@click.argument("passage_id")
@click.pass_context
def archival_get(ctx: click.Context, passage_id: str) -> None:
    """Print one passage."""
    _print_passages([_agent(ctx).archival.get(passage_id)], 1)


@archival.command(name="insert")
@click.argument("text")
@click.option("--tag", "tags", multiple=True, help="A tag for the passage (repeatable).")
@click.pass_context
def archival_insert(ctx: click.Context, text: str, tags: tuple[str, ...]) -> None:
    """Store TEXT (split into passages if long)."""
    report = _agent(ctx).archival.insert(text, tags=tags)
    for passage in report.stored:
        click.echo(f"stored {passage.id}")
    for existing in report.duplicates:
        click.echo(f"skipped: already stored as {existing}")


@archival.command(name="delete")
@click.argument("passage_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def archival_delete(ctx: click.Context, passage_id: str, yes: bool) -> None:
    """Delete one passage."""
    agent = _agent(ctx)
    passage = agent.archival.get(passage_id)
    if not yes:
        click.confirm(f"Delete {passage_id}: {passage.text[:60]!r}?", abort=True)
    agent.archival.delete(passage_id)
    click.echo(f"deleted {passage_id}")


@archival.command(name="load")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--tag", "tags", multiple=True, help="A tag for every passage (repeatable).")
@click.pass_context
def archival_load(ctx: click.Context, path: Path, tags: tuple[str, ...]) -> None:
    """Load a text file, or every text file in a folder, into archival memory."""
    agent = _agent(ctx)
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    with Progress(
        *Progress.get_default_columns(), console=Console(stderr=True), transient=True
    ) as progress:
        task = progress.add_task("loading", total=total)
        counts = agent.archival.load_path(
            path, tags, progress=lambda _file, size: progress.advance(task, size)
        )
    files_read, stored, duplicates = counts
    click.echo(f"{files_read} files: {stored} passages stored, {duplicates} duplicates skipped")


@archival.command(name="reembed")
@click.option("--embedder", "spec", help='"local" or "endpoint:MODEL" (default: the agent\'s).')
@click.pass_context
def archival_reembed(ctx: click.Context, spec: str | None) -> None:
    """Replace every stored vector using EMBEDDER, e.g. after changing models."""
    agent = _agent(ctx)
    spec = spec or agent.state.settings.embedder
    if not spec:
        raise click.ClickException("no embedder: pass --embedder local or endpoint:MODEL")
    embedder = make_embedder(spec, base_url=agent.state.llm.base_url)
    done = agent.archival.reembed(embedder)
    click.echo(
        f"re-embedded {done} passages with {embedder.name}; messages follow at their next search"
    )


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="memgpt-lite")
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
