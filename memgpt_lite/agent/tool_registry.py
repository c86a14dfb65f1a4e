"""The tool registry as the command line and the server use it
(`workspace.tools`): add a tool from Python source or a module, list the
tools with the agents using them, attach and detach them, trust and remove
them. Each user has a registry of their own (`owner`); an agent uses its
owner's tools, by name (its `tool_names`).

Adding reads the tool's schema in a process of its own (tools/source/): the
source is never run here. A tool the user adds is trusted (they chose to
run it); one that came in an imported agent file is not, until `trust`.
A tool attached to an agent is not removed: the error names the agents
(detach it first), so no agent loses a tool behind its user's back.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memgpt_lite.errors import AlreadyExistsError, ConfigError
from memgpt_lite.llm import runner
from memgpt_lite.models import AgentState, ToolDefinition
from memgpt_lite.settings.values import Settings
from memgpt_lite.storage.protocol import Storage
from memgpt_lite.tools.sets import ATTACHABLE_TOOLS, BUILT_IN_NAMES
from memgpt_lite.tools.source.tools import Described, describe

MAX_SOURCE_BYTES = 1_000_000


def read_source(path: Path) -> str:
    """The text of a tool's source file, or a ConfigError in one line."""
    if path.stat().st_size > MAX_SOURCE_BYTES:
        raise ConfigError(f"{path.name} is over {MAX_SOURCE_BYTES:,} bytes: not a tool's source")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path.name} is not UTF-8 text") from None


class ToolRegistry:
    """The registered tools of one database (see the module's doc)."""

    def __init__(self, store: Storage, settings: Settings) -> None:
        self.store = store
        self.settings = settings

    def add_source(
        self, source: str, *, name: str | None, owner: str, what: str, replace: bool = False
    ) -> ToolDefinition:
        """Register the tool in `source` (its function named `name`, else its
        one public function) for `owner`, trusted; `what` names it in errors."""
        described = self._described(source=source, name=name, what=what)
        definition = ToolDefinition(
            name=described.name,
            owner=owner,
            description=described.description,
            json_schema=_schema(described),
            kind="python",
            source_code=source,
            requirements=described.requirements,
            trusted=True,
        )
        return self._store(definition, replace)

    def add_module(
        self, reference: str, *, name: str | None, owner: str, replace: bool = False
    ) -> ToolDefinition:
        """Register the function at `reference` ("pkg.mod:function"), as
        `name` (default: the function's), for `owner`, trusted."""
        if ":" not in reference:
            raise ConfigError(f"{reference!r} is not pkg.module:function")
        what = f"tool {reference}"
        described = self._described(module=reference, name=name, what=what)
        definition = ToolDefinition(
            name=described.name,
            owner=owner,
            description=described.description,
            json_schema=_schema(described),
            kind="module",
            module=reference,
            requirements=described.requirements,
            trusted=True,
        )
        return self._store(definition, replace)

    def _described(
        self, *, source: str | None = None, module: str | None = None, name: str | None, what: str
    ) -> Described:
        if name is not None:
            check_tool_name(name)
        return runner.run(
            describe(self.settings.tools, source=source, module=module, name=name, what=what)
        )

    def _store(self, definition: ToolDefinition, replace: bool) -> ToolDefinition:
        check_tool_name(definition.name)
        if replace:
            return self.store.upsert_tool(definition)
        try:
            self.store.add_tool(definition)
        except AlreadyExistsError:
            raise AlreadyExistsError(
                f"a tool named {definition.name!r} already exists; add it with --replace to "
                "replace it, or with --name to add it under another name"
            ) from None
        return definition

    def get(self, name: str, owner: str) -> ToolDefinition:
        return self.store.get_tool(owner, name)

    def listed(self, owner: str) -> list[tuple[ToolDefinition, list[str]]]:
        """`owner`'s tools by name, each with the names of the agents using it."""
        agents = [state for state, _ in self.store.list_agents(owner=owner)]
        return [
            (tool, [a.name for a in agents if tool.name in a.tool_names])
            for tool in self.store.list_tools(owner)
        ]

    def attach(self, agent: str, names: Sequence[str]) -> AgentState:
        """Give agent `agent` (name or id) its owner's tools `names`; those it
        has already stay as they are."""
        state = self.store.get_agent(agent)
        for name in names:
            if name in ATTACHABLE_TOOLS:
                continue  # a built-in tool an agent has once attached (the multi-agent tools)
            if name in BUILT_IN_NAMES:
                raise ConfigError(f"{name} is a built-in tool: agents have it by their tool set")
            self.store.get_tool(state.owner, name)  # NotFoundError: no tool of that name

        def attached(stored: AgentState) -> None:
            stored.tool_names = list(dict.fromkeys([*stored.tool_names, *names]))

        return self.store.update_agent(state.id, attached)

    def detach(self, agent: str, names: Sequence[str]) -> AgentState:
        """Take tools `names` from agent `agent`; naming one it does not have
        is a ConfigError, and nothing is changed."""
        state = self.store.get_agent(agent)

        def detached(stored: AgentState) -> None:
            absent = [name for name in names if name not in stored.tool_names]
            if absent:
                raise ConfigError(
                    f"agent {stored.name!r} has no tool {absent[0]!r}; nothing was changed"
                )
            stored.tool_names = [name for name in stored.tool_names if name not in names]

        return self.store.update_agent(state.id, detached)

    def trust(self, name: str, owner: str) -> ToolDefinition:
        """Let the tool run (one that came in an imported agent file)."""
        return self.store.update_tool(owner, name, lambda tool: setattr(tool, "trusted", True))

    def remove(self, name: str, owner: str) -> None:
        """Delete the tool; a ConflictError naming the agents using it."""
        self.store.delete_tool(owner, name)


def check_tool_name(name: str) -> None:
    """A ConfigError for the name of a built-in tool: one of any tool set,
    so that no agent's set ever has a tool of the name."""
    if name in BUILT_IN_NAMES:
        raise ConfigError(f"{name!r} is the name of a built-in tool; choose another (--name)")


def _schema(described: Described) -> dict[str, object]:
    schema: dict[str, object] = {"name": described.name, "parameters": described.parameters}
    if described.description:
        schema["description"] = described.description
    return schema
