"""Long texts are counted by parts, each part's count kept (tokens.py): the
totals must be exactly what encoding the whole text gives, whatever the text."""

from __future__ import annotations

import random

import pytest

from memgpt_lite.llm.tokens import COUNT_BY_PARTS_FROM, TokenCounter

# Characters around the places where the text is cut into parts: line breaks,
# other whitespace, "/" (which a piece may carry after a line break),
# punctuation, letters, digits, contractions, non-ASCII letters and spaces.
PIECES = ["\n", "\n\n", "\r\n", " ", "\t", "/", "a", "Z", "<", ">", ".", "!", "7", "42"]
PIECES += ["'s", "'LL", "é", "中", "\u00a0", "\u2028", "\x1c", "-", "#", " /x", "\n/"]


def whole(counter: TokenCounter, text: str) -> int:
    return len(counter.encoding.encode_ordinary(text))


@pytest.mark.parametrize("model", ["gpt-4o-mini", "gpt-4"])  # o200k_base, cl100k_base
def test_by_parts_counts_what_the_whole_text_counts(model):
    counter, rng = TokenCounter(model), random.Random(7)
    for _ in range(400):
        size = rng.randint(COUNT_BY_PARTS_FROM, COUNT_BY_PARTS_FROM + 600)
        text = "".join(rng.choice(PIECES) for _ in range(size))
        assert counter.count_text(text) == whole(counter, text)


def test_a_system_message_that_changes_a_line_is_counted_afresh():
    counter = TokenCounter("gpt-4o-mini")
    lines = [f"<line {i}>Some remembered fact number {i}, and more.</line {i}>" for i in range(60)]
    text = "\n".join(lines)
    assert counter.count_text(text) == whole(counter, text)
    lines[30] = "<line 30>Now it says something much longer than it did before.</line 30>"
    changed = "\n".join(lines)
    assert counter.count_text(changed) == whole(counter, changed) != whole(counter, text)
