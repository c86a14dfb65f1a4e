"""`memgpt-lite export` and `memgpt-lite import`: move a whole agent between
machines, and bring agents over from Letta (`.af` files).

The agent file modules (agentfile/) read and write whole agents in the
workspace's database. They load numpy, pydantic and the store: imported by
the commands, so that `--help` stays fast (see `base.py`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from memgpt_lite.cli.base import workspace_for
from memgpt_lite.cli.scripting import BadInput

if TYPE_CHECKING:
    from memgpt_lite.agent.workspace import Workspace
    from memgpt_lite.agentfile.native import ImportReport


@click.command(name="export")
@click.argument("name")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, allow_dash=True),  # kept as given: any bytes
    help='File to write (default: NAME.json, or NAME.af for Letta); "-" writes to standard output.',
)
@click.option("--force", is_flag=True, help="Replace the output file if it exists.")
@click.option(
    "--format",
    "file_format",
    type=click.Choice(["memgpt_lite", "letta"]),
    default="memgpt_lite",
    show_default=True,
    help="Our format, or Letta's agent file format (.af) to take the agent back to Letta.",
)
@click.pass_context
def export_command(
    ctx: click.Context, name: str, output: str | None, force: bool, file_format: str
) -> None:
    """Export agent NAME, whole, to a JSON file: blocks, every message, the
    context window, summary, its other conversations (each with its
    messages, window and summary), archival passages with their vectors,
    settings, model config, system prompt and custom tool names. The API key
    is never written, and custom tools are exported by name only.

    Example: memgpt-lite export sam -o sam.json
    """
    from memgpt_lite.agentfile.native import export_agent, write_agent_file

    workspace = workspace_for(ctx)
    if file_format == "letta":
        _export_letta(workspace, name, output, force)
        return
    if output == "-":
        click.echo(export_agent(workspace.store, name).model_dump_json(indent=2))
        return
    path = Path(output or f"{name}.json")
    if path.exists() and not force:
        raise click.ClickException(f"{path} already exists; use --force to replace it")
    data = write_agent_file(workspace.store, name, path, overwrite=True)
    others = data.conversations
    conversations = (
        f"{len(others)} more conversations ({sum(len(c.messages) for c in others)} messages), "
        if others
        else ""
    )
    click.echo(
        f"Exported agent {name!r} to {click.format_filename(path)}: {len(data.blocks)} blocks, "
        f"{len(data.messages)} messages, {conversations}{len(data.passages)} passages."
    )
    carried = {tool.name for tool in data.tools}
    by_name = [name for name in data.tool_names if name not in carried]
    if carried:
        click.echo(
            f"Its registered tools ({', '.join(sorted(carried))}) are exported with their code; "
            "an import registers them not trusted (import --trust-tools trusts them).",
            err=True,
        )
    if by_name:
        click.echo(
            f"Its custom tools ({', '.join(by_name)}) are exported by name only: "
            "give them to Agent.load where you import it.",
            err=True,
        )


def _export_letta(workspace: Workspace, name: str, output: str | None, force: bool) -> None:
    from memgpt_lite.agentfile.letta_export import export_letta, write_letta_file

    store = workspace.store
    if output == "-":
        click.echo(json.dumps(export_letta(store, name), indent=2, ensure_ascii=False))
        return
    path = Path(output or f"{name}.af")
    if path.exists() and not force:
        raise click.ClickException(f"{path} already exists; use --force to replace it")
    data = write_letta_file(store, name, path, overwrite=True)
    agent = data["agents"][0]
    click.echo(
        f"Exported agent {name!r} to {click.format_filename(path)} in Letta's format: "
        f"{len(data['blocks'])} blocks, {len(agent['messages'])} messages "
        "(Letta's system prompt message included), "
        f"{len(agent['passages'])} passages."
    )
    by_name = [
        t["name"] for t in data["tools"] if t["tool_type"] == "custom" and t["source_code"] is None
    ]
    if by_name:
        click.echo(
            f"Its custom tools ({', '.join(by_name)}) are exported by name only: "
            "Letta needs their code.",
            err=True,
        )
    if agent["passages"]:
        click.echo(
            "Letta's agent files have no place for archival passages: they are kept in the "
            "agent's 'passages', which memgpt-lite reads back but Letta ignores.",
            err=True,
        )
    others = store.list_conversations(store.get_agent(name).id)
    if others:
        click.echo(
            "Letta's agent files have no place for an agent's other conversations: only "
            f"its default one is written, not the {len(others)} others (our format keeps them).",
            err=True,
        )


@click.command(name="import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--name", help="Name for the new agent (default: the name in the file).")
@click.option("--agent", "letta_agent", help="Which agent of a Letta file holding several.")
@click.option(
    "--all",
    "every_agent",
    is_flag=True,
    help="Every agent of a Letta file, each under its own name; blocks they share stay shared.",
)
@click.option(
    "--embedder",
    help='Re-embed archival passages with "local" or "endpoint:MODEL" (default: the '
    "file's vectors).",
)
@click.option(
    "--trust-tools",
    is_flag=True,
    help="Trust the tools the file carries with their code: agents may run them at once.",
)
@click.pass_context
def import_command(
    ctx: click.Context,
    file: Path,
    name: str | None,
    letta_agent: str | None,
    every_agent: bool,
    embedder: str | None,
    trust_tools: bool,
) -> None:
    """Import an agent from FILE: a file written by `memgpt-lite export`, or a
    Letta agent file (.af). The new agent gets fresh ids, so a file can be
    imported again under another name. Nothing is stored if anything fails.

    Tools the file carries with their code are registered (see `memgpt-lite
    tools list`) but not trusted: a call of one is an error until you read
    it (`tools show NAME`) and trust it (`tools trust NAME`), unless you
    import with --trust-tools.

    Example: memgpt-lite import sam.json --name sam2
    """
    from memgpt_lite.agentfile.native import import_agent, import_every_agent

    if every_agent and (name or letta_agent):
        raise BadInput("--all imports every agent under its own name: drop --name and --agent")
    store = workspace_for(ctx).store
    if every_agent:
        for report in import_every_agent(store, file, embedder=embedder, trust_tools=trust_tools):
            _said(report, file)
        return
    report = import_agent(
        store, file, name=name, embedder=embedder, letta_agent=letta_agent, trust_tools=trust_tools
    )
    _said(report, file)


def _said(report: ImportReport, file: Path) -> None:
    """What an import stored, on stdout, and its notes on stderr."""
    kind = "Letta agent" if report.source == "letta" else "agent"
    conversations = (
        f"{report.conversations} more conversations ({report.conversation_messages} messages), "
        if report.conversations
        else ""
    )
    click.echo(
        f"Imported {kind} {report.name!r} from {click.format_filename(file)}: "
        f"{report.blocks} blocks, "
        f"{report.messages} messages ({report.messages_in_context} in context), "
        f"{conversations}{report.passages} passages ({report.vectors} with vectors)."
    )
    for note in report.notes:
        click.echo(f"note: {note}", err=True)
