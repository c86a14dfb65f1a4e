"""The tools an agent file carries with their code (`AgentFile.tools`):
written from the agent's owner's registry on export, registered for the
importing user on import.

An imported tool is not trusted unless the import says so
(`memgpt-lite import --trust-tools`): until then it is offered to the model
and each call of it is an error saying how to trust it, and its code is
never run. A tool of that name the user has registered already is kept, and
the agent uses it; with `--trust-tools` it is trusted only if it holds the
very code the file does.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

from memgpt_lite.agentfile.schema import AgentFileError, FileTool, validation_problems
from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import AgentState, ToolDefinition
from memgpt_lite.storage.protocol import Storage
from memgpt_lite.tools.sets import TOOL_SETS

_BUILT_IN = frozenset(name for tools in TOOL_SETS.values() for name in tools)


def exported_tools(store: Storage, state: AgentState) -> list[FileTool]:
    """The agent's registered tools that a file can carry: those from Python
    source, with it, and MCP tools, with their server's name (a module's
    function stays a name: its code is a module of the exporting machine)."""
    attached = set(state.tool_names)
    return [
        FileTool(
            name=tool.name,
            description=tool.description,
            json_schema=tool.json_schema,
            kind=tool.kind,
            source_code=tool.source_code,
            mcp_server=tool.mcp_server,
            requirements=tool.requirements,
        )
        for tool in store.list_tools(state.owner)
        if tool.name in attached and tool.kind in ("python", "mcp")
    ]


def register_tools(store: Storage, owner: str, tools: Sequence[FileTool], trust: bool) -> list[str]:
    """Register the file's tools for `owner` (inside the import's
    transaction), trusted only with `trust`; the notes that say what was done."""
    registered: list[str] = []
    kept: list[str] = []
    for tool in tools:
        if tool.name in _BUILT_IN:
            continue  # the agent's tool set has it
        definition = _definition(tool, owner, trust)
        try:
            existing = store.get_tool(owner, tool.name)
        except NotFoundError:
            store.add_tool(definition)
            registered.append(tool.name)
            continue
        if (existing.kind, existing.source_code, existing.mcp_server) != (
            definition.kind,
            definition.source_code,
            definition.mcp_server,
        ):
            kept.append(tool.name)
            continue
        if trust and not existing.trusted:
            store.update_tool(owner, tool.name, lambda stored: setattr(stored, "trusted", True))
        registered.append(tool.name)
    return _notes(tools, registered, kept, trust)


def _definition(tool: FileTool, owner: str, trust: bool) -> ToolDefinition:
    try:
        return ToolDefinition(
            owner=owner,
            name=tool.name,
            description=tool.description,
            json_schema=tool.json_schema,
            kind=tool.kind,
            source_code=tool.source_code,
            mcp_server=tool.mcp_server,
            requirements=tool.requirements,
            trusted=trust,
        )
    except ValidationError as exc:
        raise AgentFileError(f"tool {tool.name!r}: {validation_problems(exc)}") from None


def _notes(
    tools: Sequence[FileTool], registered: list[str], kept: list[str], trust: bool
) -> list[str]:
    notes = []
    code = [t.name for t in tools if t.kind == "python" and t.name in registered]
    if code and trust:
        notes.append(
            f"tools with their code ({len(code)}: {', '.join(code)}): registered and trusted "
            "(--trust-tools)"
        )
    elif code:
        notes.append(
            f"tools with their code ({len(code)}: {', '.join(code)}): registered, not trusted; "
            "read each (memgpt-lite tools show NAME), then trust it (memgpt-lite tools trust "
            "NAME), or import with --trust-tools"
        )
    notes += [
        f"tool {name!r}: the registered tool of that name is kept; the file's was not imported"
        for name in kept
    ]
    return notes
