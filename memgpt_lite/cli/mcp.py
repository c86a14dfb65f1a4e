"""`memgpt-lite mcp ...`: MCP (the Model Context Protocol), both ways.

`mcp add/list/tools/refresh/remove` configure the MCP servers whose tools
agents use (agent/mcp_servers.py, through the workspace): a server's tools
are registered with the tool registry and attached with `tools attach`.
`mcp serve` offers this database's agents to an MCP client over stdio
(server/mcp_agents.py): Claude Desktop, Claude Code, Cursor or any MCP
client starts it as a command and talks to the agents through its tools.
What the commands run (the workspace, the SDK) is imported by the commands
themselves, so that `--help` stays fast.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from memgpt_lite.cli.base import print_rows, workspace_for
from memgpt_lite.cli.scripting import BadInput
from memgpt_lite.cli.tools import user_option
from memgpt_lite.errors import validation_messages

if TYPE_CHECKING:
    from memgpt_lite.agent.mcp_servers import MCPSync
    from memgpt_lite.models import MCPServer

# Steps of different agents that may run at once for one MCP client.
STDIO_STEP_THREADS = 4


@click.group()
def mcp() -> None:
    """MCP: give agents the tools of MCP servers, and offer your agents to
    MCP clients (Claude Desktop, Cursor, ...).

    A server's tools are registered when it is added; give one to an agent
    with `memgpt-lite tools attach AGENT TOOL`. `serve` mounts the agents'
    MCP tools at /mcp (streamable HTTP), behind its API keys.

    Example: memgpt-lite mcp add clock -- uvx mcp-server-time
    """


def _pairs(pairs: Sequence[str], what: str) -> dict[str, str]:
    """`K=V` options as a mapping; BadInput for one without its `=`."""
    found: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise BadInput(f"{what} {pair!r} is not NAME=VALUE")
        found[key] = value
    return found


def _address(server: MCPServer) -> str:
    """Where a server is, for people (secrets shown as ***)."""
    from memgpt_lite.agent.mcp_servers import redacted_server

    shown = redacted_server(server)
    if shown.transport == "http":
        return str(shown.url)
    return shlex.join([str(shown.command), *shown.args])


def _secrets(server: MCPServer) -> str:
    """The names of a server's variables or headers, their values hidden."""
    names = [*server.env, *server.headers]
    return ", ".join(f"{name}=***" for name in names) or "-"


@mcp.command(name="add")
@click.argument("name")
@click.argument("command", nargs=-1, metavar="[-- COMMAND ARGS...]")
@click.option("--url", help="A streamable HTTP server's URL, instead of a COMMAND.")
@click.option("--env", "env", multiple=True, metavar="NAME=VALUE", help="For a COMMAND's server.")
@click.option("--header", "headers", multiple=True, metavar="NAME=VALUE", help="For a --url.")
@user_option
@click.pass_context
def mcp_add(
    ctx: click.Context,
    name: str,
    command: tuple[str, ...],
    url: str | None,
    env: tuple[str, ...],
    headers: tuple[str, ...],
    user: str,
) -> None:
    """Add MCP server NAME, started as COMMAND ARGS... (stdio) or reached at
    --url (streamable HTTP), and register its tools.

    The server is started (or reached) to list its tools: one that cannot
    be is an error, and nothing is added. A tool is named as the server
    names it, or NAME__TOOL when that name is taken or not a valid tool
    name. The server's environment holds only a few variables of yours
    (PATH, HOME, ...) and the --env ones. Values of --env and --header are
    never shown: put secrets there, not in ARGS.

    \b
    Examples:
      memgpt-lite mcp add clock -- uvx mcp-server-time --local-timezone UTC
      memgpt-lite mcp add docs --url https://mcp.example.com/mcp \\
        --header "Authorization=Bearer ..."
    """
    from pydantic import ValidationError

    from memgpt_lite.models import MCPServer

    if bool(command) == bool(url):
        raise BadInput("give a COMMAND after --, or --url (one of them)")
    if url and env:
        raise BadInput("--env is for a server started as a COMMAND; an --url takes --header")
    if command and headers:
        raise BadInput("--header is for an --url; a COMMAND's server takes --env")
    fields = (
        {"transport": "http", "url": url, "headers": _pairs(headers, "--header")}
        if url
        else {
            "transport": "stdio",
            "command": command[0],
            "args": list(command[1:]),
            "env": _pairs(env, "--env"),
        }
    )
    try:
        server = MCPServer.model_validate({"name": name, "owner": user, **fields})
    except ValidationError as exc:
        raise BadInput(validation_messages(exc)) from None
    added = workspace_for(ctx).mcp.add_server(server)
    tools = added.tools
    click.echo(
        f"Added MCP server {name!r} ({server.transport}: {_address(server)}) with "
        f"{len(tools)} tool{'' if len(tools) == 1 else 's'}: {', '.join(tools) or 'none'}."
    )
    _notes(added)
    if tools:
        click.echo(
            f"Give one to an agent with: memgpt-lite tools attach AGENT {tools[0]}", err=True
        )


def _notes(sync: MCPSync) -> None:
    """What an add or refresh did not do as asked, on stderr."""
    for remote, why in sync.skipped.items():
        click.echo(f"Not registered: the server's tool {remote!r}: {why}.", err=True)
    for tool, agents in sync.vanished.items():
        click.echo(
            f"Tool {tool!r} is no longer listed by the server; kept, as agent"
            f"{'s' if len(agents) > 1 else ''} {', '.join(agents)} "
            f"{'have' if len(agents) > 1 else 'has'} it (its calls fail): detach it, then "
            "refresh again to remove it.",
            err=True,
        )


@mcp.command(name="list")
@user_option
@click.pass_context
def mcp_list(ctx: click.Context, user: str) -> None:
    """List the MCP servers: name, transport, command or URL, the names of
    its --env or --header values (never the values), and how many tools it
    has registered (`memgpt-lite mcp tools NAME` lists them).

    When the output is piped, each server is one tab-separated line.
    """
    listed = workspace_for(ctx).mcp.list_servers(owner=user)
    if not listed:
        click.echo("No MCP servers. Add one with: memgpt-lite mcp add NAME -- COMMAND ARGS...")
        return
    columns = [("name", "left"), ("transport", "left"), ("command or URL", "left")]
    columns += [("secrets", "left"), ("tools", "right")]
    rows = [
        [
            status.server.name,
            status.server.transport,
            _address(status.server),
            _secrets(status.server),
            str(len(status.tools)),
        ]
        for status in listed
    ]
    print_rows(columns, rows)


@mcp.command(name="tools")
@click.argument("name")
@user_option
@click.pass_context
def mcp_server_tools(ctx: click.Context, name: str, user: str) -> None:
    """List the tools of MCP server NAME: the name agents call it by (the
    server's own, or NAME__TOOL), the server's name for it, its
    description, and the agents it is attached to.

    When the output is piped, each tool is one tab-separated line.
    """
    from memgpt_lite.agent.mcp_servers import remote_name

    listed = workspace_for(ctx).mcp.server_tools(name, owner=user)
    if not listed:
        click.echo(f"MCP server {name!r} has no tools registered.")
        return
    columns = [("name", "left"), ("on the server", "left"), ("description", "left")]
    rows = [
        [
            tool.name,
            remote_name(tool),
            " ".join(tool.description.split()) or "-",
            ", ".join(agents) or "-",
        ]
        for tool, agents in listed
    ]
    print_rows([*columns, ("agents", "left")], rows)


@mcp.command(name="refresh")
@click.argument("name")
@user_option
@click.pass_context
def mcp_refresh(ctx: click.Context, name: str, user: str) -> None:
    """Start MCP server NAME afresh, list its tools again, and register what
    changed: new tools are added, changed ones updated, vanished ones
    removed (one still attached to an agent stays, and is named)."""
    done = workspace_for(ctx).mcp.refresh_server(name, owner=user)
    parts = [
        f"{len(names)} {what}" + (f" ({', '.join(names)})" if names and what != "unchanged" else "")
        for what, names in (
            ("added", done.added),
            ("updated", done.updated),
            ("removed", done.removed),
            ("unchanged", done.unchanged),
        )
        if names
    ]
    click.echo(f"Refreshed MCP server {name!r}: {', '.join(parts) or 'no tools'}.")
    _notes(done)


@mcp.command(name="remove")
@click.argument("name")
@user_option
@click.pass_context
def mcp_remove(ctx: click.Context, name: str, user: str) -> None:
    """Remove MCP server NAME and its tools. A server with a tool attached to
    an agent is not removed: the error names them; detach them first."""
    removed = workspace_for(ctx).mcp.remove_server(name, owner=user)
    click.echo(
        f"Removed MCP server {name!r} and its {len(removed)} "
        f"tool{'' if len(removed) == 1 else 's'}."
    )


@mcp.command(name="serve")
@click.pass_context
def mcp_serve(ctx: click.Context) -> None:
    """Offer the database's agents to an MCP client over stdio.

    An MCP client starts this command and talks to it on its standard input
    and output. Its tools: list_agents, send_message(agent, message) (the
    agent's reply), read_memory(agent) (its core memory blocks) and
    search_memory(agent, query) (its past messages and archival passages).
    The agents' model endpoint is the environment's (OPENAI_BASE_URL,
    OPENAI_API_KEY) or an agent's own, as for `memgpt-lite send`.

    Example, in an MCP client's configuration:
    {"command": "memgpt-lite", "args": ["--db", "/home/me/agents.db", "mcp", "serve"]}
    """
    from memgpt_lite.tools.mcp.config import MCP_EXTRA

    try:
        from memgpt_lite.server.mcp_agents import WorkspaceAccess, agents_mcp_server
    except ImportError:
        raise click.ClickException(MCP_EXTRA) from None
    from memgpt_lite.server.steps import StepRunner

    workspace = workspace_for(ctx)  # opened (and upgraded) here, or one line of error
    steps = StepRunner(STDIO_STEP_THREADS)
    try:
        agents_mcp_server(WorkspaceAccess(workspace, steps)).run("stdio")
    finally:
        steps.close()
