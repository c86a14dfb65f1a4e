"""The tool registry and MCP server configurations, for every backend.

Lists and mappings (a tool's JSON schema, requirements and tags, a server's
arguments, environment and headers) are JSON text in both dialects. A tool
is found by its owner and its name or id (one index: the UNIQUE owner and
name). Whether a tool is attached is read from the owner's agents'
`tool_names` inside the deleting write, so a tool in use is never deleted.
A backend provides nothing more than what the core runs on (core/sql.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from typing import Any

from memgpt_lite.errors import ConflictError, NotFoundError
from memgpt_lite.models import MCPServer, ToolDefinition, utcnow
from memgpt_lite.storage.core.transactions import Transactions, guarded
from memgpt_lite.text import clean_text

_TOOL_COLUMNS = (
    "id",
    "owner",
    "name",
    "description",
    "json_schema",
    "kind",
    "source_code",
    "module",
    "mcp_server",
    "requirements",
    "trusted",
    "created_at",
    "updated_at",
    "tags",
)
_JSON_TOOL_COLUMNS = ("json_schema", "requirements", "tags")
_SERVER_COLUMNS = (
    "id",
    "owner",
    "name",
    "transport",
    "command",
    "args",
    "env",
    "url",
    "headers",
    "created_at",
)
_JSON_SERVER_COLUMNS = ("args", "env", "headers")
# What an update changes: the rest (id, owner, name, created_at) stays.
_SERVER_CONFIG_COLUMNS = ("transport", "command", "args", "env", "url", "headers")
_TOOL_WRITTEN = [c for c in _TOOL_COLUMNS if c not in ("id", "owner", "created_at")]
_FIND = "owner = ? AND (name = ? OR id = ?) ORDER BY name = ? DESC LIMIT 1"


def _insert(table: str, columns: Sequence[str]) -> str:
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


def _tool(row: Sequence[Any]) -> ToolDefinition:
    values = dict(zip(_TOOL_COLUMNS, row, strict=True))
    for column in _JSON_TOOL_COLUMNS:
        values[column] = json.loads(values[column])
    values["trusted"] = bool(values["trusted"])
    return ToolDefinition.model_validate(values)


def _server(row: Sequence[Any]) -> MCPServer:
    values = dict(zip(_SERVER_COLUMNS, row, strict=True))
    for column in _JSON_SERVER_COLUMNS:
        values[column] = json.loads(values[column])
    return MCPServer.model_validate(values)


def _named(names: Iterable[str]) -> str:
    return ", ".join(repr(name) for name in names)


class Tools(Transactions):
    """Registered tools and MCP servers (see `ToolStorage`)."""

    def _tool_values(self, tool: ToolDefinition) -> dict[str, Any]:
        values = tool.model_dump(include=set(_TOOL_COLUMNS))
        for column in _JSON_TOOL_COLUMNS:
            values[column] = json.dumps(values[column], ensure_ascii=False)
        values["created_at"] = self.dialect.time(tool.created_at)
        values["updated_at"] = self.dialect.time(tool.updated_at)
        return values

    def _find_tool(self, owner: str, name_or_id: str, lock: bool = False) -> ToolDefinition:
        key = clean_text(name_or_id)  # from a caller: SQLite cannot bind a lone surrogate
        locking = self.dialect.for_update if lock else ""
        row = self._one(
            f"SELECT {', '.join(_TOOL_COLUMNS)} FROM tools WHERE {_FIND}{locking}",
            [clean_text(owner), key, key, key],
        )
        if row is None:
            raise NotFoundError(f"no tool named {key!r}")
        return _tool(row)

    def _write_tool(self, tool: ToolDefinition) -> None:
        """Write every field of the stored tool `tool.id` but its id, owner
        and creation, moving `updated_at` strictly forward. In a transaction."""
        tool.updated_at = max(utcnow(), tool.updated_at + timedelta(microseconds=1))
        values = self._tool_values(tool)
        with self.refusing_duplicates(f"a tool named {tool.name!r} already exists"):
            self._execute(
                f"UPDATE tools SET {', '.join(f'{c} = ?' for c in _TOOL_WRITTEN)} WHERE id = ?",
                [*(values[c] for c in _TOOL_WRITTEN), tool.id],
            )

    @guarded
    def add_tool(self, tool: ToolDefinition) -> None:
        values = self._tool_values(tool)
        with self.refusing_duplicates(f"a tool named {tool.name!r} (or id {tool.id!r}) exists"):
            self._execute(_insert("tools", _TOOL_COLUMNS), [values[c] for c in _TOOL_COLUMNS])

    @guarded
    def upsert_tool(self, tool: ToolDefinition) -> ToolDefinition:
        with self.transaction():
            try:
                stored = self._find_tool(tool.owner, tool.name, lock=True)
            except NotFoundError:
                self.add_tool(tool)
                return tool
            if stored.name != tool.name:  # its id was asked for, not its name
                self.add_tool(tool)
                return tool
            replaced = tool.model_copy(update={"id": stored.id, "created_at": stored.created_at})
            replaced.updated_at = stored.updated_at
            self._write_tool(replaced)
        return replaced

    @guarded
    def get_tool(self, owner: str, name_or_id: str) -> ToolDefinition:
        return self._find_tool(owner, name_or_id)

    @guarded
    def list_tools(self, owner: str | None = None) -> list[ToolDefinition]:
        where, params = ("", []) if owner is None else ("WHERE owner = ? ", [clean_text(owner)])
        rows = self._all(
            f"SELECT {', '.join(_TOOL_COLUMNS)} FROM tools {where}ORDER BY name, owner", params
        )
        return [_tool(row) for row in rows]

    @guarded
    def update_tool(
        self, owner: str, name_or_id: str, change: Callable[[ToolDefinition], object]
    ) -> ToolDefinition:
        with self.transaction():
            tool = self._find_tool(owner, name_or_id, lock=True)
            kept = (tool.id, tool.owner, tool.created_at)
            change(tool)
            tool.id, tool.owner, tool.created_at = kept
            self._write_tool(tool)
        return tool

    def _refuse_attached(self, owner: str, names: Sequence[str], what: str) -> None:
        """ConflictError naming the owner's agents that have one of `names`
        attached (in a write, so that the check holds until it commits)."""
        rows = self._all(
            f"SELECT name, tool_names FROM agents WHERE owner = ?{self.dialect.for_update}",
            [owner],
        )
        users = sorted(name for name, tools in rows if set(json.loads(tools)) & set(names))
        if users:
            raise ConflictError(
                f"{what} is attached to agent{'s' if len(users) > 1 else ''} {_named(users)}; "
                "detach it first (memgpt-lite tools detach AGENT TOOL); nothing was deleted"
            )

    @guarded
    def delete_tool(self, owner: str, name_or_id: str) -> None:
        with self.transaction():
            tool = self._find_tool(owner, name_or_id, lock=True)
            self._refuse_attached(tool.owner, [tool.name], f"tool {tool.name!r}")
            self._execute("DELETE FROM tools WHERE id = ?", [tool.id])

    @guarded
    def add_mcp_server(self, server: MCPServer) -> None:
        values = server.model_dump(include=set(_SERVER_COLUMNS))
        for column in _JSON_SERVER_COLUMNS:
            values[column] = json.dumps(values[column], ensure_ascii=False)
        values["created_at"] = self.dialect.time(server.created_at)
        message = f"an MCP server named {server.name!r} (or id {server.id!r}) exists"
        with self.refusing_duplicates(message):
            self._execute(
                _insert("mcp_servers", _SERVER_COLUMNS), [values[c] for c in _SERVER_COLUMNS]
            )

    @guarded
    def get_mcp_server(self, owner: str, name_or_id: str) -> MCPServer:
        key = clean_text(name_or_id)
        row = self._one(
            f"SELECT {', '.join(_SERVER_COLUMNS)} FROM mcp_servers WHERE {_FIND}",
            [clean_text(owner), key, key, key],
        )
        if row is None:
            raise NotFoundError(f"no MCP server named {key!r}")
        return _server(row)

    @guarded
    def list_mcp_servers(self, owner: str | None = None) -> list[MCPServer]:
        where, params = ("", []) if owner is None else ("WHERE owner = ? ", [clean_text(owner)])
        rows = self._all(
            f"SELECT {', '.join(_SERVER_COLUMNS)} FROM mcp_servers {where}ORDER BY name, owner",
            params,
        )
        return [_server(row) for row in rows]

    @guarded
    def update_mcp_server(self, server: MCPServer) -> None:
        values = server.model_dump(include=set(_SERVER_CONFIG_COLUMNS))
        for column in _JSON_SERVER_COLUMNS:
            values[column] = json.dumps(values[column], ensure_ascii=False)
        with self.transaction():
            self.get_mcp_server(server.owner, server.id)  # NotFoundError for another's
            assignments = ", ".join(f"{column} = ?" for column in _SERVER_CONFIG_COLUMNS)
            self._execute(
                f"UPDATE mcp_servers SET {assignments} WHERE id = ? AND owner = ?",
                [*(values[c] for c in _SERVER_CONFIG_COLUMNS), server.id, server.owner],
            )

    @guarded
    def delete_mcp_server(self, owner: str, name_or_id: str) -> None:
        with self.transaction():
            server = self.get_mcp_server(owner, name_or_id)
            where = "owner = ? AND kind = 'mcp' AND mcp_server = ?"
            tools = [
                row[0]
                for row in self._all(
                    f"SELECT name FROM tools WHERE {where}", [server.owner, server.name]
                )
            ]
            self._refuse_attached(server.owner, tools, f"a tool of MCP server {server.name!r}")
            self._execute(f"DELETE FROM tools WHERE {where}", [server.owner, server.name])
            self._execute("DELETE FROM mcp_servers WHERE id = ?", [server.id])
