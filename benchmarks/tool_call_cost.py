"""What one tool call costs, by where the tool runs.

    python benchmarks/tool_call_cost.py [--calls 200] [--in-process-calls 5000]

Prints the median (p50) and 95th percentile (p95) of one call, in
milliseconds, as the loop makes it (`Tool.run`: arguments validated, the
function called, its result as text) for:

- an in-process tool: a function given to `Agent.create(tools=[...])`;
- a source tool: the same function registered from source, each call in a
  process of its own (tools/source/: a new interpreter, pydantic and the
  `Tool` code loaded, the source run, limits set, its folder made and
  removed);
- an MCP stdio tool: the same function served by an MCP server on stdio
  (this file run with `--serve`, written with the `mcp` SDK), kept between
  calls as the client keeps it, and made the tool an agent gets for a
  registered MCP tool (`registered_mcp_tool`: the call handed to the
  client's event loop, sent over the pipe, answered, its text returned).

The cases take turns call by call, so a machine busy with other work slows
them alike. Nothing reaches the network.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from memgpt_lite.llm import runner
from memgpt_lite.models import MCPServer, ToolDefinition
from memgpt_lite.settings.resolve import tool_run_settings
from memgpt_lite.tools.schema import Tool
from memgpt_lite.tools.source.tools import Described, describe, source_tool

SOURCE = '''
def weather(city: str, days: int = 1) -> str:
    """The weather in a city.

    Args:
        city: Where.
        days: How many days ahead.
    """
    return f"{city}: sunny for {days} day(s)"
'''
ARGUMENTS = json.dumps({"city": "Leeds", "days": 2, "request_heartbeat": False})


def in_process_case() -> Tool:
    namespace: dict[str, Any] = {}
    exec(SOURCE, namespace)
    return Tool(namespace["weather"])


def _described() -> Described:
    """The tool's name, description and parameters, read from its source as
    `memgpt-lite tools add` reads them (in a process of its own)."""
    return runner.run(describe(tool_run_settings(), source=SOURCE, what="the benchmark's tool"))


def source_case() -> Tool:
    limits = tool_run_settings()
    described = _described()
    definition = ToolDefinition(
        name=described.name,
        description=described.description,
        json_schema={"parameters": described.parameters},
        kind="python",
        source_code=SOURCE,
        trusted=True,
    )
    return source_tool(definition, limits)


def serve_weather() -> None:
    """The MCP server of the MCP case: `weather`, from the same source."""
    from mcp.server.mcpserver import MCPServer as SDKServer

    namespace: dict[str, Any] = {}
    exec(SOURCE, namespace)
    server = SDKServer("bench-weather", log_level="WARNING")
    server.tool()(namespace["weather"])
    server.run("stdio")


def mcp_stdio_case() -> Tool | None:
    """The registered MCP tool `weather` of a stdio server started for the
    benchmark (at the warm-up call, then kept); None without the mcp extra."""
    if find_spec("mcp") is None:
        return None
    from memgpt_lite.tools.mcp.tool import registered_mcp_tool

    server = MCPServer(
        name="bench",
        transport="stdio",
        command=sys.executable,
        args=[str(Path(__file__).resolve()), "--serve"],
    )
    definition = ToolDefinition(
        name="weather",
        description="The weather in a city.",
        json_schema={"name": "weather", "parameters": _described().parameters},
        kind="mcp",
        mcp_server=server.name,
        trusted=True,
    )
    return registered_mcp_tool(definition, server, timeout=tool_run_settings().timeout_seconds)


def _one_call_ms(tool: Tool) -> float:
    started = time.perf_counter()
    outcome = tool.run(None, ARGUMENTS, 6000)  # type: ignore[arg-type]
    elapsed = (time.perf_counter() - started) * 1000
    if not outcome.ok:
        raise SystemExit(f"{tool.name} failed: {outcome.content}")
    return elapsed


def _percentiles(samples: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(samples, n=20, method="inclusive")
    return statistics.median(samples), cuts[18]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls of each outside tool")
    parser.add_argument(
        "--in-process-calls", type=int, default=5000, help="calls of the in-process tool"
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_weather()
        return
    cases: dict[str, Callable[[], Tool | None]] = {
        "in-process tool": in_process_case,
        "source tool (own process)": source_case,
        "MCP stdio tool": mcp_stdio_case,
    }
    tools = {label: make() for label, make in cases.items()}
    samples: dict[str, list[float]] = {label: [] for label in tools}
    for tool in tools.values():
        if tool is not None:
            _one_call_ms(tool)  # warm-up: first imports, the first event loop
    for turn in range(max(args.calls, args.in_process_calls)):
        for label, tool in tools.items():
            outside = label != "in-process tool"
            if tool is None or turn >= (args.calls if outside else args.in_process_calls):
                continue
            samples[label].append(_one_call_ms(tool))
    print(f"{'tool':<28}{'calls':>7}{'p50 ms':>10}{'p95 ms':>10}")
    for label, measured in samples.items():
        if not measured:
            print(f"{label:<28}{'-':>7}  not measured (the mcp extra is not installed)")
            continue
        p50, p95 = _percentiles(measured)
        print(f"{label:<28}{len(measured):>7}{p50:>10.3f}{p95:>10.3f}")


if __name__ == "__main__":
    main()
