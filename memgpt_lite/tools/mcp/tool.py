"""An MCP server's tool as an ordinary `Tool` (tools/schema.py).

Its schema is the server's input schema, plus MemGPT's `request_heartbeat`;
a call goes to the server through the process's connections
(connections.py), so it runs outside this process. Everything the loop
does with a tool applies as to any other: approvals (`requires_approval`,
or a tool rule), tool rules, truncation of the result, and a failure that
is the call's result (the server's error, a server that cannot start, a
call past its timeout), after which the model acts again as after
`ModelRetry`.

The arguments are checked here only as far as our side needs: a JSON
object. Their schema is the server's, so the server checks them, and its
error is what the model reads.

A registered tool (kind "mcp", `ToolDefinition`) becomes an `MCPTool`
through `registered_mcp_tool`, with the schema the registry stored: the
server is not contacted until the tool's first call.
"""

from __future__ import annotations

import copy
from typing import Any

from memgpt_lite.errors import ConfigError
from memgpt_lite.models import MCPServer, ToolDefinition
from memgpt_lite.text import JSONProblem, clean_text, parse_arguments
from memgpt_lite.tools.external import failing_tool, origin_of
from memgpt_lite.tools.mcp.config import mcp_tool_name
from memgpt_lite.tools.mcp.connections import (
    DEFAULT_CALL_TIMEOUT,
    MCPConnections,
    MCPServerError,
    shared_connections,
)
from memgpt_lite.tools.mcp.results import MCPToolInfo
from memgpt_lite.tools.schema import (
    HEARTBEAT_DESCRIPTION,
    HEARTBEAT_PARAM,
    Tool,
    ToolContext,
    ToolOutcome,
    truncate,
)


class MCPTool(Tool):
    """A tool of an MCP server (see the module's doc). `name` is what the
    model calls it (the server's own name by default, which must then be
    1-64 letters, digits, '_' or '-'); `timeout` bounds each call; `origin`
    says where it comes from, for people (`/tools`)."""

    def __init__(
        self,
        server: MCPServer,
        listed: MCPToolInfo,
        *,
        name: str | None = None,
        timeout: float = DEFAULT_CALL_TIMEOUT,
        requires_approval: bool = False,
        connections: MCPConnections | None = None,
        origin: str | None = None,
    ) -> None:
        if timeout <= 0:
            raise ConfigError(f"MCP tool {listed.name}: the timeout must be positive")
        self.server = server
        self.origin = origin or f"MCP server {server.name}"
        self.remote_name = listed.name
        self.timeout = timeout
        self.connections = connections or shared_connections()
        self._input_schema = _object_schema(listed)
        described = listed.description or f"The tool {listed.name} of MCP server {server.name}."
        super().__init__(
            self._call_now,
            name=name or listed.name,
            description=described,
            requires_approval=requires_approval,
        )

    def __repr__(self) -> str:
        return f"MCPTool({self.name!r}, server={self.server.name!r})"

    def _build_schema(self) -> dict[str, Any]:
        parameters = copy.deepcopy(self._input_schema)
        properties = parameters.setdefault("properties", {})
        if HEARTBEAT_PARAM in properties:
            raise ConfigError(
                f"MCP tool {self.remote_name} of {self.server.name!r} has its own "
                f"{HEARTBEAT_PARAM}, which the agent adds for itself: give it another name"
            )
        properties[HEARTBEAT_PARAM] = {"type": "boolean", "description": HEARTBEAT_DESCRIPTION}
        parameters["required"] = [*parameters.get("required", []), HEARTBEAT_PARAM]
        function: dict[str, Any] = {"name": self.name, "parameters": parameters}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}

    def _call_now(self, arguments: dict[str, Any]) -> str:
        """A call from code (`tool(arguments={...})`): the result's text, or
        its error raised as an MCPServerError."""
        result = self.connections.call_tool(self.server, self.remote_name, arguments, self.timeout)
        if not result.ok:
            raise MCPServerError(result.text)
        return result.text

    async def arun(
        self, context: ToolContext, arguments: str, max_chars: int, *, in_thread: bool = True
    ) -> ToolOutcome:
        """The call, sent to the server and awaited (no thread needed: the
        connections' own loop does the work)."""
        try:
            given = parse_arguments(arguments)
        except JSONProblem as exc:
            return ToolOutcome(
                f"Error: the arguments could not be used: {exc}. Call {self.name} again "
                "with a JSON object that matches its schema.",
                ok=False,
            )
        heartbeat = given.pop(HEARTBEAT_PARAM, False) is True
        result = await self.connections.acall_tool(
            self.server, self.remote_name, given, self.timeout
        )
        content = truncate(clean_text(result.text), max_chars)
        return ToolOutcome(content, ok=result.ok, heartbeat=heartbeat)


def _object_schema(listed: MCPToolInfo) -> dict[str, Any]:
    schema = listed.input_schema
    if schema.get("type") != "object":
        raise ConfigError(
            f"MCP tool {listed.name}: its input schema is not a JSON object schema "
            f"(type {schema.get('type')!r})"
        )
    return schema


def mcp_tools(
    server: MCPServer,
    *,
    timeout: float = DEFAULT_CALL_TIMEOUT,
    connections: MCPConnections | None = None,
) -> list[MCPTool]:
    """Every tool the server lists, as tools for an agent (the server is
    started to list them, and kept); `MCPServerError` if it cannot be. Each
    is named as the server names it, or `SERVER__TOOL` where that is no
    tool name or is taken (`mcp_tool_name`)."""
    connections = connections or shared_connections()
    tools: list[MCPTool] = []
    for info in connections.list_tools(server, timeout):
        name = mcp_tool_name(server.name, info.name, {tool.name for tool in tools})
        if name is None:
            raise ConfigError(f"MCP server {server.name!r} lists two tools named {info.name!r}")
        tools.append(MCPTool(server, info, name=name, timeout=timeout, connections=connections))
    return tools


def registered_mcp_tool(
    definition: ToolDefinition,
    server: MCPServer,
    *,
    timeout: float,
    connections: MCPConnections | None = None,
) -> Tool:
    """The `MCPTool` of a registered tool of `server`, from what the registry
    stored (the server is reached at its first call only): the model calls it
    `definition.name`; the server knows it by its schema's name. A stored
    schema the tool cannot take is the error of each call, not a failure to
    build the agent."""
    schema = definition.json_schema
    parameters = schema.get("parameters") or {"type": "object", "properties": {}}
    listed = MCPToolInfo(
        str(schema.get("name") or definition.name), definition.description, parameters
    )
    try:
        return MCPTool(
            server,
            listed,
            name=definition.name,
            timeout=timeout,
            connections=connections,
            origin=origin_of(definition),
        )
    except ConfigError as exc:
        return failing_tool(definition, str(exc))
