"""Anthropic's memory tool over our blocks: one `memory` tool with the
commands view, create, str_replace, insert, delete and rename, on files
under /memories. A file is a core memory block: `/memories/notes` is the
block labelled `notes`; creating a file attaches a block with the default
limit, deleting one detaches it. Paths that could reach outside /memories
are refused (tools/blocks.py `label_of_path`), and every write goes through
core memory's read-only and limit rules. The descriptions are our own."""

from __future__ import annotations

from typing import Literal

from memgpt_lite.errors import ModelRetry
from memgpt_lite.models import Block
from memgpt_lite.tools.blocks import (
    MEMORIES,
    create_block,
    delete_block,
    find_block,
    get_block,
    insert_at,
    label_of_path,
    numbered,
    rename_block,
    replace_once,
    store_value,
)
from memgpt_lite.tools.schema import Tool, ToolContext, tool

CONDENSE = "memory (str_replace, or create to rewrite a file)"


def _path(label: str) -> str:
    return f"{MEMORIES}/{label}"


def _file(ctx: ToolContext, path: str | None, name: str = "path") -> Block:
    label = label_of_path(_needed(path, name), rooted=True)
    if label is None:
        raise ModelRetry(f"{MEMORIES} is the memory directory; {name} must name a file in it.")
    return get_block(ctx, label, as_files=True)


def _needed(value: str | None, name: str) -> str:
    if value is None:
        raise ModelRetry(f"this command needs {name}.")
    return value


def _entry(block: Block) -> str:
    flags = ", read-only" if block.read_only else ""
    about = f": {block.description}" if block.description else ""
    return f"{_path(block.label)} ({len(block.value)}/{block.limit} chars{flags}){about}"


def _view(ctx: ToolContext, path: str, view_range: list[int] | None) -> str:
    label = label_of_path(path, rooted=True)
    block = None if label is None else find_block(ctx, label)
    if block is None:
        prefix = "" if label is None else f"{label}/"
        inside = [b for b in ctx.store.get_blocks(ctx.state.id) if b.label.startswith(prefix)]
        if label is not None and not inside:
            get_block(ctx, label, as_files=True)  # says which files there are
        listing = "\n".join(_entry(b) for b in inside) or "(empty)"
        return f"Files in {path.rstrip('/')}:\n{listing}"
    lines = block.value.split("\n")
    first, last = 1, len(lines)
    if view_range is not None:
        if len(view_range) != 2 or not 1 <= view_range[0] <= len(lines):
            raise ModelRetry(f"view_range is [first, last] with first in 1-{len(lines)}.")
        first = view_range[0]
        last = len(lines) if view_range[1] == -1 else min(view_range[1], len(lines))
        if last < first:
            raise ModelRetry("view_range's last line is before its first.")
    shown = numbered("\n".join(lines[first - 1 : last]), first)
    return f"{_entry(block)}, lines {first}-{last}:\n{shown}"


def _create(ctx: ToolContext, path: str | None, file_text: str | None) -> str:
    label = label_of_path(_needed(path, "path"), rooted=True)
    if label is None:
        raise ModelRetry(f"{MEMORIES} is the memory directory; create a file inside it.")
    text = _needed(file_text, "file_text")
    block = find_block(ctx, label)
    if block is None:
        create_block(ctx, label, text, "", CONDENSE)
        return f"Created {_path(label)} ({len(text)} chars)."
    store_value(ctx, block, text, CONDENSE)
    return f"Overwrote {_path(label)} ({len(text)} chars)."


def _rename(ctx: ToolContext, old_path: str | None, new_path: str | None) -> str:
    block = _file(ctx, old_path, "old_path")
    new_label = label_of_path(_needed(new_path, "new_path"), rooted=True)
    if new_label is None:
        raise ModelRetry(f"new_path must name a file inside {MEMORIES}.")
    old_label = block.label
    rename_block(ctx, block, new_label)
    return f"Renamed {_path(old_label)} to {_path(new_label)}."


@tool(
    quick=True,
    brief="Your /memories files, kept in context. view path (file or directory), view_range "
    "[first, last] (-1: end); create path with file_text (overwrites); str_replace in path "
    "old_str (exact, once) with new_str; insert insert_text in path after insert_line (0: "
    "first); delete path; rename old_path to new_path.",
    brief_args={
        name: ""
        for name in (
            "command",
            "path",
            "view_range",
            "file_text",
            "old_str",
            "new_str",
            "insert_line",
            "insert_text",
            "old_path",
            "new_path",
        )
    },
)
def memory(
    ctx: ToolContext,
    command: Literal["view", "create", "str_replace", "insert", "delete", "rename"],
    path: str | None = None,
    view_range: list[int] | None = None,
    file_text: str | None = None,
    old_str: str | None = None,
    new_str: str | None = None,
    insert_line: int | None = None,
    insert_text: str | None = None,
    old_path: str | None = None,
    new_path: str | None = None,
) -> str:
    """Your memory directory, /memories: files that stay in your context across
    conversations. View it before you start; keep files short and up to date.

    Args:
        command: view a file or the directory; create (or overwrite) a file; str_replace
            text in a file; insert text at a line; delete a file; rename a file.
        path: The file or directory, such as /memories/notes (all but rename).
        view_range: [first, last] lines to view, last -1 for the end (view).
        file_text: The whole text of the file (create).
        old_str: The exact text to replace; it must appear once (str_replace).
        new_str: The text to put in its place (str_replace).
        insert_line: Insert after this line; 0 puts the text first (insert).
        insert_text: The text to insert (insert).
        old_path: The file to rename (rename).
        new_path: Its new path (rename).
    """
    if command == "view":
        return _view(ctx, _needed(path, "path"), view_range)
    if command == "create":
        return _create(ctx, path, file_text)
    if command == "rename":
        return _rename(ctx, old_path, new_path)
    block = _file(ctx, path)
    if command == "delete":
        delete_block(ctx, block)
        return f"Deleted {_path(block.label)}."
    if command == "str_replace":
        value = replace_once(block, _needed(old_str, "old_str"), new_str or "")
    else:
        text = _needed(insert_text, "insert_text")
        value = insert_at(block.value, text, _needed_line(insert_line))
    store_value(ctx, block, value, CONDENSE)
    return f"Edited {_entry(block)}."


def _needed_line(insert_line: int | None) -> int:
    if insert_line is None or insert_line < 0:
        raise ModelRetry("insert needs insert_line: 0 for the start, or the line to insert after.")
    return insert_line


ANTHROPIC_MEMORY_TOOLS: dict[str, Tool] = {memory.name: memory}
