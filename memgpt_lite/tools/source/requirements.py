"""A tool's pip requirements: PEP 508 strings (`"requests>=2.31"`), checked
against what is installed where the tool runs, never installed.

A tool from source declares them in a module-level list,

    __requirements__ = ["requests>=2.31", "python-dateutil"]

read without running the source (`declared_requirements`); a `module` tool's
module may hold the same list. Each call checks them first
(`missing_requirements`), so a missing one is a clear error, not an
ImportError in the middle of the tool.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import TYPE_CHECKING

# packaging is imported where a requirement is read: most tools declare none,
# and a tool's process (child.py), started for every call, then skips it.
if TYPE_CHECKING:
    from packaging.requirements import Requirement

REQUIREMENTS_NAME = "__requirements__"


class RequirementError(ValueError):
    """A requirement that is not a PEP 508 string, or a list that is not one."""


def parse_requirement(text: str) -> Requirement:
    from packaging.requirements import InvalidRequirement, Requirement  # see the imports

    try:
        return Requirement(text)
    except InvalidRequirement as exc:
        first = str(exc).splitlines()[0] if str(exc) else "not PEP 508"
        raise RequirementError(f"requirement {text!r} is not valid: {first}") from None


def declared_requirements(tree: ast.Module) -> list[str]:
    """The `__requirements__` list of a parsed source, [] without one; a
    RequirementError if it is not a literal list of valid requirement strings."""
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if not any(isinstance(t, ast.Name) and t.id == REQUIREMENTS_NAME for t in targets):
            continue
        try:
            value = ast.literal_eval(node.value)
        except ValueError:
            value = None
        return checked_list(value)
    return []


def checked_list(value: object) -> list[str]:
    """`value` as a list of valid requirement strings, or a RequirementError."""
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise RequirementError(f"{REQUIREMENTS_NAME} must be a list of requirement strings")
    for text in value:
        parse_requirement(text)
    return list(value)


def missing_requirements(requirements: Iterable[str]) -> list[str]:
    """The requirements not met here, each with what is installed instead
    (`"requests>=3 (2.31.0 is installed)"`). A requirement whose marker does
    not apply here (`; sys_platform == "win32"`) is met."""
    from importlib import metadata

    missing = []
    for text in requirements:
        wanted = parse_requirement(text)
        if wanted.marker is not None and not wanted.marker.evaluate():
            continue
        try:
            installed = metadata.version(wanted.name)
        except metadata.PackageNotFoundError:
            missing.append(text)
            continue
        if wanted.specifier and not wanted.specifier.contains(installed, prereleases=True):
            missing.append(f"{text} ({installed} is installed)")
    return missing
