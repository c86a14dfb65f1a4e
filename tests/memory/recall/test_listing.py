"""A search listing clipped to fit a request (memory/recall/listing.py): whole
results from the best, how many were left out, never the header alone; and
the request's clipper applies it to tool results, not to other messages."""

from __future__ import annotations

from memgpt_lite.llm.tokens import TokenCounter
from memgpt_lite.memory.recall.clipping import clip_message
from memgpt_lite.memory.recall.listing import entry, fit_listing, render, split_listing

COUNTER = TokenCounter("gpt-4o-mini")
HEADER = "Showing 1-5 of 9 results for 'tulips' (page 0 of pages 0-1, 5 a page; the next: page=1):"
ENTRIES = [
    entry(f"[2026-03-0{i} 09:00 UTC] user: tulip note {i} " + "petal " * 20) for i in range(1, 6)
]
LISTING = render(HEADER, ENTRIES)


def test_a_listing_reads_back_with_multi_line_entries():
    text = render(
        HEADER, [entry("[2026-03-01 09:00 UTC] user: one\n- not a new result"), ENTRIES[1]]
    )
    header, entries = split_listing(text)
    assert header == HEADER and len(entries) == 2
    assert entries[0].endswith("\n  - not a new result")
    assert split_listing("Showing the garden:\nnothing") is None
    assert split_listing("plain text") is None


def test_whole_results_best_first_and_how_many_were_left_out():
    two = COUNTER.count_text(render(HEADER, ENTRIES[:2])) + 40
    fitted = fit_listing(COUNTER, LISTING, two)
    assert fitted == render(HEADER, [*ENTRIES[:2], fitted.split("\n")[-1]])
    assert fitted.endswith(
        "[3 of the 5 results on this page left out to fit the context window: "
        "they are still stored; search more narrowly to see them]"
    )
    assert COUNTER.count_text(fitted) <= two


def test_never_the_header_alone():
    fitted = fit_listing(COUNTER, LISTING, 30)
    lines = fitted.split("\n")
    assert lines[0] == HEADER
    assert lines[1].startswith("- [2026-03-01 09:00 UTC] user: tulip note 1")
    assert "[entry clipped:" in lines[1] and lines[2].startswith("[4 of the 5 results")


def test_a_listing_that_fits_is_unchanged():
    assert fit_listing(COUNTER, LISTING, 10_000) == LISTING
    assert fit_listing(COUNTER, "no listing here", 1) is None


def test_the_clipper_keeps_whole_results_of_a_tool_message_only():
    tool = clip_message(COUNTER, {"role": "tool", "content": LISTING, "tool_call_id": "c"}, 160)
    assert tool["content"].split("\n")[1] == ENTRIES[0]
    user = clip_message(COUNTER, {"role": "user", "content": LISTING}, 160)
    assert "[clipped:" in user["content"] and "results on this page" not in user["content"]
