"""Registered tools (`ToolDefinition`, kept by the store) as `Tool`s an
agent can call: one factory per kind makes them.

`python` and `module` tools run in a process of their own
(tools/source/). The `mcp` kind's factory belongs to the MCP client, which
registers it with `register_factory("mcp", ...)`; until one is registered,
an MCP tool is offered to the model as stored, and each call of it is a
clear tool error. A tool that is not trusted (it came in an imported agent
file) is offered too, and each call says how to trust it; its code is never
run, not even to read its schema.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from memgpt_lite.models import ToolDefinition, ToolKind
from memgpt_lite.settings.values import ToolRunSettings
from memgpt_lite.storage.protocol import ToolStorage
from memgpt_lite.tools.external import failing_tool
from memgpt_lite.tools.schema import Tool
from memgpt_lite.tools.source.tools import source_tool


@dataclass(frozen=True)
class ToolBuild:
    """What a factory may use to make a tool: the store (an MCP tool's
    server configuration is there) and the limits of a tool's call."""

    store: ToolStorage
    limits: ToolRunSettings


ToolFactory = Callable[[ToolDefinition, ToolBuild], Tool]

_FACTORIES: dict[str, ToolFactory] = {
    "python": lambda definition, build: source_tool(definition, build.limits),
    "module": lambda definition, build: source_tool(definition, build.limits),
}


def register_factory(kind: ToolKind, factory: ToolFactory) -> None:
    """Make the tools of `kind` with `factory` from now on (the MCP client's seam)."""
    _FACTORIES[kind] = factory


def untrusted_error(name: str) -> str:
    return f"tool {name} is not trusted: run `memgpt-lite tools trust {name}`"


def registry_tool(definition: ToolDefinition, build: ToolBuild) -> Tool:
    """The `Tool` of a registered tool."""
    if not definition.trusted:
        return failing_tool(definition, untrusted_error(definition.name))
    factory = _FACTORIES.get(definition.kind)
    if factory is None:
        return failing_tool(
            definition,
            f"tool {definition.name} comes from MCP server {definition.mcp_server}, and no "
            "MCP client is available in this process",
        )
    return factory(definition, build)


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
