"""Letta's V1 memory tools, by their names and parameters: `memory_insert`,
`memory_replace`, `memory_rethink`, and the one `memory` tool with its
create, str_replace, insert, delete and rename commands. They edit our blocks
through tools/blocks.py, so read-only flags, limits and the context window's
room are enforced as for the classic tools. The descriptions are our own."""

from __future__ import annotations

from typing import Literal

from memgpt_lite.errors import ModelRetry
from memgpt_lite.tools.blocks import (
    author,
    create_block,
    delete_block,
    find_block,
    get_block,
    insert_at,
    label_of_path,
    rename_block,
    replace_once,
    store_value,
)
from memgpt_lite.tools.schema import Tool, ToolContext, tool

CONDENSE = "memory_rethink"


def _size(label: str, value: str, limit: int) -> str:
    return f"Block {label!r} now holds {len(value)}/{limit} characters."


@tool(
    quick=True,
    brief="Insert new_str in block label after line insert_line (0 first, -1 last).",
    brief_args={"label": "", "new_str": "", "insert_line": ""},
)
def memory_insert(ctx: ToolContext, label: str, new_str: str, insert_line: int = -1) -> str:
    """Insert text into a core memory block at a line.

    Args:
        label: The block to edit, such as "human".
        new_str: The text to insert, without line numbers.
        insert_line: Insert after this line; 0 puts it first, -1 (the default) last.
    """
    block = get_block(ctx, label)
    if not new_str.strip():
        raise ModelRetry("new_str is empty: there is nothing to insert.")
    store_value(ctx, block, insert_at(block.value, new_str, insert_line), CONDENSE)
    return _size(label, block.value, block.limit)


@tool(
    quick=True,
    brief="In block label, replace old_str (exact, once) with new_str; empty deletes.",
    brief_args={"label": "", "old_str": "", "new_str": ""},
)
def memory_replace(ctx: ToolContext, label: str, old_str: str, new_str: str) -> str:
    """Replace one exact piece of text in a core memory block; an empty new_str deletes it.

    Args:
        label: The block to edit, such as "human".
        old_str: The text to replace, exactly as in the block; it must appear once.
        new_str: The text to put in its place.
    """
    block = get_block(ctx, label)
    store_value(ctx, block, replace_once(block, old_str, new_str), CONDENSE)
    return _size(label, block.value, block.limit)


@tool(
    quick=True,
    brief="Rewrite block label as new_memory (a new label makes one).",
    brief_args={"label": "", "new_memory": ""},
)
def memory_rethink(ctx: ToolContext, label: str, new_memory: str) -> str:
    """Rewrite a whole core memory block, to reorganise or condense it. For a
    small edit use memory_replace or memory_insert. A new label makes a new block.

    Args:
        label: The block to rewrite.
        new_memory: Everything the block should hold from now on.
    """
    block = find_block(ctx, label)
    if block is None:
        block = create_block(ctx, label, new_memory, "", CONDENSE)
        return f"Created block {label!r} ({len(block.value)}/{block.limit} characters)."
    store_value(ctx, block, new_memory, CONDENSE)
    return _size(label, block.value, block.limit)


def _needed(value: str | None, name: str, command: str) -> str:
    if value is None:
        raise ModelRetry(f"the {command} command needs {name}.")
    return value


def _label(path: str | None, name: str, command: str) -> str:
    label = label_of_path(_needed(path, name, command), rooted=False)
    if label is None:
        raise ModelRetry(f"{name} must name a block, such as /memories/notes.")
    return label


@tool(
    quick=True,
    brief="Edit a block by path (/memories/X) or label: create path file_text description; "
    "str_replace path old_string new_string (exact, once); insert path insert_text after "
    "insert_line (0 first, -1 last); delete path; rename old_path new_path, or path description.",
    brief_args={
        name: ""
        for name in (
            "command",
            "path",
            "file_text",
            "description",
            "old_string",
            "new_string",
            "insert_line",
            "insert_text",
            "old_path",
            "new_path",
        )
    },
)
def memory(
    ctx: ToolContext,
    command: Literal["create", "str_replace", "insert", "delete", "rename"],
    path: str | None = None,
    file_text: str | None = None,
    description: str | None = None,
    old_string: str | None = None,
    new_string: str | None = None,
    insert_line: int | None = None,
    insert_text: str | None = None,
    old_path: str | None = None,
    new_path: str | None = None,
) -> str:
    """Manage core memory blocks, each named by a path such as /memories/notes
    (or just its label).

    Args:
        command: create a block; str_replace text in it; insert text at a line; delete
            it; rename it (old_path to new_path) or, with path and description, describe it.
        path: The block (create, str_replace, insert, delete, and rename of a description).
        file_text: The new block's text (create).
        description: What the block is for (create, rename).
        old_string: The exact text to replace; it must appear once (str_replace).
        new_string: The text to put in its place (str_replace).
        insert_line: Insert after this line; 0 puts it first, -1 last (insert).
        insert_text: The text to insert (insert).
        old_path: The block to rename (rename).
        new_path: Its new path (rename).
    """
    if command == "create":
        label = _label(path, "path", command)
        block = create_block(ctx, label, file_text or "", description or "", CONDENSE)
        return f"Created block {label!r} ({len(block.value)}/{block.limit} characters)."
    if command == "rename":
        return _rename(ctx, path, description, old_path, new_path)
    block = get_block(ctx, _label(path, "path", command))
    if command == "delete":
        delete_block(ctx, block)
        return f"Deleted block {block.label!r}."
    if command == "str_replace":
        old = _needed(old_string, "old_string", command)
        value = replace_once(block, old, _needed(new_string, "new_string", command))
    else:
        text = _needed(insert_text, "insert_text", command)
        value = insert_at(block.value, text, -1 if insert_line is None else insert_line)
    store_value(ctx, block, value, CONDENSE)
    return _size(block.label, block.value, block.limit)


def _rename(
    ctx: ToolContext,
    path: str | None,
    description: str | None,
    old_path: str | None,
    new_path: str | None,
) -> str:
    """memory's rename: old_path to new_path (and a new description, if
    given), or with only path and description, a new description."""
    if old_path is None and new_path is None:
        block = get_block(ctx, _label(path, "path", "rename"))
        block.description = _needed(description, "description", "rename")
        store_value(ctx, block, block.value, CONDENSE)
        return f"Described block {block.label!r}."
    block = get_block(ctx, _label(old_path, "old_path", "rename"))
    old_label = block.label
    rename_block(ctx, block, _label(new_path, "new_path", "rename"))
    if description is not None:
        block.description = description
        ctx.store.save_block(block, author=author(ctx))
    return f"Renamed block {old_label!r} to {block.label!r}."


LETTA_MEMORY_TOOLS: dict[str, Tool] = {
    t.name: t for t in (memory_insert, memory_replace, memory_rethink, memory)
}
