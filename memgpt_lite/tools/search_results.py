"""The pages of the search tools (conversation_search, conversation_search_date,
archival_memory_search, in every tool set): as many results a page as the
agent's window has room for, so that what the model asked for reaches it
whole, and a header that says which page this is and how to ask for the next.

A page's size comes from the budget (`result_room`: the size over which a
message would be clipped in a request), not from the results, so the same
page number always starts at the same result while the agent's window stays
the same. The results are laid out as a listing (memory/recall/listing.py),
which the request's clipper can shorten by whole results if it must.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from memgpt_lite.memory.recall.clipping import water_level
from memgpt_lite.memory.recall.listing import entry, render
from memgpt_lite.memory.recall.window import result_room
from memgpt_lite.models import Message
from memgpt_lite.tools.schema import ToolContext

# The most results a page holds, in a window with room for more.
PAGE_SIZE = 5
# About what one result takes (a dated line and a message of a few
# sentences): a page holds as many of these as there is room for, at least one.
RESULT_TOKENS = 80
# Room a page keeps under the agent's tool_result_max_chars for its header
# and marks, so cutting the whole result never cuts one of its entries.
_HEADER_CHARS = 300


@dataclass(frozen=True)
class Paging:
    """Which results a page shows: page `page` of pages of `size` results."""

    page: int
    size: int

    @property
    def offset(self) -> int:
        return self.page * self.size


def paging(ctx: ToolContext, page: int) -> Paging:
    """Page `page`, sized to the room the agent's window has for a result."""
    return Paging(page, max(1, min(PAGE_SIZE, result_room(ctx.deps) // RESULT_TOKENS)))


def page_header(what: str, paging: Paging, total: int) -> str:
    pages = max(1, math.ceil(total / paging.size))
    first = paging.offset + 1
    last = min(total, paging.offset + paging.size)
    more = f"; the next: page={paging.page + 1}" if paging.page + 1 < pages else ""
    return (
        f"Showing {first}-{last} of {total} {what} "
        f"(page {paging.page} of pages 0-{pages - 1}, {paging.size} a page{more}):"
    )


def nothing_on_page(what: str, paging: Paging, total: int) -> str:
    if total == 0:
        return f"No {what} found."
    pages = max(1, math.ceil(total / paging.size))
    return f"No {what} on page {paging.page}; total {total}, on pages 0-{pages - 1}."


def page_text(ctx: ToolContext, header: str, entries: Sequence[str]) -> str:
    """The page: `header` and `entries`, each cut so that the whole stays
    within the agent's `tool_result_max_chars` (which would otherwise cut it
    in the middle of a result)."""
    room = ctx.state.settings.tool_result_max_chars - len(header) - _HEADER_CHARS
    cap = max(100, water_level([len(e) for e in entries], room))  # short ones stay whole
    return render(header, [_clip_chars(e, cap) for e in entries])


def _clip_chars(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    marker = f" …[result clipped: {len(text)} characters; the rest is stored]"
    return text[: max(0, max_chars - len(marker))].rstrip() + marker


def messages_page(
    ctx: ToolContext, what: str, paging: Paging, found: Sequence[Message], total: int
) -> str:
    """A page of past messages, or why there is none."""
    if not found:
        return nothing_on_page(what, paging, total)
    entries = []
    for message in found:
        when = message.created_at.strftime("%Y-%m-%d %H:%M UTC")
        entries.append(entry(f"[{when}] {message.role}: {message.search_text()}"))
    return page_text(ctx, page_header(what, paging, total), entries)
