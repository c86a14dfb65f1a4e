"""MCP servers as the command line and the server use them
(`workspace.mcp`): add a user's server, list the servers and their tools,
refresh a server's tools, remove a server.

Adding a server reaches it (a stdio server is started, an HTTP one
connected) and lists its tools; one that cannot be reached is a one-line
`MCPServerError`, and nothing is stored. Each tool it lists is registered
for the server's owner as a tool of kind "mcp", trusted (the user chose to
run the server), and attached to agents like any other tool
(`workspace.tools.attach`). Its name is the server's name for it, unless
that is not a valid tool name (1-64 letters, digits, '_' or '-'), is a
built-in tool's, or is taken by another of the owner's tools: then it is
`SERVER__TOOL` (characters a tool name cannot hold become '_'). A tool keeps
its name for good; the server's name for it is its schema's `name`.

`refresh_server` starts the server afresh and lists its tools again: new
ones are registered, changed ones (description, input schema) updated,
vanished ones deleted, but a vanished tool attached to an agent stays (each
call of it is then the server's error) and the result says so. A server
whose tools are attached is not removed: the error names the tools and
agents.

The values of a server's `env` and `headers` are secrets (keys, tokens):
everything here returns servers as stored, and what shows one to a person
or a client shows `redacted_server(server)`.

The MCP client (tools/mcp/, the `mcp` extra) is imported by what reaches a
server, so a workspace costs nothing more for those who use no MCP server;
without the extra, those calls are a ConfigError naming it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from memgpt_lite.errors import AlreadyExistsError, ConfigError, ConflictError, NotFoundError
from memgpt_lite.models import MCPServer, ToolDefinition
from memgpt_lite.settings.values import Settings
from memgpt_lite.storage.protocol import Storage
from memgpt_lite.tools.mcp.config import MCP_EXTRA, mcp_tool_name

if TYPE_CHECKING:
    from memgpt_lite.tools.mcp.connections import MCPConnections
    from memgpt_lite.tools.mcp.results import MCPCallResult, MCPToolInfo

# What a secret's value is shown as.
REDACTED = "***"
_CONNECTIONS_MODULE = "memgpt_lite.tools.mcp.connections"


def redacted_server(server: MCPServer) -> MCPServer:
    """A copy of `server` to show (listings, the HTTP routes' answers): each
    value of `env` and `headers` is `***` (their names stay), and so are a
    password and the query's values in its URL. Only for showing: never
    store it or reach the server with it."""
    return server.model_copy(
        update={
            "env": dict.fromkeys(server.env, REDACTED),
            "headers": dict.fromkeys(server.headers, REDACTED),
            "url": _redacted_url(server.url),
        }
    )


def _redacted_url(url: str | None) -> str | None:
    if url is None:
        return None
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{parts.username or ''}:{REDACTED}@{netloc.rpartition('@')[2]}"
    query = parse_qsl(parts.query, keep_blank_values=True)
    hidden = urlencode([(key, REDACTED) for key, _ in query], safe="*")
    return urlunsplit(parts._replace(netloc=netloc, query=hidden))


@dataclass
class MCPServerStatus:
    """A server as listed: as stored (show it with `redacted_server`),
    whether this process has it running now, and its tools' names."""

    server: MCPServer
    running: bool
    tools: list[str]


@dataclass
class MCPSync:
    """What adding or refreshing a server did to its registered tools, by
    their names: `added`, `updated` (description or schema changed),
    `unchanged`, `removed` (no longer listed), `vanished` (no longer listed
    but attached: kept, with the agents using them), and `skipped` (the
    server's tools that could not be registered, by the server's name for
    them, with why)."""

    server: MCPServer
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    vanished: dict[str, list[str]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def tools(self) -> list[str]:
        """The names of the server's tools registered now that it lists."""
        return sorted([*self.added, *self.updated, *self.unchanged])


def remote_name(tool: ToolDefinition) -> str:
    """The server's name for a registered MCP tool (its schema's name)."""
    return str(tool.json_schema.get("name") or tool.name)


def _of_server(tool: ToolDefinition, server: str) -> bool:
    return tool.kind == "mcp" and tool.mcp_server == server


class MCPServers:
    """The MCP servers of one database (see the module's doc). `connections`
    are the process's (`shared_connections()`) unless given."""

    def __init__(
        self, store: Storage, settings: Settings, connections: MCPConnections | None = None
    ) -> None:
        self.store = store
        self.settings = settings
        self._connections = connections

    def connections(self) -> MCPConnections:
        """The MCP client's connections (the SDK is loaded here); a ConfigError
        naming the `mcp` extra when it is not installed."""
        if self._connections is None:
            try:
                from memgpt_lite.tools.mcp.connections import shared_connections
            except ModuleNotFoundError as exc:
                if exc.name is None or exc.name.partition(".")[0] != "mcp":
                    raise
                raise ConfigError(MCP_EXTRA) from None
            self._connections = shared_connections()
        return self._connections

    def add_server(self, server: MCPServer) -> MCPSync:
        """Store `server` for its owner with the tools it lists, registered
        (see the module's doc). AlreadyExistsError if the owner has a server
        of its name; MCPServerError, storing nothing, if it cannot be reached."""
        try:
            self.store.get_mcp_server(server.owner, server.name)
        except NotFoundError:
            pass
        else:
            raise AlreadyExistsError(
                f"an MCP server named {server.name!r} already exists; remove it first "
                f"(memgpt-lite mcp remove {server.name}) or choose another name"
            )
        connections = self.connections()
        try:
            listed = connections.list_tools(server, self.settings.tools.timeout_seconds)
            with self.store.transaction():
                self.store.add_mcp_server(server)
                return self._sync(server, listed)
        except BaseException:
            connections.stop(server)  # nothing stored: nothing left running either
            raise

    def refresh_server(self, name: str, *, owner: str) -> MCPSync:
        """Start the owner's server `name` afresh (a call of its tools under
        way in this process fails), list its tools again, and register what
        changed (see the module's doc); MCPServerError if it cannot be reached."""
        server = self.get_server(name, owner=owner)
        connections = self.connections()
        connections.stop(server)  # the server as it is now: a new version, a changed list
        listed = connections.list_tools(server, self.settings.tools.timeout_seconds)
        with self.store.transaction():
            return self._sync(server, listed)

    def update_server(self, name: str, changed: MCPServer, *, owner: str) -> MCPSync:
        """Give the owner's server `name` the configuration of `changed`
        (its transport, command, args, env, URL, headers; its id, name and
        owner stay): the server is reached as changed and its tools listed
        again, registered as `refresh_server` does. MCPServerError, storing
        nothing, if it cannot be reached as changed."""
        stored = self.get_server(name, owner=owner)
        server = changed.model_copy(
            update={
                "id": stored.id,
                "owner": stored.owner,
                "name": stored.name,
                "created_at": stored.created_at,
            }
        )
        connections = self.connections()
        connections.stop(stored)  # a call under way on the old configuration fails
        try:
            listed = connections.list_tools(server, self.settings.tools.timeout_seconds)
            with self.store.transaction():
                self.store.update_mcp_server(server)
                return self._sync(server, listed)
        except BaseException:
            connections.stop(server)  # the old configuration starts again when used
            raise

    def test_server(self, server: MCPServer) -> list[MCPToolInfo]:
        """The tools `server` lists, reached for this alone: nothing is
        stored, and it is stopped after (a stored server of its owner and
        name starts again when used). MCPServerError if it cannot be reached."""
        connections = self.connections()
        try:
            return connections.list_tools(server, self.settings.tools.timeout_seconds)
        finally:
            connections.stop(server)

    def call_tool(
        self, name: str, tool: str, arguments: dict[str, Any], *, owner: str
    ) -> tuple[ToolDefinition, MCPCallResult]:
        """Call the owner's server `name`'s registered tool `tool` (its id,
        its name, or the server's name for it) outside any agent: the tool's
        record and the call's result or error. NotFoundError for a tool the
        server has not registered (refreshing it registers new ones)."""
        server = self.get_server(name, owner=owner)
        for known, _ in self.server_tools(server.id, owner=owner):
            if tool in (known.id, known.name, remote_name(known)):
                result = self.connections().call_tool(
                    server, remote_name(known), arguments, self.settings.tools.timeout_seconds
                )
                return known, result
        raise NotFoundError(
            f"MCP server {server.name!r} has no tool {tool!r}; refresh the server "
            "if it added one since"
        )

    def get_server(self, name: str, *, owner: str) -> MCPServer:
        """The owner's server of this name or id, as stored (secrets too)."""
        return self.store.get_mcp_server(owner, name)

    def list_servers(self, *, owner: str) -> list[MCPServerStatus]:
        """The owner's servers by name, each with its status and tools."""
        tools = self.store.list_tools(owner)
        return [
            MCPServerStatus(
                server,
                self._running(server),
                [tool.name for tool in tools if _of_server(tool, server.name)],
            )
            for server in self.store.list_mcp_servers(owner)
        ]

    def server_tools(self, name: str, *, owner: str) -> list[tuple[ToolDefinition, list[str]]]:
        """The owner's server `name`'s registered tools by name, each with the
        names of the agents it is attached to."""
        server = self.get_server(name, owner=owner)
        agents = [state for state, _ in self.store.list_agents(owner=owner)]
        return [
            (tool, [agent.name for agent in agents if tool.name in agent.tool_names])
            for tool in self.store.list_tools(owner)
            if _of_server(tool, server.name)
        ]

    def remove_server(self, name: str, *, owner: str) -> list[str]:
        """Delete the owner's server `name` and its tools (their names are
        returned), and stop it if it runs here. A ConflictError, deleting
        nothing, naming the tools attached to agents and those agents."""
        server = self.get_server(name, owner=owner)
        tools = self.server_tools(name, owner=owner)
        attached = [(tool, agents) for tool, agents in tools if agents]
        if attached:
            named = "; ".join(f"{tool.name} ({', '.join(agents)})" for tool, agents in attached)
            raise ConflictError(
                f"MCP server {server.name!r} has tools attached to agents: {named}; detach "
                "them first (memgpt-lite tools detach AGENT TOOL); nothing was deleted"
            )
        self.store.delete_mcp_server(owner, server.id)
        if self._running(server):
            self.connections().stop(server)
        return [tool.name for tool, _ in tools]

    def _running(self, server: MCPServer) -> bool:
        # A process that never loaded the client has no server running.
        if self._connections is None and _CONNECTIONS_MODULE not in sys.modules:
            return False
        return self.connections().is_running(server)

    def _sync(self, server: MCPServer, listed: list[MCPToolInfo]) -> MCPSync:
        """Register what `server` lists now (in the caller's transaction)."""
        owner_tools = self.store.list_tools(server.owner)
        mine = {remote_name(t): t for t in owner_tools if _of_server(t, server.name)}
        taken = {tool.name for tool in owner_tools}
        sync = MCPSync(server)
        seen: set[str] = set()
        for info in listed:
            if info.name in seen:
                sync.skipped[info.name] = "the server lists two tools of this name"
                continue
            seen.add(info.name)
            known = mine.get(info.name)
            name = known.name if known else mcp_tool_name(server.name, info.name, taken)
            if name is None:
                sync.skipped[info.name] = "its name and the server's prefixed one are taken"
                continue
            problem = self._unusable(server, info, name)
            if problem:
                sync.skipped[info.name] = problem
            elif known is None:
                self.store.add_tool(_definition(server, info, name))
                taken.add(name)
                sync.added.append(name)
            else:
                self._update(known, _definition(server, info, name), sync)
        self._forget_vanished(server, [t for remote, t in mine.items() if remote not in seen], sync)
        return sync

    def _unusable(self, server: MCPServer, info: MCPToolInfo, name: str) -> str | None:
        """Why an agent could not take the tool (its schema), or None."""
        from memgpt_lite.tools.mcp.tool import MCPTool

        try:
            MCPTool(server, info, name=name, connections=self.connections())
        except ConfigError as exc:
            return str(exc)
        return None

    def _update(self, known: ToolDefinition, listed: ToolDefinition, sync: MCPSync) -> None:
        fields = ("description", "json_schema", "trusted")
        if all(getattr(known, f) == getattr(listed, f) for f in fields):
            sync.unchanged.append(known.name)
            return

        def changed(stored: ToolDefinition) -> None:
            for name in fields:
                setattr(stored, name, getattr(listed, name))

        self.store.update_tool(known.owner, known.name, changed)
        sync.updated.append(known.name)

    def _forget_vanished(
        self, server: MCPServer, vanished: list[ToolDefinition], sync: MCPSync
    ) -> None:
        if not vanished:
            return
        agents = [state for state, _ in self.store.list_agents(owner=server.owner)]
        for tool in vanished:
            users = [agent.name for agent in agents if tool.name in agent.tool_names]
            if users:
                sync.vanished[tool.name] = users
            else:
                self.store.delete_tool(server.owner, tool.name)
                sync.removed.append(tool.name)


def _definition(server: MCPServer, info: MCPToolInfo, name: str) -> ToolDefinition:
    schema: dict[str, Any] = {"name": info.name, "parameters": info.input_schema}
    if info.description:
        schema["description"] = info.description
    return ToolDefinition(
        name=name,
        owner=server.owner,
        description=info.description,
        json_schema=schema,
        kind="mcp",
        mcp_server=server.name,
        trusted=True,
    )
