"""Registered tools from Python source (`kind == "python"`) or an
importable `module:function` (`kind == "module"`): reading one's schema,
and the `Tool` whose every call runs in a process of its own (runner.py).

The schema is read in that process too, from the function, by the same
code as `@tool`: the caller never runs the tool's source. A tool is one
public function with type hints and a docstring (`Args:` describes its
parameters); it may declare pip requirements in `__requirements__`
(requirements.py), and may raise `ModelRetry` as any tool does. It cannot
take a `ToolContext`: what it runs in has no agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memgpt_lite.errors import ConfigError
from memgpt_lite.models import ToolDefinition
from memgpt_lite.settings.values import ToolRunSettings
from memgpt_lite.tools.external import ExternalTool, origin_of
from memgpt_lite.tools.schema import ToolOutcome
from memgpt_lite.tools.source.runner import ToolProcessError, run_in_process


@dataclass(frozen=True)
class Described:
    """What a tool's process read of it: its name, description, the JSON
    schema of its parameters (without `request_heartbeat`) and requirements."""

    name: str
    description: str
    parameters: dict[str, Any]
    requirements: list[str]


def _request(mode: str, name: str | None, source: str | None, module: str | None) -> dict[str, Any]:
    return {
        "mode": mode,
        "name": name,
        "source": source,
        "module": module,
        "requirements": [],
        "arguments": {},
        "max_chars": 0,
    }


async def describe(
    limits: ToolRunSettings,
    *,
    source: str | None = None,
    module: str | None = None,
    name: str | None = None,
    what: str,
    requirements: Sequence[str] = (),
) -> Described:
    """Read the tool in `source` (its function named `name`, else its one
    public function) or at `module` ("pkg.mod:function"), named `name` if
    given, in a process of its own; a ConfigError saying what is wrong with
    it, or naming those of `requirements` (besides the ones it declares)
    that are not installed."""
    request = _request("describe", name, source, module)
    request["requirements"] = list(requirements)
    try:
        reply = await run_in_process(request, limits, what)
    except ToolProcessError as exc:
        raise ConfigError(f"cannot add {what}: {exc}") from None
    if "error" in reply:
        raise ConfigError(f"cannot add {what}: {reply['error']}")
    return Described(
        name=str(reply["name"]),
        description=str(reply["description"]),
        parameters=dict(reply["parameters"]),
        requirements=[str(r) for r in reply["requirements"]],
    )


def source_tool(definition: ToolDefinition, limits: ToolRunSettings) -> ExternalTool:
    """The `Tool` of a python or module definition: each call in a process
    of its own, with `limits`."""
    what = f"tool {definition.name!r}"

    async def call(arguments: dict[str, Any], max_chars: int) -> ToolOutcome:
        request = _request("call", definition.name, definition.source_code, definition.module)
        request.update(
            requirements=definition.requirements,
            arguments=arguments,
            max_chars=min(max_chars, limits.result_max_chars),
        )
        try:
            reply = await run_in_process(request, limits, what)
        except ToolProcessError as exc:
            return ToolOutcome(f"Error: {exc}", ok=False)
        if "error" in reply:
            return ToolOutcome(f"Error: {what} cannot be called: {reply['error']}", ok=False)
        return ToolOutcome(str(reply.get("content", "")), ok=reply.get("ok") is True)

    return ExternalTool(
        definition.name,
        definition.description,
        definition.json_schema.get("parameters", {}),
        call,
        origin=origin_of(definition),
    )
