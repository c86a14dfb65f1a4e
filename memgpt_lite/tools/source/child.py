"""The process a source tool's call runs in (runner.py starts it as a
script: `python -I -B child.py`, in an empty folder of its own).

It reads one request, a JSON object, from stdin; sets its own limits
(address space, CPU time, no core file) before anything else is loaded;
takes the caller's `sys.path`, so that what the caller can import it can;
then either describes the tool (`"describe"`: its schema, read from the
function exactly as `@tool` reads it, and its requirements) or calls it
(`"call"`: the arguments are validated and the function called by the same
`Tool` code as an in-process tool's, so bad arguments, `ModelRetry` and
exceptions read alike). The reply, one JSON object, goes to the stdout it
started with; everything the tool prints goes to stderr, which the caller
reads with a cap. Until the request is read, only the standard library is
imported.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from typing import Any

SOURCE_MODULE = "memgpt_tool_source"  # the name the tool's source runs under


class LoadError(Exception):
    """The tool cannot be called: a syntax error, a missing requirement, a
    function that is not there, a signature that cannot be read."""


def main() -> None:
    reply_channel = os.fdopen(os.dup(1), "w", encoding="utf-8")  # not inherited
    os.dup2(2, 1)  # what the tool prints goes with its errors, to the capped reader
    request = json.loads(sys.stdin.buffer.read())
    _limit(request["memory_bytes"], request["cpu_seconds"])
    sys.path[:] = request["sys_path"]
    try:
        reply = _serve(request)
    except LoadError as exc:
        reply = {"error": str(exc)}
    reply_channel.write(json.dumps(reply, ensure_ascii=False))
    reply_channel.close()


def _limit(memory_bytes: int, cpu_seconds: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _serve(request: dict[str, Any]) -> dict[str, Any]:
    import asyncio

    name: str | None = request["name"]
    _check(request["requirements"])
    found, requirements = _load(request)
    tool = _as_tool(found, name)
    if request["mode"] == "describe":
        function = tool.schema()["function"]
        return {
            "name": tool.name,
            "description": tool.description,
            "parameters": function["parameters"],
            "requirements": requirements,
        }
    arguments = json.dumps(request["arguments"])
    outcome = asyncio.run(tool.arun(None, arguments, request["max_chars"], in_thread=False))  # type: ignore[arg-type]
    return {"content": outcome.content, "ok": outcome.ok}


def _check(requirements: list[str]) -> None:
    """A LoadError naming the requirements that are not met here."""
    from memgpt_lite.tools.source.requirements import RequirementError, missing_requirements

    try:
        missing = missing_requirements(requirements)
    except RequirementError as exc:
        raise LoadError(str(exc)) from None
    if missing:
        raise LoadError(
            f"it needs {', '.join(missing)}, which is not installed here: install it where "
            "the agent runs (tools never install anything)"
        )


def _load(request: dict[str, Any]) -> tuple[Any, list[str]]:
    """The function (or `Tool`) the request names, and the requirements its
    module declares."""
    if request["module"]:
        return _from_module(request["module"])
    return _from_source(request["source"], request["name"])


def _from_source(source: str, wanted: str | None) -> tuple[Any, list[str]]:
    import ast
    import types

    from memgpt_lite.tools.source.requirements import RequirementError, declared_requirements

    try:
        tree = ast.parse(source, filename="<tool source>")
        requirements = declared_requirements(tree)
        code = compile(tree, "<tool source>", "exec")
    except SyntaxError as exc:
        raise LoadError(f"line {exc.lineno}: {exc.msg}") from None
    except RequirementError as exc:
        raise LoadError(str(exc)) from None
    _check(requirements)  # before its imports fail on one
    module = types.ModuleType(SOURCE_MODULE)
    sys.modules[SOURCE_MODULE] = module  # for what looks its classes' module up
    try:
        exec(code, module.__dict__)  # noqa: S102 - the tool's own process, which runs it
    except Exception as exc:  # noqa: BLE001 - the user's code failed: said in one line
        raise LoadError(f"its source raised {type(exc).__name__}: {exc}") from None
    return _pick(module, wanted), requirements


def _from_module(reference: str) -> tuple[Any, list[str]]:
    import importlib

    from memgpt_lite.tools.source.requirements import RequirementError, checked_list

    module_name, _, attribute = reference.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - the user's module failed: said in one line
        raise LoadError(f"cannot import {module_name}: {type(exc).__name__}: {exc}") from None
    if not hasattr(module, attribute):
        raise LoadError(f"module {module_name} has no {attribute!r}")
    declared = getattr(module, "__requirements__", None)
    try:
        requirements = checked_list(declared) if declared is not None else []
    except RequirementError as exc:
        raise LoadError(f"module {module_name}: {exc}") from None
    _check(requirements)
    return getattr(module, attribute), requirements


def _pick(module: Any, wanted: str | None) -> Any:
    """The source's function named `wanted`, else its one public function."""
    from memgpt_lite.tools.schema import Tool

    functions = {
        name: value
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (
            (callable(value) and getattr(value, "__module__", None) == SOURCE_MODULE)
            or (isinstance(value, Tool) and value.function.__module__ == SOURCE_MODULE)
        )
        and not isinstance(value, type)  # a class the source defines for its own use
    }
    if wanted in functions:
        return functions[wanted]
    if len(functions) == 1:
        return next(iter(functions.values()))
    if not functions:
        raise LoadError("the source defines no function (a tool is one public function)")
    raise LoadError(
        f"the source defines {len(functions)} functions ({', '.join(functions)}); "
        "name the tool like the one to use, or make the others private (_name)"
    )


def _as_tool(found: Any, name: str | None) -> Any:
    """`found` as a `Tool` named `name` (default: its own), without the
    heartbeat parameter (the caller keeps that)."""
    from memgpt_lite.tools.schema import Tool

    function = found.function if isinstance(found, Tool) else found
    description = found.description if isinstance(found, Tool) else None
    if not callable(function):
        raise LoadError(f"{name or found!r} is not a function")
    try:
        tool = Tool(function, name=name, description=description, heartbeat=False)
    except Exception as exc:  # noqa: BLE001 - the user's signature: said in one line
        raise LoadError(f"its signature cannot be read: {type(exc).__name__}: {exc}") from None
    if tool.context_param:
        raise LoadError(
            f"parameter {tool.context_param!r} takes a ToolContext, which a tool in a "
            "process of its own cannot have"
        )
    return tool


if __name__ == "__main__":
    main()
