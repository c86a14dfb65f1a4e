"""`memgpt-lite mcp ...`: MCP (the Model Context Protocol).

`mcp serve` offers this database's agents to an MCP client over stdio
(server/mcp_agents.py): Claude Desktop, Claude Code, Cursor or any MCP
client starts it as a command and talks to the agents through its tools.
The SDK is imported by the command itself, so that `--help` stays fast.
"""

from __future__ import annotations

import click

from memgpt_lite.cli.base import workspace_for

# Steps of different agents that may run at once for one MCP client.
STDIO_STEP_THREADS = 4


@click.group()
def mcp() -> None:
    """MCP: offer your agents to MCP clients (Claude Desktop, Cursor, ...).

    `serve` mounts the same tools at /mcp (streamable HTTP), behind its API keys.
    """


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
