"""The cost of one call of an MCP stdio tool, p50 and p95.

    python benchmarks/mcp_call_cost.py [--calls 500]

Two servers, each a process on stdio: `echo`, a one-tool server written
here with the `mcp` SDK (this file, run with `--serve`), where the call
itself costs nothing, so what is timed is the protocol, the pipes and the
two processes; and the published `mcp-server-time` (`get_current_time`).
For each, one call is timed:

- `sdk`: the SDK's own `Client.call_tool`, awaited on the client's event
  loop: the floor, with no thread hop;
- `tool.arun`: an `MCPTool` awaited as a step awaits its tools (from the
  step's event loop, the call handed to the connections' background loop);
- `call_tool`: `MCPConnections.call_tool`, waited for synchronously (as
  `MCPTool.run` and a program's own code do).

Each server starts once for the `sdk` rows and once for the tool rows; the
start (process and handshake) is printed apart. Calls alternate between
the three ways, so that a machine slowing down for a while slows all three.
benchmarks/tool_call_cost.py times in-process and source tools the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ECHO_ARGUMENTS = {"text": "hello"}
TIME_ARGUMENTS = {"timezone": "UTC"}


def serve_echo() -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("echo", log_level="WARNING")

    @server.tool()
    def echo(text: str) -> str:
        """Say the text back."""
        return text

    server.run("stdio")


def servers() -> list[tuple[str, str, list[str], str, dict[str, str]]]:
    """(label, command, args, tool, arguments) of each server timed."""
    here = str(Path(__file__).resolve())
    time_args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
    return [
        ("echo (SDK server)", sys.executable, [here, "--serve"], "echo", ECHO_ARGUMENTS),
        ("mcp-server-time", sys.executable, time_args, "get_current_time", TIME_ARGUMENTS),
    ]


def percentiles(samples: list[float]) -> tuple[float, float]:
    """p50 and p95 of `samples` (seconds), in milliseconds."""
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return cuts[49] * 1000, cuts[94] * 1000


async def timed(call: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await call()
    return time.perf_counter() - started


async def measure(
    command: str, args: list[str], tool: str, arguments: dict[str, str], calls: int
) -> tuple[dict[str, list[float]], dict[str, float]]:
    from mcp import Client, StdioServerParameters

    from memgpt_lite.models import MCPServer
    from memgpt_lite.tools.mcp.connections import MCPConnections
    from memgpt_lite.tools.mcp.tool import mcp_tools
    from memgpt_lite.tools.schema import ToolContext

    samples: dict[str, list[float]] = {"sdk": [], "tool.arun": [], "call_tool": []}
    starts: dict[str, float] = {}
    params = StdioServerParameters(command=command, args=args)
    started = time.perf_counter()
    async with Client(params) as client:
        starts["sdk"] = time.perf_counter() - started
        with MCPConnections() as connections:
            started = time.perf_counter()
            server = MCPServer(name="bench", transport="stdio", command=command, args=args)
            [mcp_tool] = [t for t in mcp_tools(server, connections=connections) if t.name == tool]
            starts["tools"] = time.perf_counter() - started
            encoded = json.dumps(arguments)
            context = ToolContext(deps=None, step_id="bench")  # type: ignore[arg-type]

            async def blocking() -> object:  # blocks this loop: only the timer waits on it
                return connections.call_tool(server, tool, arguments)

            ways: dict[str, Callable[[], Awaitable[object]]] = {
                "sdk": lambda: client.call_tool(tool, arguments),
                "tool.arun": lambda: mcp_tool.arun(context, encoded, 10_000),
                "call_tool": blocking,
            }
            for _ in range(20):  # warm-up
                for call in ways.values():
                    await call()
            for _ in range(calls):
                for name, call in ways.items():
                    samples[name].append(await timed(call))
    return samples, starts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=500, help="calls timed per way")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve:
        serve_echo()
        return
    print(f"{'server':<20} {'way':<10} {'p50 ms':>8} {'p95 ms':>8}")
    for label, command, args, tool, arguments in servers():
        samples, starts = asyncio.run(measure(command, args, tool, arguments, options.calls))
        for way, taken in samples.items():
            p50, p95 = percentiles(taken)
            print(f"{label:<20} {way:<10} {p50:>8.2f} {p95:>8.2f}")
        print(
            f"{label:<20} start: {starts['sdk'] * 1000:.0f} ms (sdk), "
            f"{starts['tools'] * 1000:.0f} ms (start and list, MCPConnections)"
        )


if __name__ == "__main__":
    main()
