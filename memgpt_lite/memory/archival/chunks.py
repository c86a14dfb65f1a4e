"""Cutting long text into archival passages: retrievable chunks of a few
hundred tokens, on paragraph and sentence boundaries where it can be."""

from __future__ import annotations

import re
from collections.abc import Iterator

from memgpt_lite.llm.tokens import TokenCounter

CHUNK_TOKENS = 300
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _units(counter: TokenCounter, text: str, max_tokens: int) -> Iterator[tuple[str, str]]:
    """(piece, separator) pairs no longer than `max_tokens`: paragraphs, else
    sentences, else plain token windows."""
    for paragraph in re.split(r"\n\s*\n", text.strip()):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        if counter.count_text(paragraph) <= max_tokens:
            yield paragraph, "\n\n"
            continue
        for sentence in _SENTENCE_END.split(paragraph):
            tokens = counter.encoding.encode_ordinary(sentence)
            for i in range(0, len(tokens), max_tokens):
                yield counter.encoding.decode(tokens[i : i + max_tokens]).strip(), " "


def chunk_text(counter: TokenCounter, text: str, max_tokens: int = CHUNK_TOKENS) -> list[str]:
    """Cut `text` into chunks of at most about `max_tokens` tokens."""
    chunks: list[str] = []
    current, used = "", 0
    for piece, separator in _units(counter, text, max_tokens):
        size = counter.count_text(piece)
        if current and used + size > max_tokens:
            chunks.append(current)
            current, used = "", 0
        current = f"{current}{separator}{piece}" if current else piece
        used += size
    if current:
        chunks.append(current)
    return chunks
