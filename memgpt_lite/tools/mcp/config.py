"""How the client names and compares MCP servers.

A server is a `memgpt_lite.models.MCPServer`, the registry's own model:
`command`, `args` and `env` for stdio, `url` and `headers` for streamable
HTTP, checked when it is made. The registry stores it and hands it to the
client as it is; code builds one the same way:

    MCPServer(name="time", transport="stdio", command="uvx", args=["mcp-server-time"])
"""

from __future__ import annotations

import hashlib
import re

from memgpt_lite.models import MCPServer
from memgpt_lite.tools.sets import BUILT_IN_NAMES

# What to tell when the SDK is missing (this module does not import it, so
# the edges and the tool registry can import this one to say so).
MCP_EXTRA = "MCP needs its extra: pip install 'memgpt-lite[mcp]'"

# A server's key among a process's sessions: its owner and name, as two
# users may each have a server of one name.
ServerKey = tuple[str, str]

_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_NOT_IN_TOOL_NAMES = re.compile(r"[^a-zA-Z0-9_-]")
MAX_TOOL_NAME = 64


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


def mcp_tool_name(server: str, remote: str, taken: set[str]) -> str | None:
    """What an agent calls the tool `remote` of server `server`: its own
    name, unless that is not a tool name (1-64 letters, digits, '_' or '-':
    MCP allows more, such as dots), is a built-in tool's or is in `taken`;
    then `SERVER__TOOL`, each other character '_' (cut to 64 with a hash of
    the whole). None if that is taken too."""
    if _TOOL_NAME.match(remote) and remote not in taken and remote not in BUILT_IN_NAMES:
        return remote
    prefixed = _NOT_IN_TOOL_NAMES.sub("_", f"{server}__{remote}")
    if len(prefixed) > MAX_TOOL_NAME:  # kept apart from others cut alike by the hash
        digest = hashlib.sha256(prefixed.encode()).hexdigest()[:8]
        prefixed = f"{prefixed[: MAX_TOOL_NAME - 9]}_{digest}"
    if prefixed in taken or prefixed in BUILT_IN_NAMES:
        return None
    return prefixed
