"""`memgpt-lite blocks NAME LABEL --history / --revert N`, and the chat's
`/history LABEL`: a block's changes as diffs, and setting one back."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memgpt_lite.errors import ConfigError
from memgpt_lite.memory.core.block_history import history_diffs

if TYPE_CHECKING:
    from memgpt_lite.agent import Agent


def history_text(agent: Agent, label: str) -> str:
    """Every change of block `label`, oldest first, as diffs with their time
    and author: the newest is last, nearest the prompt."""
    return history_diffs(agent.block_history(label))


def revert_text(agent: Agent, label: str, version: int) -> str:
    """Set block `label` back to version `version` (-1 the last); one line
    saying what happened."""
    history = agent.block_history(label)
    number = version if version >= 0 else len(history) + version
    before = agent.block(label).value
    block = agent.revert_block(label, version)
    if block.value == before:
        return f"Block {label!r} already holds version {number}; nothing was changed."
    return (
        f"Reverted block {label!r} to version {number} "
        f"({len(block.value)}/{block.limit} chars); that is version {len(history)} now."
    )


def history_command(agent: Agent, label: str | None, revert: int | None, clash: bool) -> str:
    """What `blocks NAME LABEL --history` or `--revert N` prints; `clash`:
    whether another of the command's actions was asked for too."""
    if label is None:
        raise ConfigError("name the block: memgpt-lite blocks NAME LABEL --history")
    if clash:
        raise ConfigError("give one of --set, --edit, --history or --revert")
    return history_text(agent, label) if revert is None else revert_text(agent, label, revert)
