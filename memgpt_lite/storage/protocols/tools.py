"""The tool registry: the part of `Storage` that keeps each user's tools
(`ToolDefinition`) and MCP server configurations (`MCPServer`).

Names are unique per owner: two users may each have a tool `weather`. Every
method takes the owner, and a tool or server of another owner is not found,
word for word as one that does not exist. An agent uses a tool by name (its
`tool_names`, changed with `update_agent`), so a tool attached to an agent
cannot be deleted until it is detached.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from memgpt_lite.models import MCPServer, ToolDefinition


@runtime_checkable
class ToolStorage(Protocol):
    """Registered tools and MCP servers, per owner."""

    def add_tool(self, tool: ToolDefinition) -> None:
        """Store a new tool. AlreadyExistsError if its owner has a tool of
        that name, or its id is taken."""
        ...

    def upsert_tool(self, tool: ToolDefinition) -> ToolDefinition:
        """Store `tool`, or, when its owner has a tool of that name, replace
        that one's fields with `tool`'s, keeping its id and `created_at`
        (`updated_at` moves on). Returns the tool as stored."""
        ...

    def get_tool(self, owner: str, name_or_id: str) -> ToolDefinition:
        """The owner's tool with this name or id. NotFoundError if there is none."""
        ...

    def list_tools(self, owner: str | None = None) -> list[ToolDefinition]:
        """The owner's tools by name; with no owner, every user's (by name, then owner)."""
        ...

    def update_tool(
        self, owner: str, name_or_id: str, change: Callable[[ToolDefinition], object]
    ) -> ToolDefinition:
        """Apply `change` to the tool as stored now (read inside the write)
        and store the result; returns it. Its id, owner and `created_at` stay;
        `updated_at` moves on. NotFoundError for an unknown tool,
        AlreadyExistsError if it was renamed to a name its owner uses;
        nothing is stored if `change` raises."""
        ...

    def delete_tool(self, owner: str, name_or_id: str) -> None:
        """Delete the owner's tool. NotFoundError if there is none;
        ConflictError, deleting nothing, naming the owner's agents that have
        it attached."""
        ...

    def add_mcp_server(self, server: MCPServer) -> None:
        """Store a new MCP server. AlreadyExistsError if its owner has one of
        that name, or its id is taken."""
        ...

    def get_mcp_server(self, owner: str, name_or_id: str) -> MCPServer:
        """The owner's MCP server with this name or id. NotFoundError if there is none."""
        ...

    def list_mcp_servers(self, owner: str | None = None) -> list[MCPServer]:
        """The owner's MCP servers by name; with no owner, every user's."""
        ...

    def update_mcp_server(self, server: MCPServer) -> None:
        """Store `server`'s new configuration (transport, command, args, env,
        URL, headers) over its owner's server of its id; its name, owner and
        creation time stay. NotFoundError if the owner has no server of that id."""
        ...

    def delete_mcp_server(self, owner: str, name_or_id: str) -> None:
        """Delete the owner's MCP server and its tools (kind "mcp", naming
        it). NotFoundError if there is none; ConflictError, deleting nothing,
        naming the owner's agents that have one of its tools attached."""
        ...
