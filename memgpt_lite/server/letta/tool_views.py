"""Tools in Letta's shape (its `Tool`): our built-in tools, which Letta
lists as its base tools, and the tools of a user's registry.

A built-in tool's id is its name with Letta's prefix (`tool-send_message`):
it is the same for every user, and read-only. A registered tool's id is its
own. Letta's `tool_type` says where a tool comes from: "custom" for a tool
from Python source or a module, "external_mcp" for an MCP server's, and
Letta's types for the built-in ones (core, memory, multi-agent).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from memgpt_lite.models import AgentState, ToolDefinition
from memgpt_lite.tools.schema import Tool
from memgpt_lite.tools.sets import ATTACHABLE_TOOLS, TOOL_SETS

BUILTIN_ID_PREFIX = "tool-"
CUSTOM, MCP_TOOL = "custom", "external_mcp"
# The tools every tool set has (talking, recall and archival memory) are
# Letta's core tools; the others of a set edit core memory.
_CORE = set.intersection(*(set(tools) for tools in TOOL_SETS.values()))


@cache
def builtin_tools() -> dict[str, tuple[Tool, str]]:
    """Every built-in tool by name, with Letta's type for it: those of each
    tool set, then those an agent has once attached."""
    found: dict[str, tuple[Tool, str]] = {}
    for tools in TOOL_SETS.values():
        for name, tool in tools.items():
            found.setdefault(name, (tool, "letta_core" if name in _CORE else "letta_memory_core"))
    for name, tool in ATTACHABLE_TOOLS.items():
        found[name] = (tool, "letta_multi_agent_core")
    return found


def builtin_name(tool_id: str) -> str | None:
    """The built-in tool a Letta tool id (or a bare name) names, or None."""
    name = tool_id.removeprefix(BUILTIN_ID_PREFIX)
    return name if name in builtin_tools() else None


def builtin_view(name: str) -> dict[str, Any]:
    """A built-in tool as Letta's Tool. Its code is ours, not the user's:
    no source is shown."""
    tool, kind = builtin_tools()[name]
    function = tool.schema()["function"]
    return {
        "id": f"{BUILTIN_ID_PREFIX}{name}",
        "name": name,
        "description": function.get("description"),
        "json_schema": function,
        "tool_type": kind,
        "source_type": "python",
        "source_code": None,
        "tags": [],
        "metadata_": {},
    }


def pip_requirement(text: str) -> dict[str, str | None]:
    """A requirement string as Letta's PipRequirement: the project's name,
    and its version (without "==" when pinned), or None without one."""
    # Imported here: a server whose tools declare no requirement never needs it.
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        parsed = Requirement(text)
    except InvalidRequirement:  # stored checked; said as is all the same
        return {"name": text, "version": None}
    spec = str(parsed.specifier)
    if spec.startswith("==") and "," not in spec:
        spec = spec[2:]
    return {"name": parsed.name, "version": spec or None}


def registered_view(tool: ToolDefinition, result_max_chars: int) -> dict[str, Any]:
    """A registered tool as Letta's Tool. `result_max_chars`: the most a
    call of a tool run in a process of its own returns (an agent's own
    limit on tool results may cut it further). `metadata_` says whether it
    may run (`trusted`), and an MCP tool's server."""
    mcp = tool.kind == "mcp"
    metadata: dict[str, Any] = {"trusted": tool.trusted}
    if mcp:
        metadata["mcp"] = {"server_name": tool.mcp_server}
    return {
        "id": tool.id,
        "name": tool.name,
        "description": tool.description or None,
        "json_schema": tool.json_schema,
        "tool_type": MCP_TOOL if mcp else CUSTOM,
        "source_type": None if mcp else "python",
        "source_code": tool.source_code,
        "tags": tool.tags,
        "pip_requirements": [pip_requirement(text) for text in tool.requirements],
        "return_char_limit": None if mcp else result_max_chars,
        "metadata_": metadata,
    }


def agent_tool_views(
    state: AgentState, registered: list[ToolDefinition], result_max_chars: int
) -> list[dict[str, Any]]:
    """The agent's tools as Letta's Tools: its tool set's, the built-in
    tools attached to it, then its owner's registered tools it has (of
    `registered`), in the order they were attached."""
    views = [builtin_view(name) for name in TOOL_SETS.get(state.settings.tool_set, {})]
    views += [builtin_view(name) for name in state.tool_names if name in ATTACHABLE_TOOLS]
    by_name = {tool.name: tool for tool in registered}
    views += [
        registered_view(by_name[name], result_max_chars)
        for name in state.tool_names
        if name in by_name
    ]
    return views
