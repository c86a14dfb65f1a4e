"""Search results as the model sees them: a header line, then one entry per
result, best first. The search tools write them (tools/search_results.py);
the context window's clipper reads them back (`fit_listing`), so a listing too
long for the request loses whole entries from its end, with a line saying
how many, and never the first: the model always sees the best result it
asked for, not only the header.

    Showing 1-2 of 7 results for 'tulips' (page 0 of pages 0-3; next: page=1):
    - [2026-03-01 09:12 UTC] user: I planted tulips
      along the fence.
    - [2026-02-27 18:40 UTC] assistant: ...

An entry's own lines after its first are indented two spaces (`entry`), so
an entry's text can never pass for the start of another one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memgpt_lite.llm.tokens import TokenCounter

_HEADER = re.compile(r"Showing \d+-\d+ of \d+ .*:")
ENTRY_START = "- "
INDENT = "  "
# The least of an entry worth showing, its marker included: its date and
# role take about 15 tokens, and less of its text says nothing.
MIN_ENTRY_TOKENS = 48


def entry(first_line: str, *more: str) -> str:
    """One result: `first_line` and the lines of `more`, every line after the
    first indented."""
    lines = "\n".join([first_line, *more]).split("\n")
    return "\n".join([ENTRY_START + lines[0], *(INDENT + line for line in lines[1:])])


def render(header: str, entries: Sequence[str]) -> str:
    return "\n".join([header, *entries])


def split_listing(text: str) -> tuple[str, list[str]] | None:
    """(header, entries) of a listing; None for any other text."""
    lines = text.split("\n")
    if len(lines) < 2 or not _HEADER.fullmatch(lines[0]):
        return None
    entries: list[str] = []
    for line in lines[1:]:
        if line.startswith(ENTRY_START):
            entries.append(line)
        elif line.startswith((INDENT, "[")) and entries:  # its text, or a note after it
            entries[-1] += "\n" + line
        else:
            return None
    return lines[0], entries


def clip_entry(counter: TokenCounter, text: str, max_tokens: int) -> str:
    """One entry cut to about `max_tokens` tokens, marked at its end (on its
    own last line, so the listing stays a listing)."""
    tokens = counter.encoding.encode_ordinary(text)
    if len(tokens) <= max_tokens:
        return text
    marker = f" …[entry clipped: {len(tokens)} tokens]"
    keep = max(MIN_ENTRY_TOKENS, max_tokens) - counter.count_text(marker)
    return counter.encoding.decode(tokens[:keep]).rstrip() + marker


def fit_listing(counter: TokenCounter, text: str, max_tokens: int) -> str | None:
    """The listing `text` in about `max_tokens` tokens: its header and as many
    whole entries from the first as fit, the first one clipped if even it
    does not, and a line saying how many were left out. None if `text` is no
    listing."""
    parts = split_listing(text)
    if parts is None:
        return None
    header, entries = parts
    if counter.count_text(text) <= max_tokens:
        return text
    sizes = [counter.count_text("\n" + item) for item in entries]
    room = max_tokens - counter.count_text(header)
    note = counter.count_text("\n" + _left_out(len(entries), len(entries)))
    kept, used = 0, 0
    while kept < len(entries) and used + sizes[kept] <= room - (
        note if kept + 1 < len(entries) else 0
    ):
        used += sizes[kept]
        kept += 1
    shown = entries[:kept]
    if not shown:  # never the header alone: the best result, as much as fits
        rest = room - (note if len(entries) > 1 else 0)
        shown = [clip_entry(counter, entries[0], max(MIN_ENTRY_TOKENS, rest))]
    left = len(entries) - len(shown)
    return render(header, [*shown, _left_out(left, len(entries))] if left else shown)


def _left_out(left: int, total: int) -> str:
    return (
        f"[{left} of the {total} results on this page left out to fit the context "
        "window: they are still stored; search more narrowly to see them]"
    )
