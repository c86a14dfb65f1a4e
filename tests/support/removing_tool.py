"""A custom tool that asks for approval before it runs, and records the
calls it ran (`REMOVED`): for the tests of a call that waits for approval
across an export and an import."""

from __future__ import annotations

from memgpt_lite import tool

REMOVED: list[str] = []


@tool(requires_approval=True)
def remove(path: str) -> str:
    """Remove a file.

    Args:
        path: The file.
    """
    REMOVED.append(path)
    return f"removed {path}"
