"""The tool sets an agent can be created with (`AgentSettings.tool_set`):
the same non-memory tools (send_message, conversation and archival search,
archival insert) with one family of core memory tools each; and the
built-in tools an agent has only when they are attached to it by name
(`ATTACHABLE_TOOLS`, kept in its `tool_names`), such as the multi-agent
tools."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from memgpt_lite.errors import ConfigError
from memgpt_lite.tools.anthropic_memory import ANTHROPIC_MEMORY_TOOLS
from memgpt_lite.tools.builtin import BUILTIN_TOOLS
from memgpt_lite.tools.letta_memory import LETTA_MEMORY_TOOLS
from memgpt_lite.tools.multi_agent import GROUP_TOOL, MULTI_AGENT_TOOLS
from memgpt_lite.tools.schema import Tool

_CLASSIC_MEMORY = ("core_memory_append", "core_memory_replace")
_COMMON = {name: t for name, t in BUILTIN_TOOLS.items() if name not in _CLASSIC_MEMORY}

TOOL_SETS: dict[str, dict[str, Tool]] = {
    "memgpt": dict(BUILTIN_TOOLS),
    "letta-v1": {**_COMMON, **LETTA_MEMORY_TOOLS},
    "anthropic-memory": {**_COMMON, **ANTHROPIC_MEMORY_TOOLS},
}

# Built-in tools in no set: an agent has them once attached by name.
ATTACHABLE_TOOLS: dict[str, Tool] = {**MULTI_AGENT_TOOLS, GROUP_TOOL.name: GROUP_TOOL}
# The names no registered tool may take: those of every set's tools and of
# the attachable ones.
BUILT_IN_NAMES = frozenset(
    [*(name for tools in TOOL_SETS.values() for name in tools), *ATTACHABLE_TOOLS]
)


def agent_tools(
    tool_set: str, custom: Mapping[str, Tool], attached: Iterable[str] = ()
) -> dict[str, Tool]:
    """The tools of an agent: its set's, the built-in tools among the names
    `attached` (its `tool_names`: the others are its custom tools' names),
    then its custom ones, whose names must not clash with the set's."""
    chosen = TOOL_SETS.get(tool_set)
    if chosen is None:
        raise ConfigError(f"unknown tool set {tool_set!r}; the sets are: {', '.join(TOOL_SETS)}")
    clash = sorted(set(chosen) & set(custom))
    if clash:
        raise ConfigError(f"tool {clash[0]!r} of the {tool_set} tool set is also given")
    builtins = {name: ATTACHABLE_TOOLS[name] for name in attached if name in ATTACHABLE_TOOLS}
    return {**chosen, **builtins, **custom}


def tool_origin(tool: Tool, tool_set: str) -> str:
    """Where one of an agent's tools comes from, in words: its tool set, the
    built-in tools attached by name, a function given in code, or the
    registry (a source, a module, an MCP server)."""
    if TOOL_SETS.get(tool_set, {}).get(tool.name) is tool:
        return f"built-in, {tool_set} set"
    if ATTACHABLE_TOOLS.get(tool.name) is tool:
        return "built-in, attached by name"
    if tool.origin is not None:
        return tool.origin
    return "code: given to Agent.create or Agent.load"
