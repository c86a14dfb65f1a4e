"""Letta's older MCP routes, which name a server by its name
(/v1/tools/mcp/servers/...): the user's servers, a server's tools, and a
tool's Tool record. Letta Code finds a server's tools and attaches them
through these: it lists the tools by the server's name, asks for each one's
Tool (Letta registers it then), and attaches that Tool's id to the agent.

A server's tools are registered for its user when it is added or refreshed
(mcp_servers.py), so the list is of those, each under the name the MCP
server gives it (a registered tool may be named `SERVER__TOOL`, see
agent/mcp_servers.py), and asking for a tool's record answers the one
registered; a tool the server added since is found once the server is
refreshed (`mcp_servers.refresh`). Adding, changing and removing servers go
through /v1/mcp-servers/.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import MCPServer, ToolDefinition
from memgpt_lite.server.context import Context, ServerContext, User
from memgpt_lite.server.letta.tool_views import registered_view

router = APIRouter(prefix="/v1/tools/mcp/servers", tags=["letta"])


def _config(server: MCPServer) -> dict[str, Any]:
    """A server as Letta's older StdioServerConfig or
    StreamableHTTPServerConfig (its secrets left out)."""
    if server.transport == "stdio":
        return {
            "server_name": server.name,
            "type": "stdio",
            "command": server.command,
            "args": server.args,
        }
    return {"server_name": server.name, "type": "streamable_http", "server_url": server.url}


def _mcp_name(tool: ToolDefinition) -> str:
    """The tool's name on its MCP server (its schema keeps it)."""
    return str(tool.json_schema.get("name") or tool.name)


def _tools(ctx: ServerContext, user: str, server_name: str) -> list[ToolDefinition]:
    return [tool for tool, _ in ctx.workspace.mcp.server_tools(server_name, owner=user)]


@router.get("/", include_in_schema=False)
@router.get("")
def list_servers_by_name(ctx: Context, user: User) -> dict[str, dict[str, Any]]:
    """Letta's list_mcp_servers: the user's servers by name."""
    listed = ctx.workspace.mcp.list_servers(owner=user)
    return {status.server.name: _config(status.server) for status in listed}


@router.get("/{server_name}/tools")
def list_tools_by_server_name(server_name: str, ctx: Context, user: User) -> list[dict[str, Any]]:
    """Letta's list_mcp_tools_by_server: the server's tools as Letta's
    MCPTool (`name` as the MCP server names it, `description`,
    `inputSchema`)."""
    return [
        {
            "name": _mcp_name(tool),
            "description": tool.description,
            "inputSchema": tool.json_schema.get("parameters", {}),
            "health": {"status": "VALID", "reasons": []},
        }
        for tool in _tools(ctx, user, server_name)
    ]


@router.post("/{server_name}/{tool_name}")
def add_tool_by_name(server_name: str, tool_name: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's add_mcp_tool: the server's tool `tool_name` (as the MCP
    server or our registry names it) as Letta's Tool, to attach by id."""
    for tool in _tools(ctx, user, server_name):
        if tool_name in (_mcp_name(tool), tool.name):
            return registered_view(tool, ctx.workspace.settings.tools.result_max_chars)
    raise NotFoundError(
        f"MCP server {server_name!r} has no tool {tool_name!r}; refresh the server "
        "(mcp_servers.refresh) if it added one since"
    )
