"""A real MCP server for the tests, written with the `mcp` SDK's `MCPServer`
(what 1.x called FastMCP), run as a process of its own:

    python tests/support/mcp_server.py stdio
    python tests/support/mcp_server.py http PORT     # streamable HTTP at /mcp on 127.0.0.1

Its tools echo, add, fail (the tool's error), refuse (a protocol error),
hang, crash the process, tell its pid, an environment variable and a request
header, return an image, and upper-case a text (`text.upper`, a name the
chat completions API does not allow).
`start_http_server` runs the HTTP variant for a test.

What it lists can change between its starts: with MCP_TEST_CHANGES naming a
JSON file, {"hide": [tool names], "describe": {tool name: description}} is
read from it at start (a missing file changes nothing).
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
from mcp import MCPError
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import INVALID_PARAMS, CallToolResult, ImageContent, TextContent

F = TypeVar("F", bound=Callable[..., Any])

SCRIPT = Path(__file__).resolve()
# A 1x1 PNG, for a result that is not text.
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


def stdio_command() -> tuple[str, list[str]]:
    """The command and arguments that start this server on stdio."""
    return sys.executable, [str(SCRIPT), "stdio"]


def build(changes: dict[str, Any] | None = None) -> MCPServer:
    changes = changes or {}
    server = MCPServer("memgpt-lite-tests")

    def tool(name: str | None = None) -> Callable[[F], F]:
        def register(function: F) -> F:
            described = changes.get("describe", {}).get(name or function.__name__)
            return server.tool(name=name, description=described)(function)

        return register

    @tool()
    def echo(text: str) -> str:
        """Say the text back."""
        return text

    @tool()
    def add(a: int, b: int) -> int:
        """Add two whole numbers."""
        return a + b

    @tool()
    def fail(reason: str) -> str:
        """Always fails, with the reason given."""
        raise ToolError(f"failed on purpose: {reason}")

    @tool()
    def refuse(reason: str) -> str:
        """Always answers with a protocol error (JSON-RPC), not a tool error."""
        raise MCPError(code=INVALID_PARAMS, message=f"refused: {reason}")

    @tool()
    async def hang(seconds: float) -> str:
        """Wait that many seconds before answering."""
        await anyio.sleep(seconds)
        return "woke up"

    @tool()
    def crash() -> str:
        """End the server's process at once, answering nothing."""
        print("crashing on purpose", file=sys.stderr, flush=True)
        os._exit(3)

    @tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @tool()
    def env(name: str) -> str:
        """An environment variable of the server, or <unset>."""
        return os.environ.get(name, "<unset>")

    @tool()
    def header(name: str, ctx: Context) -> str:
        """A header of the HTTP request that carried this call, or <none>."""
        return (ctx.headers or {}).get(name.lower(), "<none>")

    @tool()
    def picture() -> CallToolResult:
        """A caption and a tiny image."""
        image = ImageContent(data=base64.b64encode(PIXEL).decode(), mime_type="image/png")
        return CallToolResult(content=[TextContent(text="a single pixel"), image])

    @tool("text.upper")
    def upper(text: str) -> str:
        """The text in capitals."""
        return text.upper()

    for name in changes.get("hide", []):
        server.remove_tool(name)
    return server


def read_changes() -> dict[str, Any]:
    path = os.environ.get("MCP_TEST_CHANGES")
    if not path or not Path(path).exists():
        return {}
    return json.loads(Path(path).read_text(encoding="utf-8"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def start_http_server() -> Iterator[str]:
    """This server on streamable HTTP, in a process on a free port of
    127.0.0.1; yields its URL, and stops it after."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the test MCP server exited with {process.returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the test MCP server did not listen in 60 s") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(30)


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        build(read_changes()).run("stdio")
    else:
        build(read_changes()).run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
