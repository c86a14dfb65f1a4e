"""`memgpt-lite archival NAME ...`: inspect and edit an agent's archival memory.

rich and the embedders are imported by the commands that use them, so that
`--help` stays fast (see `base.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from memgpt_lite.cli.base import confirm_or_stop, load_agent

if TYPE_CHECKING:
    from memgpt_lite.agent import Agent
    from memgpt_lite.models import Passage


@click.group()
@click.argument("name")
@click.pass_context
def archival(ctx: click.Context, name: str) -> None:
    """Inspect and edit agent NAME's archival memory.

    Example: memgpt-lite archival sam search "sister's wedding"
    """
    ctx.obj["agent_name"] = name


def _agent(ctx: click.Context) -> Agent:
    return load_agent(ctx, ctx.obj["agent_name"])


def _superseded(passage: Passage) -> str:
    """ "  superseded 2024-03-02 by passage-…" for a replaced passage, else ""."""
    if passage.superseded_by is None:
        return ""
    when = f" {passage.superseded_at:%Y-%m-%d}" if passage.superseded_at else ""
    return f"  superseded{when} by {passage.superseded_by}"


def _print_passage(passage: Passage) -> None:
    when = passage.created_at.strftime("%Y-%m-%d %H:%M")
    tags = f"  [{', '.join(passage.tags)}]" if passage.tags else ""
    click.echo(f"{passage.id}  {when}{tags}{_superseded(passage)}\n  {passage.text}")


def _print_passages(passages: list[Passage], total: int) -> None:
    for passage in passages:
        _print_passage(passage)
    click.echo(f"({len(passages)} shown of {total})")


@archival.command(name="list")
@click.option("--tag", "tags", multiple=True, help="Only passages with this tag (repeatable).")
@click.option("--limit", default=20, show_default=True)
@click.option("--offset", default=0)
@click.pass_context
def archival_list(ctx: click.Context, tags: tuple[str, ...], limit: int, offset: int) -> None:
    """List passages, newest first (superseded ones marked)."""
    _print_passages(*_agent(ctx).archival.list(limit, offset, list(tags) or None))


@archival.command(name="search")
@click.argument("query")
@click.option("--tag", "tags", multiple=True, help="Only passages with this tag (repeatable).")
@click.option("--limit", default=5, show_default=True)
@click.option(
    "--include-superseded",
    is_flag=True,
    help="Also passages a newer one replaced (listed after the current ones).",
)
@click.pass_context
def archival_search(
    ctx: click.Context, query: str, tags: tuple[str, ...], limit: int, include_superseded: bool
) -> None:
    """Search current passages for QUERY (plain text), best first."""
    _print_passages(
        *_agent(ctx).archival.search(
            query, limit, tags=list(tags) or None, include_superseded=include_superseded
        )
    )


@archival.command(name="history")
@click.argument("passage_id")
@click.pass_context
def archival_history(ctx: click.Context, passage_id: str) -> None:
    """Show the chain of the fact PASSAGE_ID belongs to, oldest first: what it
    replaced, and what replaced it, with dates."""
    chain = _agent(ctx).archival.history(passage_id)
    for passage in chain:
        _print_passage(passage)
    if len(chain) == 1:
        click.echo("(it replaced nothing, and nothing replaced it)")


@archival.command(name="get")
@click.argument("passage_id")
@click.pass_context
def archival_get(ctx: click.Context, passage_id: str) -> None:
    """Print one passage."""
    _print_passages([_agent(ctx).archival.get(passage_id)], 1)


@archival.command(name="insert")
@click.argument("text")
@click.option("--tag", "tags", multiple=True, help="A tag for the passage (repeatable).")
@click.option(
    "--replaces",
    multiple=True,
    metavar="PASSAGE_ID",
    help="A passage TEXT makes out of date, kept as superseded (repeatable).",
)
@click.pass_context
def archival_insert(
    ctx: click.Context, text: str, tags: tuple[str, ...], replaces: tuple[str, ...]
) -> None:
    """Store TEXT (split into passages if long)."""
    report = _agent(ctx).archival.insert(text, tags=tags, replaces=replaces)
    for passage in report.stored:
        click.echo(f"stored {passage.id}")
    for existing in report.duplicates:
        click.echo(f"skipped: already stored as {existing}")
    for old in report.replaced:
        click.echo(f"superseded {old} by {report.ids[0]}")


@archival.command(name="delete")
@click.argument("passage_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def archival_delete(ctx: click.Context, passage_id: str, yes: bool) -> None:
    """Delete one passage."""
    agent = _agent(ctx)
    passage = agent.archival.get(passage_id)
    if not yes:
        confirm_or_stop(f"Delete {passage_id}: {passage.text[:60]!r}?")
    agent.archival.delete(passage_id)
    click.echo(f"deleted {passage_id}")


@archival.command(name="load")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--tag", "tags", multiple=True, help="A tag for every passage (repeatable).")
@click.pass_context
def archival_load(ctx: click.Context, path: Path, tags: tuple[str, ...]) -> None:
    """Load a text file, or every text file in a folder, into archival memory."""
    from rich.console import Console
    from rich.progress import Progress

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
    from memgpt_lite.agent.setup import embedder_for

    agent = _agent(ctx)
    spec = spec or agent.state.settings.embedder
    if not spec:
        raise click.ClickException("no embedder: pass --embedder local or endpoint:MODEL")
    embedder = embedder_for(spec, agent.process_settings, base_url=agent.state.llm.base_url)
    done = agent.archival.reembed(embedder)
    click.echo(
        f"re-embedded {done} passages with {embedder.name}; messages follow at their next search"
    )
