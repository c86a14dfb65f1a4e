"""The built-in tools, with the names and parameters MemGPT users know.

Each function's signature and docstring are its schema; its body is its
behaviour. They run inside the step's transaction, so memory edits commit
together with the tool results, and read blocks fresh from the database so an
edit to a shared block never overwrites another agent's edit.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from memgpt_lite.errors import ConfigError, ModelRetry, NotFoundError
from memgpt_lite.memory.archival.passages import ArchivalMemory
from memgpt_lite.memory.core.block_history import agent_author
from memgpt_lite.memory.core.blocks import append_to_block, replace_in_block
from memgpt_lite.memory.recall.listing import entry
from memgpt_lite.memory.recall.window import core_memory_overflow, full_core_memory
from memgpt_lite.memory.retrieval.search import search_messages
from memgpt_lite.models import Block, Passage
from memgpt_lite.tools.schema import Tool, ToolContext, tool
from memgpt_lite.tools.search_results import (
    messages_page,
    nothing_on_page,
    page_header,
    page_text,
    paging,
)

MAX_PAGE = 1_000_000


def _block(ctx: ToolContext, label: str) -> Block:
    store = ctx.store
    for block in store.get_blocks(ctx.state.id):
        if block.label == label:
            return block
    labels = ", ".join(b.label for b in store.get_blocks(ctx.state.id))
    raise ModelRetry(f"there is no core memory block labelled {label!r}; the blocks are: {labels}.")


def _save_block(ctx: ToolContext, block: Block, new_value: str) -> None:
    """Store an edit, unless it would crowd the conversation out of the window."""
    problem = core_memory_overflow(ctx.deps, block, new_value)
    if problem:
        raise ModelRetry(full_core_memory(problem, "core_memory_replace"))
    block.value = new_value
    ctx.store.save_block(block, author=agent_author(ctx.state.name))


@tool(heartbeat=False, quick=True, brief="Show the user a message.", brief_args={"message": ""})
def send_message(ctx: ToolContext, message: str) -> str:
    """Send a message to the user. This is the only way the user sees anything you say.

    Args:
        message: The message for the user.
    """
    if not message.strip():
        raise ModelRetry("message is empty: the user would see nothing. Write the message.")
    # Several calls in one response are all delivered, in order: a model that
    # splits its answer in two expects the user to see both parts.
    ctx.replies.append(message)
    return "Sent message successfully."


@tool(
    quick=True,
    brief="Add content as a new line of block label.",
    brief_args={"label": "", "content": ""},
)
def core_memory_append(ctx: ToolContext, label: str, content: str) -> str:
    """Append a line to a core memory block. Core memory is always in your context.

    Args:
        label: The block to edit, such as "human" or "persona".
        content: The text to add, as a new line.
    """
    block = _block(ctx, label)
    new_value = append_to_block(block, content)
    if new_value is None:
        return f"No change: block {label!r} already holds that line."
    _save_block(ctx, block, new_value)
    return f"Appended to block {label!r} ({len(new_value)}/{block.limit} characters)."


@tool(
    quick=True,
    brief="In block label, replace old_content (exact text) with new_content; empty deletes.",
    brief_args={"label": "", "old_content": "", "new_content": ""},
)
def core_memory_replace(ctx: ToolContext, label: str, old_content: str, new_content: str) -> str:
    """Replace text in a core memory block. Use an empty new_content to delete text.

    Args:
        label: The block to edit, such as "human" or "persona".
        old_content: The exact text to replace, as it appears in the block.
        new_content: The text to put in its place.
    """
    block = _block(ctx, label)
    _save_block(ctx, block, replace_in_block(block, old_content, new_content))
    return f"Replaced in block {label!r} ({len(block.value)}/{block.limit} characters)."


def _check_page(page: int) -> None:
    if page < 0:
        raise ModelRetry("page starts at 0.")
    if page > MAX_PAGE:  # an offset SQLite cannot even hold would come next
        raise ModelRetry(f"page is past any result; pages go up to {MAX_PAGE}.")


@tool(
    brief="Search past messages for query's words; page from 0.",
    brief_args={"query": "", "page": ""},
)
def conversation_search(ctx: ToolContext, query: str, page: int = 0) -> str:
    """Search your past conversation (recall memory) for messages about something.

    Args:
        query: Plain words to look for.
        page: Which page of results, starting at 0.
    """
    _check_page(page)
    shown = paging(ctx, page)
    found, total = search_messages(
        ctx.deps, query, shown.size, shown.offset, exclude_step_id=ctx.step_id
    )
    return messages_page(ctx, f"results for {query!r}", shown, found, total)


def _parse_date(value: str, name: str) -> date:
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        raise ModelRetry(f"{name} must be a date as YYYY-MM-DD, got {value!r}.") from None


@tool(
    brief="Messages from start_date to end_date (YYYY-MM-DD UTC, inclusive); page from 0.",
    brief_args={"start_date": "", "end_date": "", "page": ""},
)
def conversation_search_date(
    ctx: ToolContext, start_date: str, end_date: str, page: int = 0
) -> str:
    """Find past messages from a range of days (inclusive, UTC).

    Args:
        start_date: The first day, as YYYY-MM-DD.
        end_date: The last day, as YYYY-MM-DD.
        page: Which page of results, starting at 0.
    """
    _check_page(page)
    start, end = _parse_date(start_date, "start_date"), _parse_date(end_date, "end_date")
    if end < start:
        raise ModelRetry("end_date is before start_date.")
    shown = paging(ctx, page)
    found, total = ctx.store.messages_between(
        ctx.state.id, start, end, shown.size, shown.offset, exclude_step_id=ctx.step_id
    )
    return messages_page(ctx, f"messages from {start} to {end}", shown, found, total)


@tool(
    brief="Save content, self-contained, to archival memory (relative dates become dates); "
    "tags to filter by; replaces: ids of passages it outdates.",
    brief_args={"content": "", "tags": "", "replaces": ""},
)
def archival_memory_insert(
    ctx: ToolContext, content: str, tags: list[str] | None = None, replaces: list[str] | None = None
) -> str:
    """Save to archival memory, your unlimited long-term store. Write it so it can
    be found and understood later on its own; long text is split into passages.
    Relative dates ("yesterday") are saved with the date they mean.

    Args:
        content: The text to save.
        tags: Optional labels to filter by later, such as ["recipe", "family"].
        replaces: Ids of passages this one makes out of date (a fact that changed).
    """
    if not content.strip():
        raise ModelRetry("content is empty: there is nothing to save.")
    archival = ArchivalMemory(ctx.deps)
    try:
        report = archival.insert(content, tags=tags or (), replaces=replaces or ())
    except (NotFoundError, ConfigError) as exc:
        raise ModelRetry(f"{exc}. Nothing was saved.") from None
    parts = []
    if report.stored:
        ids = ", ".join(p.id for p in report.stored)
        parts.append(f"Saved {len(report.stored)} passage(s) to archival memory: {ids}.")
    if report.duplicates:
        parts.append(
            f"Skipped {len(report.duplicates)} passage(s) already stored word for word "
            f"({', '.join(report.duplicates)}); nothing new was needed."
        )
    if report.replaced:
        parts.append(
            f"Marked out of date, replaced by {report.ids[0]}: {', '.join(report.replaced)}."
        )
    return " ".join(parts) + _related_note(archival.related(report))


def _related_note(related: Sequence[Passage]) -> str:
    """The close passages an insert left current, for the model to judge."""
    if not related:
        return ""
    lines = ["", "Close passages on the same subject, still current:"]
    lines += [f"- ({p.id}) {_short(p.text)}" for p in related]
    lines.append(
        "If one of these is now out of date, call archival_memory_insert again with the "
        "same content and replaces=[its id]; nothing is stored twice."
    )
    return "\n".join(lines)


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _optional_date(value: str | None, name: str) -> date | None:
    return _parse_date(value, name) if value else None


@tool(
    brief="Search archival memory for query (words, may name a time); page from 0; "
    "tags: any of; start_date to end_date (YYYY-MM-DD): when saved.",
    brief_args={"query": "", "page": "", "tags": "", "start_date": "", "end_date": ""},
)
def archival_memory_search(
    ctx: ToolContext,
    query: str,
    page: int = 0,
    tags: list[str] | None = None,
    start_date: str | None = None,
    end_date: str | None = None,
) -> str:
    """Search archival memory for passages about something.

    Args:
        query: Plain words describing what to find; may name a time ("in May 2023",
            "the week before June 3").
        page: Which page of results, starting at 0.
        tags: Only passages with at least one of these tags.
        start_date: Only passages saved on or after this day, YYYY-MM-DD.
        end_date: Only passages saved on or before this day, YYYY-MM-DD.
    """
    _check_page(page)
    start = _optional_date(start_date, "start_date")
    end = _optional_date(end_date, "end_date")
    shown = paging(ctx, page)
    found, total = ArchivalMemory(ctx.deps).search(
        query, shown.size, shown.offset, tags=tags, start=start, end=end
    )
    if not found:
        return nothing_on_page("passages", shown, total)
    entries = []
    for passage in found:
        when = passage.created_at.strftime("%Y-%m-%d %H:%M UTC")
        tag_text = f" tags: {', '.join(passage.tags)}" if passage.tags else ""
        first_line = f"[{when}] ({passage.id}){tag_text}{_superseded_mark(passage)}"
        entries.append(entry(first_line, passage.text))
    return page_text(ctx, page_header(f"passages for {query!r}", shown, total), entries)


def _superseded_mark(passage: Passage) -> str:
    """ " [superseded 2024-03-02 by passage-…]" for a replaced passage (listed
    after the current ones), "" for a current one."""
    if passage.superseded_by is None:
        return ""
    when = f" {passage.superseded_at:%Y-%m-%d}" if passage.superseded_at else ""
    return f" [superseded{when} by {passage.superseded_by}]"


BUILTIN_TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        send_message,
        core_memory_append,
        core_memory_replace,
        conversation_search,
        conversation_search_date,
        archival_memory_insert,
        archival_memory_search,
    )
}
