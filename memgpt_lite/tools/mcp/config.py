"""How to reach one MCP server: a command to start (stdio) or a URL (streamable HTTP).

`MCPServerParams` is what the client (connections.py) needs of a server's
configuration. The tool registry stores the same fields as the `MCPServer`
model; until that model is here, callers build these with `stdio_server` or
`http_server`, and then pass the stored configurations instead (a
`MCPServer` has every attribute this protocol reads).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol
from urllib.parse import urlsplit

from memgpt_lite.errors import ConfigError

Transport = Literal["stdio", "http"]

# What to tell when the SDK is missing (this module does not import it, so
# the edges can import this one to say so).
MCP_EXTRA = 'MCP needs its extra: pip install "memgpt-lite[mcp]"'


class MCPServerParams(Protocol):
    """A named MCP server: `command`, `args` and `env` for stdio; `url` and
    `headers` for streamable HTTP."""

    @property
    def name(self) -> str: ...
    @property
    def transport(self) -> Transport: ...
    @property
    def command(self) -> str | None: ...
    @property
    def args(self) -> Sequence[str]: ...
    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def url(self) -> str | None: ...
    @property
    def headers(self) -> Mapping[str, str]: ...


@dataclass(frozen=True)
class ServerParams:
    """An `MCPServerParams` given in code (see the module's doc)."""

    name: str
    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


def stdio_server(
    name: str,
    command: str,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> ServerParams:
    """A server started as `command args...`, spoken to over its stdin and
    stdout. Its environment is a few safe variables of ours (PATH, HOME,
    USER, ...) and `env`: never our secrets."""
    server = ServerParams(name, "stdio", command=command, args=tuple(args), env=dict(env or {}))
    check_server(server)
    return server


def http_server(name: str, url: str, headers: Mapping[str, str] | None = None) -> ServerParams:
    """A server at `url` (streamable HTTP), sent `headers` with each request."""
    server = ServerParams(name, "http", url=url, headers=dict(headers or {}))
    check_server(server)
    return server


def check_server(server: MCPServerParams) -> None:
    """A ConfigError naming what is missing or wrong in a server's configuration."""
    if not server.name.strip():
        raise ConfigError("an MCP server needs a name")
    if server.transport == "stdio":
        if not (server.command or "").strip():
            raise ConfigError(f"MCP server {server.name!r}: a stdio server needs a command")
        return
    if server.transport != "http":
        raise ConfigError(
            f"MCP server {server.name!r}: unknown transport {server.transport!r} (stdio or http)"
        )
    parts = urlsplit(server.url or "")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"MCP server {server.name!r}: the URL must be http:// or https://, got {server.url!r}"
        )


def same_server(one: MCPServerParams, other: MCPServerParams) -> bool:
    """Whether two configurations start or reach the same server."""
    return (
        one.transport == other.transport
        and one.command == other.command
        and list(one.args) == list(other.args)
        and dict(one.env) == dict(other.env)
        and one.url == other.url
        and dict(one.headers) == dict(other.headers)
    )
