"""Letta's MCP server routes (/v1/mcp-servers/): create, list, retrieve,
delete, a server's tools, refresh. Through the application layer's
`workspace.mcp` (agent/mcp_servers.py), as `memgpt-lite mcp ...` does.

Creating a server reaches it and registers its tools for the user, who
attaches them to agents like any other tool (agents.tools.attach). A stdio
server is a command the server's machine runs: only a caller who may run
code on the server may add one (context.py). A streamable HTTP server
follows the rule of an agent's model endpoint: only a URL the server allows
(`serve --allow-endpoint`, config.toml's `allow_endpoints`: endpoints.py),
checked before it is reached, and sent only the headers the client gave,
never anything of the server's (as an agent's base URL gets the server's
model key only if it is the server's own endpoint). SSE servers are refused (their transport is
deprecated; streamable HTTP replaces it).

An `env` or header value (a key, a token) is never answered back: every
answer shows `***` in its place (`redacted_server`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter
from pydantic import Field, ValidationError

from memgpt_lite.agent.mcp_servers import MCPSync, redacted_server
from memgpt_lite.errors import ConfigError, NotFoundError, validation_messages
from memgpt_lite.models import MCPServer
from memgpt_lite.server.context import (
    Caller,
    Context,
    CurrentCaller,
    ServerContext,
    User,
    require_code_rights,
)
from memgpt_lite.server.letta.bodies import LettaBody, ToolArgs
from memgpt_lite.server.letta.tool_views import registered_view

if TYPE_CHECKING:
    from memgpt_lite.tools.mcp.results import MCPCallResult

router = APIRouter(prefix="/v1/mcp-servers", tags=["letta"])


class ServerFields(LettaBody):
    """What Letta's bodies for a stdio, streamable HTTP or SSE server may
    give, in its current routes (`ServerConfig`) and its older ones by name."""

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] | None = None
    server_url: str | None = None
    auth_header: str | None = None
    auth_token: str | None = None
    custom_headers: dict[str, str] | None = None


class ServerConfig(ServerFields):
    """Letta's CreateStdioMCPServer, CreateStreamableHTTPMCPServer and
    CreateSSEMCPServer, told apart by `mcp_server_type` (else by their fields)."""

    mcp_server_type: Literal["stdio", "streamable_http", "sse"] | None = None

    def kind(self) -> str:
        return self.mcp_server_type or ("stdio" if self.command else "streamable_http")

    def headers(self) -> dict[str, str]:
        """The headers to send: the custom ones, and the token under its
        header (Authorization by default, as a Bearer token unless it says
        its scheme)."""
        headers = dict(self.custom_headers or {})
        if self.auth_token:
            name = self.auth_header or "Authorization"
            token = self.auth_token
            if name.lower() == "authorization" and " " not in token.strip():
                token = f"Bearer {token.strip()}"
            headers[name] = token
        return headers


class CreateServer(LettaBody):
    server_name: str
    config: ServerConfig


class UpdateServer(LettaBody):
    """Letta's UpdateMCPServerRequest: what to change of a server's
    configuration (a field left out stays as it is)."""

    server_name: str | None = None
    config: ServerConfig


def new_server(user: str, name: str, config: ServerConfig) -> MCPServer:
    """Our MCPServer for Letta's configuration; a 422 naming what is wrong."""
    kind = _refuse_sse(config)
    fields: dict[str, Any] = {"transport": "http", "url": config.server_url}
    fields["headers"] = config.headers()
    if kind == "stdio":
        fields = {"transport": "stdio", "command": config.command, "args": config.args}
        fields["env"] = config.env or {}
    return _built(user, name, fields)


def changed_server(stored: MCPServer, config: ServerConfig) -> MCPServer:
    """`stored` with what `config` gives changed: on the same transport, a
    field left out (or null) stays; `env` and `args` are replaced whole;
    `custom_headers` replaces the headers but the token's, `auth_token`
    sets the token's. On another transport, only what `config` gives."""
    named = config.mcp_server_type or config.command or config.server_url
    kind = _refuse_sse(config) if named else _KINDS[stored.transport]
    same = _KINDS[stored.transport] == kind
    given = config.model_fields_set
    if kind == "stdio":
        fields: dict[str, Any] = {
            "transport": "stdio",
            "command": config.command or (stored.command if same else None),
            "args": config.args if "args" in given or not same else stored.args,
            "env": config.env if config.env is not None or not same else stored.env,
        }
        return _built(stored.owner, stored.name, fields)
    headers = dict(stored.headers) if same else {}
    if config.custom_headers is not None:
        token_header = (config.auth_header or "Authorization").lower()
        headers = {k: v for k, v in headers.items() if k.lower() == token_header}
    headers.update(config.headers())
    url = config.server_url or (stored.url if same else None)
    return _built(stored.owner, stored.name, {"transport": "http", "url": url, "headers": headers})


_KINDS = {"stdio": "stdio", "http": "streamable_http"}


def _refuse_sse(config: ServerConfig) -> str:
    kind = config.kind()
    if kind == "sse":
        raise ConfigError(
            "config.mcp_server_type: SSE servers are not supported; give the server's "
            "streamable HTTP URL (mcp_server_type 'streamable_http')"
        )
    return kind


def _built(user: str, name: str, fields: dict[str, Any]) -> MCPServer:
    try:
        return MCPServer(owner=user, name=name, **fields)
    except ValidationError as exc:
        raise ConfigError(f"cannot use the MCP server: {validation_messages(exc)}") from None


def require_rights_for(ctx: ServerContext, caller: Caller, server: MCPServer, doing: str) -> None:
    """Before the server is reached: a stdio server runs a command on the
    server's machine, a 403 unless the caller may run code there; an HTTP
    server's URL must be one of the endpoints the server allows, as an
    agent's model endpoint must (endpoints.py): a 403 naming the rule."""
    if server.transport == "stdio":
        require_code_rights(caller, f"{doing} a stdio MCP server")
    else:
        ctx.check_endpoint(server.url, "server_url")


def server_view(server: MCPServer) -> dict[str, Any]:
    """A server as Letta's StdioMCPServer or StreamableHTTPMCPServer, its
    secrets shown as `***`."""
    shown = redacted_server(server)
    if shown.transport == "stdio":
        return {
            "id": shown.id,
            "server_name": shown.name,
            "mcp_server_type": "stdio",
            "command": shown.command,
            "args": shown.args,
            "env": shown.env,
        }
    return {
        "id": shown.id,
        "server_name": shown.name,
        "mcp_server_type": "streamable_http",
        "server_url": shown.url,
        "auth_header": None,
        "auth_token": None,
        "custom_headers": shown.headers,
    }


def sync_view(sync: MCPSync) -> dict[str, Any]:
    """What adding or refreshing a server did to its tools, by name."""
    return {
        "added": sync.added,
        "updated": sync.updated,
        "unchanged": sync.unchanged,
        "deleted": sync.removed,
        "kept_attached": sync.vanished,
        "skipped": sync.skipped,
    }


@router.post("/", include_in_schema=False)
@router.post("")
def create_server(body: CreateServer, ctx: Context, caller: CurrentCaller) -> dict[str, Any]:
    """Letta's mcp_create_mcp_server: the server reached (a 502 if it
    cannot be), stored, and its tools registered for the user."""
    server = new_server(caller.user, body.server_name, body.config)
    require_rights_for(ctx, caller, server, "adding")
    return server_view(ctx.workspace.mcp.add_server(server).server)


@router.get("/", include_in_schema=False)
@router.get("")
def list_servers(ctx: Context, user: User) -> list[dict[str, Any]]:
    """Letta's mcp_list_mcp_servers: the user's servers, by name."""
    return [server_view(status.server) for status in ctx.workspace.mcp.list_servers(owner=user)]


@router.get("/{mcp_server_id}")
def retrieve_server(mcp_server_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's mcp_retrieve_mcp_server, by id (or name)."""
    return server_view(ctx.workspace.mcp.get_server(mcp_server_id, owner=user))


@router.patch("/{mcp_server_id}")
def update_server(
    mcp_server_id: str, body: UpdateServer, ctx: Context, caller: CurrentCaller
) -> dict[str, Any]:
    """Letta's mcp_update_mcp_server: the server reached as changed (a 502,
    changing nothing, if it cannot be) and its tools registered again, as
    a refresh does. A server keeps its name: its tools are named after it."""
    stored = ctx.workspace.mcp.get_server(mcp_server_id, owner=caller.user)
    if body.server_name not in (None, stored.name):
        raise ConfigError(
            f"server_name: an MCP server keeps its name ({stored.name!r}); "
            "create one of the new name and delete this one"
        )
    server = changed_server(stored, body.config)
    require_rights_for(ctx, caller, server, "changing")
    ctx.workspace.mcp.update_server(stored.id, server, owner=caller.user)
    return server_view(ctx.workspace.mcp.get_server(stored.id, owner=caller.user))


@router.delete("/{mcp_server_id}")
def delete_server(mcp_server_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's mcp_delete_mcp_server, with its tools; a 409 naming the
    agents while one of its tools is attached."""
    server = ctx.workspace.mcp.get_server(mcp_server_id, owner=user)
    ctx.workspace.mcp.remove_server(server.id, owner=user)
    return {"message": f"MCP server id={server.id} successfully deleted"}


@router.get("/{mcp_server_id}/tools")
def list_server_tools(mcp_server_id: str, ctx: Context, user: User) -> list[dict[str, Any]]:
    """Letta's mcp_list_tools_for_mcp_server: its registered tools, by name."""
    cap = ctx.workspace.settings.tools.result_max_chars
    listed = ctx.workspace.mcp.server_tools(mcp_server_id, owner=user)
    return [registered_view(tool, cap) for tool, _ in listed]


@router.get("/{mcp_server_id}/tools/{tool_id}")
def retrieve_server_tool(
    mcp_server_id: str, tool_id: str, ctx: Context, user: User
) -> dict[str, Any]:
    """Letta's mcp_retrieve_mcp_tool: one of the server's tools, by id or name."""
    cap = ctx.workspace.settings.tools.result_max_chars
    for tool, _ in ctx.workspace.mcp.server_tools(mcp_server_id, owner=user):
        if tool_id in (tool.id, tool.name):
            return registered_view(tool, cap)
    raise NotFoundError(f"MCP server {mcp_server_id!r} has no tool {tool_id!r}")


@router.patch("/{mcp_server_id}/refresh")
def refresh_server(
    mcp_server_id: str,
    ctx: Context,
    user: User,
    agent_id: str | None = None,
) -> dict[str, Any]:
    """Letta's mcp_refresh_mcp_server_tools: the server started afresh and
    its tools listed again; new ones registered, changed ones updated,
    vanished ones deleted (one still attached is kept: `kept_attached`
    names its agents). `agent_id` is accepted and changes nothing: an
    agent's attached tools are refreshed with the server's."""
    return sync_view(ctx.workspace.mcp.refresh_server(mcp_server_id, owner=user))


@router.post("/{mcp_server_id}/tools/{tool_id}/run")
def run_server_tool(
    mcp_server_id: str, tool_id: str, ctx: Context, user: User, body: ToolArgs | None = None
) -> dict[str, Any]:
    """Letta's mcp_run_tool: the server's tool called now on `args`,
    outside any agent, as Letta's ToolExecutionResult (`func_return`: what
    a model would read; `status` "error" for the tool's error)."""
    args = (body or ToolArgs()).args
    _, result = ctx.workspace.mcp.call_tool(mcp_server_id, tool_id, args, owner=user)
    return tool_execution_result(result)


def tool_execution_result(result: MCPCallResult) -> dict[str, Any]:
    """An MCP tool's call as Letta's ToolExecutionResult."""
    return {
        "status": "success" if result.ok else "error",
        "func_return": result.text,
        "agent_state": None,
        "stdout": [],
        "stderr": [],
        "sandbox_config_fingerprint": None,
    }
