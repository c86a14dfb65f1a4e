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
refreshed (`mcp_servers.refresh`, or `resync` here).

Adding, changing, removing, testing a server and running its tool by name
do what /v1/mcp-servers/ does (mcp_servers.py), under the same rules: a
stdio server for callers who may run code on the server only, secrets
never answered, another user's server not found. Their bodies are Letta's
older StdioServerConfig and StreamableHTTPServerConfig (`type`, not
`mcp_server_type`), and its Update...MCPServer (a stdio server's in
`stdio_config`).
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import MCPServer, ToolDefinition
from memgpt_lite.server.context import Context, CurrentCaller, ServerContext, User
from memgpt_lite.server.letta.bodies import LettaBody, ToolArgs
from memgpt_lite.server.letta.mcp_servers import (
    ServerConfig,
    ServerFields,
    changed_server,
    new_server,
    require_rights_for,
    sync_view,
    tool_execution_result,
)
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


class OlderConfig(ServerFields):
    """Letta's StdioServerConfig, StreamableHTTPServerConfig and
    SSEServerConfig, told apart by `type` (else by their fields)."""

    server_name: str
    type: Literal["stdio", "streamable_http", "sse"] | None = None

    def config(self) -> ServerConfig:
        given = self.model_dump(exclude_unset=True, exclude={"server_name", "type"})
        return ServerConfig.model_validate({**given, "mcp_server_type": self.type})


class OlderUpdate(LettaBody):
    """Letta's older UpdateStdioMCPServer (`stdio_config`),
    UpdateStreamableHTTPMCPServer and UpdateSSEMCPServer (`token`)."""

    server_name: str | None = None
    stdio_config: OlderConfig | None = None
    server_url: str | None = None
    auth_header: str | None = None
    auth_token: str | None = None
    token: str | None = None
    custom_headers: dict[str, str] | None = None

    def config(self) -> ServerConfig:
        if self.stdio_config is not None:
            return self.stdio_config.model_copy(update={"type": "stdio"}).config()
        given = self.model_dump(
            exclude_none=True, include={"server_url", "auth_header", "auth_token", "custom_headers"}
        )
        if self.token and not self.auth_token:
            given["auth_token"] = self.token
        return ServerConfig.model_validate(given)


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


def _configs(ctx: ServerContext, user: str) -> list[dict[str, Any]]:
    return [_config(status.server) for status in ctx.workspace.mcp.list_servers(owner=user)]


@router.put("/", include_in_schema=False)
@router.put("")
def add_server_by_name(body: OlderConfig, ctx: Context, caller: CurrentCaller) -> list[Any]:
    """Letta's add_mcp_server: the server reached, stored and its tools
    registered, as mcp_servers.create does; the user's servers after."""
    server = new_server(caller.user, body.server_name, body.config())
    require_rights_for(ctx, caller, server, "adding")
    ctx.workspace.mcp.add_server(server)
    return _configs(ctx, caller.user)


@router.post("/test")
def test_server_by_config(body: OlderConfig, ctx: Context, caller: CurrentCaller) -> dict[str, Any]:
    """Letta's test_mcp_server: the server reached as configured and its
    tools listed (a 502 saying why if it cannot be), nothing stored."""
    server = new_server(caller.user, body.server_name, body.config())
    require_rights_for(ctx, caller, server, "testing")
    listed = ctx.workspace.mcp.test_server(server)
    tools = [
        {"name": info.name, "description": info.description, "inputSchema": info.input_schema}
        for info in listed
    ]
    return {"status": "success", "tools": tools}


@router.patch("/{server_name}")
def update_server_by_name(
    server_name: str, body: OlderUpdate, ctx: Context, caller: CurrentCaller
) -> dict[str, Any]:
    """Letta's update_mcp_server: as mcp_servers.update (a server keeps its
    name); the server's configuration after, its secrets left out."""
    stored = ctx.workspace.mcp.get_server(server_name, owner=caller.user)
    server = changed_server(stored, body.config())
    require_rights_for(ctx, caller, server, "changing")
    ctx.workspace.mcp.update_server(stored.id, server, owner=caller.user)
    return _config(ctx.workspace.mcp.get_server(stored.id, owner=caller.user))


@router.delete("/{server_name}")
def delete_server_by_name(server_name: str, ctx: Context, user: User) -> list[Any]:
    """Letta's delete_mcp_server: as mcp_servers.delete (a 409 while a
    tool of it is attached); the user's servers after."""
    server = ctx.workspace.mcp.get_server(server_name, owner=user)
    ctx.workspace.mcp.remove_server(server.id, owner=user)
    return _configs(ctx, user)


@router.post("/{server_name}/resync")
def resync_server_by_name(server_name: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's resync_mcp_server_tools: as mcp_servers.refresh."""
    return sync_view(ctx.workspace.mcp.refresh_server(server_name, owner=user))


@router.post("/{server_name}/tools/{tool_name}/execute")
def execute_tool_by_name(
    server_name: str, tool_name: str, ctx: Context, user: User, body: ToolArgs | None = None
) -> dict[str, Any]:
    """Letta's execute_mcp_tool: the server's tool (as it or our registry
    names it) called now on `args`, outside any agent."""
    args = (body or ToolArgs()).args
    _, result = ctx.workspace.mcp.call_tool(server_name, tool_name, args, owner=user)
    return tool_execution_result(result)


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
