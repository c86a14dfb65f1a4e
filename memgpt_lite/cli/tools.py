"""`memgpt-lite tools ...`: the tool registry (agent/tool_registry.py,
through the workspace). The workspace and what it loads are imported by the
commands that run, so that `--help` stays fast (see `base.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from memgpt_lite.cli.base import print_rows, workspace_for
from memgpt_lite.cli.scripting import BadInput

if TYPE_CHECKING:
    from memgpt_lite.models import ToolDefinition

DEFAULT_USER = "local"  # memgpt_lite.models.DEFAULT_USER, without loading pydantic

user_option = click.option(
    "--user",
    default=DEFAULT_USER,
    show_default=True,
    help="Whose registry: each user of `memgpt-lite serve` has one.",
)


@click.group()
def tools() -> None:
    """Register tools, from Python source or a module, and give them to agents.

    Each call of a registered tool runs in a process of its own, with a
    time and memory limit, an empty folder and none of your secrets in its
    environment: this contains faults, not hostile code.

    Example: memgpt-lite tools add weather.py && memgpt-lite tools attach sam weather
    """


@tools.command(name="add")
@click.argument(
    "file", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option(
    "--module", "reference", metavar="PKG.MOD:FUNC", help="An importable function instead of FILE."
)
@click.option(
    "--name",
    help="The tool's name (default: its function's); picks the function of that name in FILE.",
)
@click.option("--replace", is_flag=True, help="Replace a registered tool of that name.")
@user_option
@click.pass_context
def tools_add(
    ctx: click.Context,
    file: Path | None,
    reference: str | None,
    name: str | None,
    replace: bool,
    user: str,
) -> None:
    """Register the tool in FILE.py: one public function with type hints and
    a docstring (its `Args:` describe the parameters), read as `@tool` reads
    it. Pip requirements go in a module-level list, checked before each call
    and never installed: `__requirements__ = ["requests>=2.31"]`.

    Its schema is read in a process of its own, which runs FILE. With
    --module, the function is imported from a module instead (it must be
    importable where the agents run).

    Example: memgpt-lite tools add weather.py --name forecast
    """
    from memgpt_lite.agent.tool_registry import read_source

    if (file is None) == (reference is None):
        raise BadInput("give a FILE.py or --module PKG.MOD:FUNC (one of them)")
    registry = workspace_for(ctx).tools
    if reference is not None:
        tool = registry.add_module(reference, name=name, owner=user, replace=replace)
    else:
        assert file is not None
        what = f"the tool in {click.format_filename(file)}"
        source = read_source(file)
        tool = registry.add_source(source, name=name, owner=user, what=what, replace=replace)
    click.echo(f"Registered tool {tool.name!r}: {tool.description or '(no description)'}")
    click.echo(f"Give it to an agent with: memgpt-lite tools attach AGENT {tool.name}", err=True)


def _source(tool: ToolDefinition) -> str:
    if tool.kind == "module":
        return str(tool.module)
    if tool.kind == "mcp":
        return f"MCP server {tool.mcp_server}"
    return f"source, {len((tool.source_code or '').splitlines())} lines"


@tools.command(name="list")
@user_option
@click.pass_context
def tools_list(ctx: click.Context, user: str) -> None:
    """List the registered tools: name, kind, source, trusted, agents using it.

    When the output is piped, each tool is one tab-separated line.
    """
    listed = workspace_for(ctx).tools.listed(user)
    if not listed:
        click.echo("No registered tools. Add one with: memgpt-lite tools add FILE.py")
        return
    columns = [("name", "left"), ("kind", "left"), ("source", "left"), ("trusted", "left")]
    rows = [
        [t.name, t.kind, _source(t), "yes" if t.trusted else "no", ", ".join(agents) or "-"]
        for t, agents in listed
    ]
    print_rows([*columns, ("agents", "left")], rows)


@tools.command(name="show")
@click.argument("tool")
@user_option
@click.pass_context
def tools_show(ctx: click.Context, tool: str, user: str) -> None:
    """Show registered tool TOOL: what the model is told, its requirements,
    and its source code (read it before you trust a tool)."""
    import json

    found = workspace_for(ctx).tools.get(tool, user)
    click.echo(f"name: {found.name}\nkind: {found.kind} ({_source(found)})")
    click.echo(
        f"trusted: {'yes' if found.trusted else 'no (memgpt-lite tools trust ' + found.name + ')'}"
    )
    click.echo(f"description: {found.description}")
    click.echo(f"requirements: {', '.join(found.requirements) or '-'}")
    parameters = found.json_schema.get("parameters", {})
    click.echo(f"parameters: {json.dumps(parameters, indent=2, ensure_ascii=False)}")
    if found.source_code:
        click.echo(f"source:\n{found.source_code.rstrip()}")


@tools.command(name="attach")
@click.argument("agent")
@click.argument("names", metavar="TOOL...", nargs=-1, required=True)
@click.pass_context
def tools_attach(ctx: click.Context, agent: str, names: tuple[str, ...]) -> None:
    """Give agent AGENT the registered tools TOOL... (its owner's): the
    model sees them from its next step on."""
    state = workspace_for(ctx).tools.attach(agent, names)
    click.echo(f"Agent {state.name!r} has tools: {', '.join(state.tool_names)}.")


@tools.command(name="detach")
@click.argument("agent")
@click.argument("names", metavar="TOOL...", nargs=-1, required=True)
@click.pass_context
def tools_detach(ctx: click.Context, agent: str, names: tuple[str, ...]) -> None:
    """Take the tools TOOL... from agent AGENT (they stay registered)."""
    state = workspace_for(ctx).tools.detach(agent, names)
    left = ", ".join(state.tool_names) or "none but its built-in ones"
    click.echo(f"Agent {state.name!r} has tools: {left}.")


@tools.command(name="remove")
@click.argument("tool")
@user_option
@click.pass_context
def tools_remove(ctx: click.Context, tool: str, user: str) -> None:
    """Delete registered tool TOOL. A tool attached to agents is not deleted:
    the error names them; detach it first."""
    workspace_for(ctx).tools.remove(tool, user)
    click.echo(f"Removed tool {tool!r}.")


@tools.command(name="trust")
@click.argument("tool")
@user_option
@click.pass_context
def tools_trust(ctx: click.Context, tool: str, user: str) -> None:
    """Let registered tool TOOL run: one that came in an imported agent file
    is not trusted until then, and each call of it is an error the model
    reads. Read it first: memgpt-lite tools show TOOL."""
    trusted = workspace_for(ctx).tools.trust(tool, user)
    click.echo(f"Tool {trusted.name!r} is trusted: agents may call it.")
