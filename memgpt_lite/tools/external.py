"""Tools whose call runs outside the caller's process: a registered tool's
source in a process of its own (tools/source/), or an MCP server's tool.

An `ExternalTool` is an ordinary `Tool` to the loop: its schema is the one
stored (not read from a function here, so no user code is run to get it),
approvals and tool rules apply to it by name, and what it returns is
cleaned and cut to the agent's limit like any tool's result. Its call
(`Call`) receives the arguments as a dict, `request_heartbeat` taken out,
and returns the outcome; it never raises for the tool's or the model's
mistakes: a tool that fails, hangs or crashes is an error result.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable
from typing import Any

from memgpt_lite.llm import runner
from memgpt_lite.models import ToolDefinition
from memgpt_lite.text import JSONProblem, clean_text, parse_arguments
from memgpt_lite.tools.schema import (
    HEARTBEAT_DESCRIPTION,
    HEARTBEAT_PARAM,
    Tool,
    ToolContext,
    ToolOutcome,
    compact_schema,
    truncate,
    unusable_arguments,
)

Call = Callable[[dict[str, Any], int], Awaitable[ToolOutcome]]  # arguments, max_chars


class ExternalTool(Tool):
    """A tool described by a stored JSON schema, called through `call`.
    `origin` says where it comes from, for people (`/tools`, `tools list`)."""

    def __init__(
        self,
        name: str,
        description: str,
        parameters: dict[str, Any],
        call: Call,
        *,
        origin: str,
        heartbeat: bool = True,
        requires_approval: bool = False,
    ) -> None:
        self.name = name
        self.description = description
        self.heartbeat = heartbeat
        self.requires_approval = requires_approval
        self.quick = False
        self.context_param = None
        self.origin = origin
        self._call = call
        self._schema = _schema(name, description, parameters, heartbeat)
        self._compact_schema = compact_schema(self._schema, None, {})

    def __repr__(self) -> str:
        return f"ExternalTool({self.name!r}, {self.origin!r})"

    def __call__(self, **arguments: Any) -> str:
        """Call the tool from Python, with its arguments as keywords: its
        result's text (an error's too)."""
        return self.run(None, json.dumps(arguments), max_chars=10**9).content  # type: ignore[arg-type]

    async def arun(
        self, context: ToolContext, arguments: str, max_chars: int, *, in_thread: bool = True
    ) -> ToolOutcome:
        try:
            given = parse_arguments(arguments)
        except JSONProblem as exc:
            return unusable_arguments(self.name, exc)
        heartbeat = _wants_heartbeat(given.pop(HEARTBEAT_PARAM, False)) if self.heartbeat else False
        outcome = await self._call(given, max_chars)
        outcome.heartbeat = heartbeat
        outcome.content = truncate(clean_text(outcome.content), max_chars)
        return outcome

    def run(self, context: ToolContext, arguments: str, max_chars: int) -> ToolOutcome:
        return runner.run(self.arun(context, arguments, max_chars, in_thread=False))


def _wants_heartbeat(value: Any) -> bool:
    """MemGPT's `request_heartbeat`, read as the in-process tools read it: a
    missing or unclear value is false."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def _schema(
    name: str, description: str, parameters: dict[str, Any], heartbeat: bool
) -> dict[str, Any]:
    """The chat completions entry: the stored parameters, with
    `request_heartbeat` added (last, and required) when the tool takes it."""
    parameters = copy.deepcopy(parameters) or {"type": "object", "properties": {}}
    parameters.setdefault("type", "object")
    properties = parameters.setdefault("properties", {})
    required = parameters.setdefault("required", [])
    if heartbeat:
        properties.pop(HEARTBEAT_PARAM, None)
        # As an in-process tool's schema has it (tests/tools/test_source_tools.py).
        properties[HEARTBEAT_PARAM] = {
            "default": False,
            "description": HEARTBEAT_DESCRIPTION,
            "type": "boolean",
        }
        if HEARTBEAT_PARAM not in required:
            required.append(HEARTBEAT_PARAM)
    function: dict[str, Any] = {"name": name, "parameters": parameters}
    if description:
        function["description"] = description
    return {"type": "function", "function": function}


def failing_tool(definition: ToolDefinition, error: str) -> ExternalTool:
    """A registered tool the model sees but whose every call is the error
    `error`: one not trusted yet, or of a kind nothing here can call."""

    async def refuse(arguments: dict[str, Any], max_chars: int) -> ToolOutcome:
        return ToolOutcome(f"Error: {error}", ok=False)

    return ExternalTool(
        definition.name,
        definition.description,
        definition.json_schema.get("parameters", {}),
        refuse,
        origin=origin_of(definition),
    )


def origin_of(definition: ToolDefinition) -> str:
    """Where a registered tool comes from, in words, for people."""
    if definition.kind == "module":
        return f"registry: module {definition.module}"
    if definition.kind == "mcp":
        return f"registry: MCP server {definition.mcp_server}"
    return "registry: python source"
