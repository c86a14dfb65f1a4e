"""Tools: plain Python functions whose JSON schema is generated from the function.

The signature, type hints, `Annotated[..., Field(...)]` and the docstring's
`Args:` section become a pydantic model (via `pydantic.create_model`), which
both produces the schema sent to the model and validates the arguments before
the call. A parameter annotated `ToolContext` is injected, not shown to the
model. Every tool except `send_message` also gets MemGPT's `request_heartbeat`.

`Tool.run` never raises for anything the model did: bad JSON (nested too
deeply, holding a number of thousands of digits or NaN included), bad
arguments, `ModelRetry`, exceptions inside the tool and a result that cannot be
turned into text all become a readable result, with lone surrogates replaced.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic.fields import FieldInfo

from memgpt_lite.errors import ConfigError, ModelRetry, validation_message
from memgpt_lite.text import JSONProblem, clean_text, parse_arguments

if TYPE_CHECKING:
    from memgpt_lite.models import AgentState
    from memgpt_lite.storage.protocol import Storage
    from memgpt_lite.tools.deps import AgentDeps

log = logging.getLogger(__name__)

TOOL_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
HEARTBEAT_PARAM = "request_heartbeat"
HEARTBEAT_DESCRIPTION = "true to act again after this call; false to end your turn."


@dataclass
class ToolContext:
    """What a tool can reach while it runs, given to a parameter annotated
    `ToolContext`: the agent's dependencies (`deps`: its state, store,
    embedder, token counter), the current step, and the replies sent so far
    in the current model answer."""

    deps: AgentDeps
    step_id: str
    replies: list[str] = field(default_factory=list)

    @property
    def state(self) -> AgentState:
        """The agent's state as the step last read it."""
        return self.deps.state

    @property
    def store(self) -> Storage:
        return self.deps.store


@dataclass
class ToolOutcome:
    content: str
    ok: bool
    heartbeat: bool = False


class Tool:
    """A function the model can call. Build one with the `@tool` decorator."""

    # Where the tool comes from, for people (`/tools`): set by the tools
    # whose call runs elsewhere (a registered tool, an MCP server's tool);
    # None for a function given in code.
    origin: str | None = None

    def __init__(
        self,
        function: Callable[..., Any],
        name: str | None = None,
        description: str | None = None,
        heartbeat: bool = True,
        quick: bool = False,
        requires_approval: bool = False,
        brief: str | None = None,
        brief_args: Mapping[str, str] | None = None,
    ) -> None:
        self.function = function
        # A call waits for the user's approval before it runs (loop/approvals.py).
        self.requires_approval = requires_approval
        # Runs on the event loop, not in a worker thread: a quick function that
        # waits on nothing (no network, no sleep), for which the thread hop
        # would cost more than the call (see `arun`).
        self.quick = quick
        self.name = name or function.__name__
        if not TOOL_NAME_PATTERN.match(self.name):
            raise ConfigError(f"tool name {self.name!r} must be 1-64 letters, digits, '_' or '-'")
        summary, arg_docs = parse_docstring(inspect.getdoc(function) or "")
        self.description = description or summary
        self.heartbeat = heartbeat
        self.context_param, self.arguments_model = _arguments_model(
            function, self.name, arg_docs, heartbeat
        )
        unknown = set(brief_args or {}) - set(self.arguments_model.model_fields)
        if unknown:
            raise ConfigError(f"tool {self.name}: brief_args names no parameter {sorted(unknown)}")
        self._schema = self._build_schema()
        self._compact_schema = compact_schema(self._schema, brief, brief_args or {})

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    def _build_schema(self) -> dict[str, Any]:
        parameters = _plain_optionals(_strip_titles(self.arguments_model.model_json_schema()))
        if self.heartbeat:
            # Required in the schema, as in MemGPT, but a missing value is read
            # as false so a sloppy model still gets its call run.
            parameters.setdefault("required", [])
            if HEARTBEAT_PARAM not in parameters["required"]:
                parameters["required"].append(HEARTBEAT_PARAM)
        function: dict[str, Any] = {"name": self.name, "parameters": parameters}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}

    def schema(self, compact: bool = False) -> dict[str, Any]:
        """The entry for the chat completions `tools` list; `compact`: in
        the compact wording of a small window (see `compact_schema`)."""
        return self._compact_schema if compact else self._schema

    def run(self, context: ToolContext, arguments: str, max_chars: int) -> ToolOutcome:
        """Validate the raw JSON arguments, call the function, and return what the
        model should see. Never raises for the model's or the tool's mistakes.
        An `async def` tool is awaited on an event loop of its own here."""
        # Imported here: the process that runs a source tool's call
        # (tools/source/child.py) imports this module for each call, and
        # the runner brings the openai client, 0.7 s of imports it never uses.
        from memgpt_lite.llm import runner

        return runner.run(self.arun(context, arguments, max_chars, in_thread=False))

    async def arun(
        self, context: ToolContext, arguments: str, max_chars: int, *, in_thread: bool = True
    ) -> ToolOutcome:
        """`run`, awaited. An `async def` tool is awaited; a plain function
        runs in a worker thread when `in_thread` (unless it is `quick`), so it
        cannot stall the loop."""
        call = self._prepare(context, arguments)
        if isinstance(call, ToolOutcome):
            outcome = call
        elif inspect.iscoroutinefunction(self.function):
            outcome = await self._awaited(call)
        elif in_thread and not self.quick:
            outcome = await asyncio.to_thread(self._called, call)
        else:
            outcome = self._called(call)
        # Cleaned before truncation: a tool that returns a lone surrogate must
        # not break the step's storage or the next request.
        outcome.content = truncate(clean_text(outcome.content), max_chars)
        return outcome

    def _prepare(self, context: ToolContext, arguments: str) -> _Call | ToolOutcome:
        """The validated arguments, or the error the model sees instead."""
        try:
            raw = parse_arguments(arguments)
        except JSONProblem as exc:
            return unusable_arguments(self.name, exc)
        try:
            validated = self.arguments_model.model_validate(raw)
        except ValidationError as exc:
            return ToolOutcome(
                f"Error: invalid arguments for {self.name}: {_describe(exc)}", ok=False
            )
        except RecursionError:  # a recursive type in a custom tool's parameters
            return ToolOutcome(
                f"Error: the arguments of {self.name} are nested too deeply.", ok=False
            )
        kwargs = {name: getattr(validated, name) for name in type(validated).model_fields}
        heartbeat = bool(kwargs.pop(HEARTBEAT_PARAM, False))
        if self.context_param:
            kwargs[self.context_param] = context
        return _Call(kwargs, heartbeat)

    def _called(self, call: _Call) -> ToolOutcome:
        try:
            # Turned into text here: a result that cannot be (circular, too deep)
            # is the tool's bug, like an exception.
            result = _as_text(self.function(**call.kwargs))
        except Exception as exc:  # noqa: BLE001 - see _failed
            return self._failed(exc, call.heartbeat)
        return ToolOutcome(result, ok=True, heartbeat=call.heartbeat)

    async def _awaited(self, call: _Call) -> ToolOutcome:
        try:
            result = _as_text(await self.function(**call.kwargs))
        except Exception as exc:  # noqa: BLE001 - see _failed
            return self._failed(exc, call.heartbeat)
        return ToolOutcome(result, ok=True, heartbeat=call.heartbeat)

    def _failed(self, exc: Exception, heartbeat: bool) -> ToolOutcome:
        """What the model sees when the tool raised. `ModelRetry` is the tool
        telling the model what to do instead. Anything else is a bug of the
        tool, which must not break the protocol: the model gets a readable
        error for this call, and the traceback goes to the log (the CLI shows
        one line and keeps the traceback in its log file)."""
        if isinstance(exc, ModelRetry):
            return ToolOutcome(f"Error: {exc}", ok=False, heartbeat=heartbeat)
        log.error("tool %s raised %s: %s", self.name, type(exc).__name__, exc, exc_info=exc)
        return ToolOutcome(
            f"Error: {self.name} failed: {type(exc).__name__}: {exc}", ok=False, heartbeat=heartbeat
        )


@dataclass
class _Call:
    """A tool call's validated arguments, ready to pass to the function."""

    kwargs: dict[str, Any]
    heartbeat: bool


def tool(
    function: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    heartbeat: bool = True,
    quick: bool = False,
    requires_approval: bool = False,
    brief: str | None = None,
    brief_args: Mapping[str, str] | None = None,
) -> Any:
    """Make a tool from a function: `@tool` or `@tool(name=..., heartbeat=False)`.
    `quick=True` runs a plain function on the event loop instead of a worker
    thread; only for one that returns at once and waits on nothing.
    `requires_approval=True` makes each call wait for the user's yes or no.
    `brief` and `brief_args` (by parameter) are the tool's and its
    parameters' descriptions in the compact wording of a small window."""

    def wrap(fn: Callable[..., Any]) -> Tool:
        return Tool(
            fn,
            name=name,
            description=description,
            heartbeat=heartbeat,
            quick=quick,
            requires_approval=requires_approval,
            brief=brief,
            brief_args=brief_args,
        )

    return wrap(function) if function is not None else wrap


def as_tool(obj: Tool | Callable[..., Any]) -> Tool:
    return obj if isinstance(obj, Tool) else Tool(obj)


def unusable_arguments(name: str, problem: JSONProblem) -> ToolOutcome:
    """What the model sees for arguments that are not a JSON object it may send."""
    return ToolOutcome(
        f"Error: the arguments could not be used: {problem}. Call {name} again "
        "with a JSON object that matches its schema.",
        ok=False,
    )


def truncate(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    note = (
        f"\n[truncated: the result was {len(text)} characters, over the {max_chars} shown; "
        "narrow the request or ask for another page]"
    )
    return text[: max_chars - len(note)] + note


def _as_text(result: Any) -> str:
    if result is None:
        return "OK"
    if isinstance(result, str):
        return result
    if isinstance(result, BaseModel):
        try:
            return result.model_dump_json()
        except ValueError:  # pydantic's encoder refuses a lone surrogate; it is cleaned later
            result = result.model_dump(mode="json")
    return json.dumps(result, default=str, ensure_ascii=False)


def _describe(exc: ValidationError, shown: int = 5) -> str:
    problems = []
    for error in exc.errors(include_url=False)[:shown]:
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        problems.append(f"{where}: {validation_message(error)}")
    more = exc.error_count() - shown
    return "; ".join(problems) + (f" (and {more} more)" if more > 0 else "")


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_SECTION = re.compile(r"^\s*(Returns|Raises|Yields|Examples?|Notes?):\s*$")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its summary and `Args:` descriptions."""
    summary_lines: list[str] = []
    args: dict[str, str] = {}
    current: str | None = None
    section = "summary"
    for line in doc.splitlines():
        if _ARGS_HEADER.match(line):
            section = "args"
            continue
        if _SECTION.match(line):
            section = "other"
            continue
        if section == "summary":
            summary_lines.append(line)
        elif section == "args":
            match = _ARG_LINE.match(line)
            if match and not line.startswith(" " * 8):
                current = match.group(1).lstrip("*")
                args[current] = match.group(3).strip()
            elif current and line.strip():
                args[current] = f"{args[current]} {line.strip()}".strip()
    return "\n".join(summary_lines).strip(), args


def _arguments_model(
    function: Callable[..., Any], name: str, arg_docs: dict[str, str], heartbeat: bool
) -> tuple[str | None, type[BaseModel]]:
    """The pydantic model of a function's parameters, and the name of the
    parameter that receives the `ToolContext`, if any."""
    hints = get_type_hints(function, include_extras=True)
    fields: dict[str, Any] = {}
    context_param = None
    for param in inspect.signature(function).parameters.values():
        annotation = hints.get(param.name, Any)
        if annotation is ToolContext:
            context_param = param.name
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ConfigError(f"tool {name}: *args and **kwargs cannot be described to a model")
        default = ... if param.default is inspect.Parameter.empty else param.default
        info = FieldInfo.from_annotated_attribute(annotation, default)
        if info.description is None and param.name in arg_docs:
            info.description = arg_docs[param.name]
        fields[param.name] = (info.annotation, info)
    if heartbeat:
        if HEARTBEAT_PARAM in fields:
            raise ConfigError(f"tool {name}: {HEARTBEAT_PARAM} is added for you")
        fields[HEARTBEAT_PARAM] = (
            bool,
            FieldInfo(default=False, description=HEARTBEAT_DESCRIPTION),
        )
    model = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    return context_param, model


def compact_schema(
    schema: dict[str, Any], brief: str | None, brief_args: Mapping[str, str]
) -> dict[str, Any]:
    """A tool's entry in the compact wording of a small window: the same
    name, parameters, types and required ones, in fewer tokens. The brief
    descriptions replace the full ones (a parameter's default goes with its
    full description: its brief says it where it matters); `request_heartbeat`
    is bare, as the system message describes it once for every tool (see
    memory/core/blocks.py `instructions`); `additionalProperties` goes, as
    the arguments are checked all the same and an unknown one is an error
    the model reads."""
    function = dict(schema["function"])
    parameters = {k: v for k, v in function["parameters"].items() if k != "additionalProperties"}
    properties = {}
    for name, prop in parameters.get("properties", {}).items():
        if name == HEARTBEAT_PARAM:
            prop = {"type": "boolean"}
        elif name in brief_args:
            prop = {k: v for k, v in prop.items() if k not in ("description", "default")}
            if brief_args[name]:
                prop["description"] = brief_args[name]
        properties[name] = prop
    if "properties" in parameters:
        parameters["properties"] = properties
    function["parameters"] = parameters
    if brief is not None:
        function["description"] = brief
    return {**schema, "function": function}


def _plain_optionals(schema: dict[str, Any]) -> dict[str, Any]:
    """A parameter that may be left out, with None as its default, shown as
    its type alone (`{"type": "string"}`, not an anyOf with null and a null
    default): not being required already says it may be left out, at a third
    of the tokens. A null sent all the same is still accepted."""
    required = set(schema.get("required", ()))
    for name, prop in schema.get("properties", {}).items():
        options = prop.get("anyOf")
        if name in required or "default" not in prop or prop["default"] is not None:
            continue
        if not isinstance(options, list) or len(options) != 2 or {"type": "null"} not in options:
            continue
        (kept,) = [option for option in options if option != {"type": "null"}]
        del prop["anyOf"], prop["default"]
        prop.update(kept)
    return schema


def _strip_titles(schema: Any) -> Any:
    """Drop pydantic's auto-generated titles: they cost tokens and say nothing."""
    if isinstance(schema, dict):
        return {
            key: _strip_titles(value)
            for key, value in schema.items()
            if not (key == "title" and isinstance(value, str))
        }
    if isinstance(schema, list):
        return [_strip_titles(item) for item in schema]
    return schema
