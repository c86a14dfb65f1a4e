"""The tool registry as the command line and the server use it
(`workspace.tools`): add a tool from Python source or a module, list the
tools with the agents using them, change one (its description, tags,
requirements or source: never its name), attach and detach them, trust and
remove them. Each user has a registry of their own (`owner`); an agent uses its
owner's tools, by name (its `tool_names`).

Adding reads the tool's schema in a process of its own (tools/source/): the
source is never run here. A tool the user adds is trusted (they chose to
run it); one that came in an imported agent file is not, until `trust`.
A tool attached to an agent is not removed: the error names the agents
(detach it first), so no agent loses a tool behind its user's back.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace as replace_field
from pathlib import Path
from typing import Any

from memgpt_lite.errors import AlreadyExistsError, ConfigError
from memgpt_lite.llm import runner
from memgpt_lite.models import AgentState, ToolDefinition
from memgpt_lite.settings.values import Settings
from memgpt_lite.storage.protocol import Storage
from memgpt_lite.tools.schema import HEARTBEAT_PARAM, ToolOutcome
from memgpt_lite.tools.sets import ATTACHABLE_TOOLS, BUILT_IN_NAMES
from memgpt_lite.tools.source.requirements import (
    RequirementError,
    declared_requirements,
    parse_requirement,
)
from memgpt_lite.tools.source.tools import Described, describe, source_tool

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
        self,
        source: str,
        *,
        name: str | None,
        owner: str,
        what: str,
        replace: bool = False,
        description: str | None = None,
        tags: Sequence[str] = (),
        requirements: Sequence[str] = (),
        json_schema: Mapping[str, Any] | None = None,
    ) -> ToolDefinition:
        """Register the tool in `source` (its function named `name`, else its
        one public function) for `owner`, trusted; `what` names it in errors.
        `description` replaces its docstring's; `requirements` are added to
        those it declares; a `json_schema` given is checked (see `from_source`)."""
        definition = self.from_source(
            source,
            name=name,
            owner=owner,
            what=what,
            description=description,
            tags=tags,
            requirements=requirements,
            json_schema=json_schema,
        )
        return self.register(definition, replace=replace)

    def from_source(
        self,
        source: str,
        *,
        name: str | None,
        owner: str,
        what: str,
        description: str | None = None,
        tags: Sequence[str] = (),
        requirements: Sequence[str] = (),
        json_schema: Mapping[str, Any] | None = None,
    ) -> ToolDefinition:
        """The tool in `source`, read in a process of its own (which runs the
        source) and not stored: trusted, its schema from its signature, its
        description `description` if given, else its docstring's; its pip
        requirements those the source declares and `requirements`, all of
        which must be installed (a ConfigError naming the missing ones).
        A `json_schema` given (Letta's clients send one) names the tool if
        `name` does not, and must agree with the schema read
        (`check_given_schema`)."""
        wanted = _checked_requirements(requirements)
        name = _schema_name(name, json_schema)
        described = self._described(source=source, name=name, what=what, requirements=wanted)
        if description is not None:
            described = replace_field(described, description=description)
        definition = ToolDefinition(
            name=described.name,
            owner=owner,
            description=described.description,
            json_schema=_schema(described),
            kind="python",
            source_code=source,
            requirements=list(dict.fromkeys([*described.requirements, *wanted])),
            trusted=True,
            tags=list(tags),
        )
        if json_schema is not None:
            check_given_schema(json_schema, definition)
        return definition

    def change(
        self,
        ref: str,
        owner: str,
        *,
        source: str | None = None,
        description: str | None = None,
        tags: Sequence[str] | None = None,
        requirements: Sequence[str] | None = None,
        json_schema: Mapping[str, Any] | None = None,
    ) -> ToolDefinition:
        """Change `owner`'s tool `ref` (name or id): what is given, the rest
        as it is. A new `source` is read as `from_source` reads it, under the
        tool's name (its function of that name, else its one public
        function): its schema and docstring replace the tool's, and the tool
        is trusted. `requirements` replace those given before (the ones the
        source declares stay). A `json_schema` given must agree with the
        tool's schema as changed. Its name never changes: agents use it by name."""
        stored = self.get(ref, owner)
        fields: dict[str, Any] = {}
        if source is not None or requirements is not None:
            fields.update(self._new_code(stored, source, requirements))
        if json_schema is not None:
            _schema_name(stored.name, json_schema)
            check_given_schema(json_schema, stored.model_copy(update=fields))
        if description is not None:
            schema = {**fields.get("json_schema", stored.json_schema), "description": description}
            fields.update(description=description, json_schema=schema)
        if tags is not None:
            fields["tags"] = list(tags)

        def changed(tool: ToolDefinition) -> None:
            for key, value in fields.items():
                setattr(tool, key, value)

        return self.store.update_tool(owner, stored.id, changed)

    def _new_code(
        self, stored: ToolDefinition, source: str | None, requirements: Sequence[str] | None
    ) -> dict[str, Any]:
        """The fields of `stored` that its new source or requirements change."""
        if stored.kind != "python":
            raise ConfigError(
                f"tool {stored.name!r} comes from {_origin(stored)}: it has no Python source "
                "or requirements to change"
            )
        given = _given_requirements(stored) if requirements is None else list(requirements)
        if source is None:
            return {"requirements": _requirements(stored.source_code or "", given)}
        read = self.from_source(
            source,
            name=stored.name,
            owner=stored.owner,
            what=f"the new source of tool {stored.name!r}",
            requirements=given,
        )
        changed = ("description", "json_schema", "source_code", "requirements", "trusted")
        return {key: getattr(read, key) for key in changed}

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
        return self.register(definition, replace=replace)

    def _described(
        self,
        *,
        source: str | None = None,
        module: str | None = None,
        name: str | None,
        what: str,
        requirements: Sequence[str] = (),
    ) -> Described:
        if name is not None:
            check_tool_name(name)
        reading = describe(
            self.settings.tools,
            source=source,
            module=module,
            name=name,
            what=what,
            requirements=requirements,
        )
        return runner.run(reading)

    def run_once(
        self,
        definition: ToolDefinition,
        arguments: Mapping[str, Any],
        environment: Mapping[str, str] | None = None,
    ) -> ToolOutcome:
        """Call the tool of `definition` (from `from_source`, say: not
        stored) on `arguments`, in a process of its own under the server's
        limits, with `environment`'s variables added to what such a process
        gets; its outcome, an error the model would read included."""
        limits = self.settings.tools
        if environment:
            limits = replace_field(limits, environment=(*limits.environment, *environment.items()))
        tool = source_tool(definition, limits)
        given = json.dumps(dict(arguments))
        # A source tool takes no context: what it runs in has no agent.
        call = tool.arun(None, given, limits.result_max_chars, in_thread=False)  # type: ignore[arg-type]
        return runner.run(call)

    def register(self, definition: ToolDefinition, *, replace: bool = False) -> ToolDefinition:
        """Store `definition`; with `replace`, over the owner's tool of its
        name (which keeps its id), else an AlreadyExistsError for a name taken."""
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
        """`owner`'s tool named or numbered `name`; NotFoundError if none."""
        return self.store.get_tool(owner, name)

    def tools_of(self, owner: str) -> list[ToolDefinition]:
        """`owner`'s tools, by name."""
        return self.store.list_tools(owner)

    def listed(self, owner: str) -> list[tuple[ToolDefinition, list[str]]]:
        """`owner`'s tools by name, each with the names of the agents using it."""
        agents = [state for state, _ in self.store.list_agents(owner=owner)]
        return [
            (tool, [a.name for a in agents if tool.name in a.tool_names])
            for tool in self.store.list_tools(owner)
        ]

    def agents_using(self, name: str, owner: str) -> list[str]:
        """The names of `owner`'s agents that have the tool `name` attached."""
        return [
            state.name
            for state, _ in self.store.list_agents(owner=owner)
            if name in state.tool_names
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


def _given_function(given: Mapping[str, Any]) -> Mapping[str, Any]:
    """The function of a given json_schema: Letta's own shape (name,
    description, parameters), or OpenAI's tool shape around it."""
    function = given.get("function")
    return function if given.get("type") == "function" and isinstance(function, dict) else given


def _schema_name(name: str | None, given: Mapping[str, Any] | None) -> str | None:
    """The tool's name: `name`, else the one a given json_schema names; a
    ConfigError if both are given and differ."""
    named = None if given is None else _given_function(given).get("name")
    if named is None:
        return name
    if not isinstance(named, str) or (name is not None and named != name):
        raise ConfigError(
            f"json_schema.name: {named!r} is not the tool's name {name!r} (a tool keeps its name)"
        )
    return named


def _listed(names: set[str]) -> str:
    return ", ".join(sorted(names)) or "none"


def check_given_schema(given: Mapping[str, Any], read: ToolDefinition) -> None:
    """A ConfigError unless a json_schema given for a tool agrees with the
    schema read from its source: the same parameters, the same of them
    required (MemGPT's `request_heartbeat` aside). The model is shown the
    schema read from the source: what the given one says besides is not used."""
    parameters = _given_function(given).get("parameters") or {}
    if not isinstance(parameters, dict):
        raise ConfigError("json_schema.parameters must be a JSON object")
    ours = read.json_schema.get("parameters", {})
    for key, what in (("properties", "parameters"), ("required", "required parameters")):
        theirs = {str(p) for p in parameters.get(key) or ()} - {HEARTBEAT_PARAM}
        read_ones = set(ours.get(key) or ())
        if theirs != read_ones:
            raise ConfigError(
                f"json_schema: its {what} ({_listed(theirs)}) are not those of the function "
                f"{read.name} in the source ({_listed(read_ones)}); leave json_schema out: "
                "the schema is read from the source"
            )


def _origin(tool: ToolDefinition) -> str:
    if tool.kind == "mcp":
        return f"MCP server {tool.mcp_server}"
    return f"module {tool.module}" if tool.kind == "module" else "Python source"


def _checked_requirements(given: Sequence[str]) -> list[str]:
    """`given`, each a PEP 508 requirement string, or a ConfigError."""
    try:
        for text in given:
            parse_requirement(text)
    except RequirementError as exc:
        raise ConfigError(str(exc)) from None
    return list(given)


def _requirements(source: str, given: Sequence[str]) -> list[str]:
    """The pip requirements of a stored tool from `source`: those it
    declares (read without running it) and those `given`."""
    try:
        declared = declared_requirements(ast.parse(source))
    except (SyntaxError, RequirementError):  # stored, so read once already
        declared = []
    return list(dict.fromkeys([*declared, *_checked_requirements(given)]))


def _given_requirements(tool: ToolDefinition) -> list[str]:
    """The requirements of a source tool that its source does not declare."""
    try:
        declared = set(declared_requirements(ast.parse(tool.source_code or "")))
    except (SyntaxError, RequirementError):
        declared = set()
    return [text for text in tool.requirements if text not in declared]


def _schema(described: Described) -> dict[str, object]:
    schema: dict[str, object] = {"name": described.name, "parameters": described.parameters}
    if described.description:
        schema["description"] = described.description
    return schema
