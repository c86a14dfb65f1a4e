"""How the client names and compares MCP servers.

A server is a `memgpt_lite.models.MCPServer`, the registry's own model:
`command`, `args` and `env` for stdio, `url` and `headers` for streamable
HTTP, checked when it is made. The registry stores it and hands it to the
client as it is; code builds one the same way:

    MCPServer(name="time", transport="stdio", command="uvx", args=["mcp-server-time"])
"""

from __future__ import annotations

from memgpt_lite.models import MCPServer

# What to tell when the SDK is missing (this module does not import it, so
# the edges and the tool registry can import this one to say so).
MCP_EXTRA = "MCP needs its extra: pip install 'memgpt-lite[mcp]'"

# A server's key among a process's sessions: its owner and name, as two
# users may each have a server of one name.
ServerKey = tuple[str, str]


def server_key(server: MCPServer) -> ServerKey:
    return server.owner, server.name


def same_server(one: MCPServer, other: MCPServer) -> bool:
    """Whether two configurations start or reach the same server."""
    return (
        one.transport == other.transport
        and one.command == other.command
        and list(one.args) == list(other.args)
        and dict(one.env) == dict(other.env)
        and one.url == other.url
        and dict(one.headers) == dict(other.headers)
    )
