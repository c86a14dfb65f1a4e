"""Block history: who changed a core memory block, when, and how (as diffs),
and which old value a revert brings back. The store keeps the versions
(`Storage.block_history`); `Agent.block_history` and `Agent.revert_block`
use these functions."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from datetime import UTC, datetime

from memgpt_lite.errors import ConfigError
from memgpt_lite.models import BlockVersion

# Authors of a version (BlockVersion.author).
USER = "user"  # a person: Agent.set_block, the command line, the REPL
IMPORT = "import"  # an agent file's blocks
CREATE = "create"  # a block's first value, when its agent was created
REFLECTION = "reflection"  # the agent's reflection between conversations (loop/reflection.py)


def agent_author(name: str) -> str:
    """The author of an edit made by agent `name`'s own memory tools."""
    return f"agent:{name}"


def server_author(user: str) -> str:
    """The author of an edit made through the HTTP server by `user`."""
    return f"user:{user}"


def pick_version(history: Sequence[BlockVersion], version: int | datetime) -> BlockVersion:
    """The version numbered `version` (0 is the first, -1 the last), or, for a
    time, the one the block held then (the last stored at or before it; a
    naive time is UTC). ConfigError, in one line, if there is none."""
    label = history[-1].label if history else "?"
    if isinstance(version, datetime):
        when = version if version.tzinfo else version.replace(tzinfo=UTC)
        held = [v for v in history if v.created_at <= when]
        if not held:
            raise ConfigError(f"block {label!r} had no value yet at {_when(when)}")
        return held[-1]
    if not -len(history) <= version < len(history):
        raise ConfigError(
            f"block {label!r} has versions 0 to {len(history) - 1} (-1 is the last); "
            f"there is no version {version}"
        )
    return history[version]


def _when(time: datetime) -> str:
    return time.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def version_diff(previous: BlockVersion | None, version: BlockVersion, number: int) -> str:
    """Version `number` as a header (number, time, author) and a unified diff
    from the value before it (from nothing, for the first)."""
    header = f"version {number}  {_when(version.created_at)}  by {version.author}"
    if previous is not None and previous.label != version.label:
        header += f"  (renamed from {previous.label!r})"
    return f"{header}\n{change_diff(previous, version, number)}"


def change_diff(previous: BlockVersion | None, version: BlockVersion, number: int) -> str:
    """A unified diff from the value before version `number` (from nothing,
    for the first) to it; a line that says so when the text did not change."""
    before = "" if previous is None else previous.value
    lines = difflib.unified_diff(
        before.splitlines(),
        version.value.splitlines(),
        fromfile=f"{version.label} (version {number - 1})" if previous else "/dev/null",
        tofile=f"{version.label} (version {number})",
        lineterm="",
    )
    body = "\n".join(lines)
    if not body:
        body = "(the text did not change)" if before or version.value else "(empty)"
    return body


def version_changes(history: Sequence[BlockVersion]) -> list[tuple[BlockVersion, str]]:
    """Each version of a block, oldest first, with its `change_diff`."""
    return [
        (version, change_diff(history[n - 1] if n else None, version, n))
        for n, version in enumerate(history)
    ]


def history_diffs(history: Sequence[BlockVersion]) -> str:
    """Every version of a block as `version_diff`s, oldest first, the newest last."""
    return "\n\n".join(
        version_diff(history[n - 1] if n else None, version, n) for n, version in enumerate(history)
    )
