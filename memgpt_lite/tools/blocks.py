"""Block edits shared by the memory tool sets (letta_memory.py,
anthropic_memory.py): finding a block by label or `/memories/...` path,
inserting at a line, replacing one exact occurrence, and creating, deleting
and renaming blocks. Every write goes through `store_value`, which applies
core memory's rules (read-only, the block's limit) and refuses an edit that
would crowd the conversation out of the context window.
"""

from __future__ import annotations

from urllib.parse import unquote

from pydantic import ValidationError

from memgpt_lite.errors import AlreadyExistsError, ModelRetry, validation_message
from memgpt_lite.memory.core.block_history import agent_author
from memgpt_lite.memory.core.blocks import check_editable, set_block_value
from memgpt_lite.memory.recall.window import core_memory_overflow, full_core_memory
from memgpt_lite.models import Block
from memgpt_lite.tools.schema import ToolContext

MEMORIES = "/memories"


def labels(ctx: ToolContext) -> list[str]:
    return [b.label for b in ctx.store.get_blocks(ctx.state.id)]


def find_block(ctx: ToolContext, label: str) -> Block | None:
    for block in ctx.store.get_blocks(ctx.state.id):
        if block.label == label:
            return block
    return None


def get_block(ctx: ToolContext, label: str, *, as_files: bool = False) -> Block:
    """The agent's block labelled `label`, else ModelRetry naming the blocks
    (as /memories paths with `as_files`)."""
    block = find_block(ctx, label)
    if block is None:
        if as_files:
            known = ", ".join(f"{MEMORIES}/{name}" for name in labels(ctx)) or "none"
            raise ModelRetry(f"there is no file {MEMORIES}/{label}; the files are: {known}.")
        known = ", ".join(labels(ctx)) or "none"
        raise ModelRetry(
            f"there is no core memory block labelled {label!r}; the blocks are: {known}."
        )
    return block


def store_value(ctx: ToolContext, block: Block, value: str, condense: str) -> None:
    """Save a block's new value: read-only and over-limit values are refused,
    and so is one that would leave too little of the window for the
    conversation. `condense` names the tool the model should condense with."""
    value = set_block_value(block, value, condense)
    problem = core_memory_overflow(ctx.deps, block, value)
    if problem:
        raise ModelRetry(full_core_memory(problem, condense))
    block.value = value
    ctx.store.save_block(block, author=author(ctx))


def author(ctx: ToolContext) -> str:
    """Who the block history says made the edits of this tool call: the agent."""
    return agent_author(ctx.state.name)


def check_label(label: str) -> str:
    """`label` if a block may have it, else ModelRetry with the rule."""
    try:
        Block(label=label)
    except ValidationError as exc:
        reason = "; ".join(validation_message(e) for e in exc.errors(include_url=False))
        raise ModelRetry(f"{label!r} cannot name a memory block: {reason}.") from None
    return label


def label_of_path(path: str, *, rooted: bool) -> str | None:
    """The block label a path names: `/memories/notes` is block `notes`; None
    for `/memories` itself. Without `rooted` a bare label is accepted too.
    Refuses anything that could reach outside /memories: `..` and `.`
    segments, backslashes, percent-encoding, control characters."""
    shown = path
    if unquote(path) != path or "\\" in path or any(ord(c) < 32 for c in path):
        raise ModelRetry(
            f"path {shown!r} is refused: write it plainly, without percent-encoding, "
            "backslashes or control characters."
        )
    path = path.strip()
    if path.rstrip("/") == MEMORIES:
        return None
    if path.startswith(MEMORIES + "/"):
        path = path[len(MEMORIES) + 1 :]
    elif rooted or path.startswith("/"):
        raise ModelRetry(
            f"path {shown!r} is outside {MEMORIES}: every path starts with /memories/."
        )
    parts = path.rstrip("/").split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise ModelRetry(
            f"path {shown!r} is refused: no '.', '..' or empty parts; "
            f"name a file as {MEMORIES}/NAME."
        )
    return check_label("/".join(parts))


def numbered(value: str, first: int = 1) -> str:
    """`value`'s lines, each after its number (from `first`) and a tab."""
    return "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(value.split("\n"), first))


def insert_at(value: str, text: str, line: int) -> str:
    """`value` with `text` inserted after line `line` (0: at the start; -1:
    at the end)."""
    lines = value.split("\n") if value else []
    if line == -1:
        line = len(lines)
    if not 0 <= line <= len(lines):
        raise ModelRetry(
            f"insert_line {line} is outside the block's lines: give 0 (before the first line) "
            f"to {len(lines)} (after the last), or -1 for the end."
        )
    return "\n".join([*lines[:line], *text.split("\n"), *lines[line:]])


def replace_once(block: Block, old: str, new: str) -> str:
    """The block's value with the one occurrence of `old` replaced by `new`."""
    check_editable(block)
    if not old:
        raise ModelRetry("the text to replace is empty: give the exact text to replace.")
    count = block.value.count(old)
    if count == 0:
        raise ModelRetry(
            f"the text to replace was not found in {block.label!r}; nothing was changed. "
            "Copy it exactly, including spaces and punctuation, without line numbers."
        )
    if count > 1:
        lines = [n for n, line in enumerate(block.value.split("\n"), 1) if old in line]
        where = f" (lines {', '.join(map(str, lines))})" if lines else ""
        raise ModelRetry(
            f"the text to replace appears {count} times in {block.label!r}{where}; nothing "
            "was changed. Include more of the surrounding text so it appears once."
        )
    return block.value.replace(old, new)


def create_block(
    ctx: ToolContext, label: str, value: str, description: str, condense: str
) -> Block:
    """Attach a new block to the agent (the default limit), holding `value`."""
    check_label(label)
    block = Block(label=label, description=description)
    try:
        ctx.store.attach_block(ctx.state.id, block, author=author(ctx))
    except AlreadyExistsError:
        raise ModelRetry(f"a memory block {label!r} already exists.") from None
    try:
        store_value(ctx, block, value, condense)
    except ModelRetry:
        ctx.store.detach_block(ctx.state.id, block.id)
        raise
    return block


def delete_block(ctx: ToolContext, block: Block) -> None:
    check_editable(block)
    ctx.store.detach_block(ctx.state.id, block.id)


def rename_block(ctx: ToolContext, block: Block, new_label: str) -> None:
    """Give the block a new label; refused if another block has it, or if
    other agents share the block (the name would change for them too)."""
    check_editable(block)
    check_label(new_label)
    if new_label != block.label and find_block(ctx, new_label) is not None:
        raise ModelRetry(f"a memory block {new_label!r} already exists; pick another name.")
    others = [n for n in ctx.store.block_owners(block.id) if n != ctx.state.name]
    if others:
        raise ModelRetry(
            f"block {block.label!r} is shared with {', '.join(others)}: it cannot be renamed."
        )
    block.label = new_label
    ctx.store.save_block(block, author=author(ctx))
