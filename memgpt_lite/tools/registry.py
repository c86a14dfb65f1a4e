"""Registered tools (`ToolDefinition`, kept by the store) as `Tool`s an
agent can call: one factory per kind makes them.

`python` and `module` tools run in a process of their own
(tools/source/). `mcp` tools are the MCP client's (tools/mcp/), imported
only when an agent has one, so that every process building agents (the
command line, the server, a program's `Agent.create/load`) can call them,
and no other pays for the SDK: such a tool reaches its owner's server of
its `mcp_server` name at its first call. Where the `mcp` extra is not
installed, or the server is not configured, the tool is offered to the
model as stored and each call of it is a clear tool error.
`register_factory` replaces a kind's factory. A tool that is not trusted
(it came in an imported agent file) is offered too, and each call says how
to trust it; its code is never run, not even to read its schema.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib.util import find_spec

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import ToolDefinition, ToolKind
from memgpt_lite.settings.values import ToolRunSettings
from memgpt_lite.storage.protocol import ToolStorage
from memgpt_lite.tools.external import failing_tool
from memgpt_lite.tools.mcp.config import MCP_EXTRA
from memgpt_lite.tools.schema import Tool
from memgpt_lite.tools.source.tools import source_tool


@dataclass(frozen=True)
class ToolBuild:
    """What a factory may use to make a tool: the store (an MCP tool's
    server configuration is there) and the limits of a tool's call."""

    store: ToolStorage
    limits: ToolRunSettings


ToolFactory = Callable[[ToolDefinition, ToolBuild], Tool]


def mcp_tool(definition: ToolDefinition, build: ToolBuild) -> Tool:
    """The tool of an MCP server (its owner's of the name `mcp_server`),
    each call bounded by the tool timeout; a failing tool saying why when
    the SDK or the server's configuration is missing."""
    try:
        server = build.store.get_mcp_server(definition.owner, definition.mcp_server or "")
    except NotFoundError:
        return failing_tool(
            definition,
            f"tool {definition.name} comes from MCP server {definition.mcp_server}, which is "
            f"not configured: add it with `memgpt-lite mcp add {definition.mcp_server} ...`",
        )
    if find_spec("mcp") is None:
        return failing_tool(definition, f"tool {definition.name} cannot be called: {MCP_EXTRA}")
    from memgpt_lite.tools.mcp.tool import registered_mcp_tool  # the SDK: only when used

    return registered_mcp_tool(definition, server, timeout=build.limits.timeout_seconds)


_FACTORIES: dict[str, ToolFactory] = {
    "python": lambda definition, build: source_tool(definition, build.limits),
    "module": lambda definition, build: source_tool(definition, build.limits),
    "mcp": mcp_tool,
}


def register_factory(kind: ToolKind, factory: ToolFactory) -> None:
    """Make the tools of `kind` with `factory` from now on."""
    _FACTORIES[kind] = factory


def untrusted_error(name: str) -> str:
    return f"tool {name} is not trusted: run `memgpt-lite tools trust {name}`"


def registry_tool(definition: ToolDefinition, build: ToolBuild) -> Tool:
    """The `Tool` of a registered tool."""
    if not definition.trusted:
        return failing_tool(definition, untrusted_error(definition.name))
    return _FACTORIES[definition.kind](definition, build)


def registry_tools(owner: str, names: Iterable[str], build: ToolBuild) -> dict[str, Tool]:
    """The tools among `names` that `owner` has registered, by name."""
    wanted = set(names)
    if not wanted:
        return {}
    return {
        definition.name: registry_tool(definition, build)
        for definition in build.store.list_tools(owner)
        if definition.name in wanted
    }
