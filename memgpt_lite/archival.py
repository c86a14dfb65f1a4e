"""Archival memory, the unbounded tier: `agent.archival.insert/search/list/...`.

Long text is cut into retrievable chunks of a few hundred tokens, on paragraph
and sentence boundaries where it can be. An exact duplicate of a stored
passage is skipped (and reported). With an embedder, new passages are embedded
as they are stored; if that fails they are stored anyway and embedded on the
next search.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from .embeddings import Embedder
from .errors import ConfigError, LLMError
from .models import Passage
from .search import backfill, check_embedder, search_passages, store_vectors
from .text import clean_text, clean_texts
from .tokens import TokenCounter

if TYPE_CHECKING:
    from .agent import Agent

log = logging.getLogger(__name__)

CHUNK_TOKENS = 300
TEXT_SUFFIXES = {".txt", ".md", ".markdown", ".rst", ".text", ".csv", ".json", ".log"}
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


def _tail(text: str, words: int = 40) -> str:
    return " ".join(text.split()[-words:])


@dataclass
class InsertReport:
    stored: list[Passage] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)  # ids of the passages already held


class ArchivalMemory:
    """An agent's archival memory."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    @property
    def _agent_id(self) -> str:
        return self.agent.state.id

    def insert(
        self,
        text: str,
        tags: Sequence[str] = (),
        created_at: datetime | None = None,
        chunk_tokens: int = CHUNK_TOKENS,
    ) -> InsertReport:
        """Store `text` (chunked if long) with optional tags and time."""
        if not text.strip():
            raise ConfigError("the passage is empty")
        tags = sorted({t.strip() for t in tags if t.strip()})
        chunks = chunk_text(self.agent.token_counter, text, chunk_tokens)
        when = {"created_at": created_at} if created_at else {}
        passages = [
            # A later chunk's context is the end of the one before it, so a chunk
            # whose subject was named earlier can still be found by it.
            Passage(
                agent_id=self._agent_id,
                text=chunk,
                tags=tags,
                context=_tail(chunks[i - 1]) if i else "",
                **when,
            )
            for i, chunk in enumerate(chunks)
        ]
        report = self._store(passages)
        self._embed(report.stored)
        return report

    def insert_many(self, passages: Sequence[Passage]) -> InsertReport:
        """Store prepared passages (no chunking), for bulk loads."""
        report = self._store(passages)
        self._embed(report.stored)
        return report

    def _store(self, passages: Sequence[Passage]) -> InsertReport:
        report = InsertReport()
        for passage, stored in zip(passages, self.agent.store.add_passages(passages), strict=True):
            if stored:
                report.stored.append(passage)
            else:
                existing = self.agent.store.passage_id_for_text(self._agent_id, passage.text)
                report.duplicates.append(existing or "")
        return report

    def _embed(self, passages: Sequence[Passage]) -> None:
        if self.agent.embedder is None or not passages:
            return
        try:
            store_vectors(
                self.agent,
                "passage",
                [p.seq or 0 for p in passages],
                [p.text for p in passages],
            )
        except LLMError as exc:
            log.warning(
                "agent %s: embedding failed; the passages will be embedded at the next search: %s",
                self.agent.state.name,
                exc,
            )

    def search(
        self,
        query: str,
        limit: int = 5,
        offset: int = 0,
        tags: Sequence[str] | None = None,
        start: date | None = None,
        end: date | None = None,
    ) -> tuple[list[Passage], int]:
        """Passages for a plain-text query, best first, and how many matched."""
        return search_passages(self.agent, query, limit, offset, tags, start, end)

    def list(
        self, limit: int = 20, offset: int = 0, tags: Sequence[str] | None = None
    ) -> tuple[list[Passage], int]:
        return self.agent.store.list_passages(self._agent_id, limit, offset, clean_texts(tags))

    def get(self, passage_id: str) -> Passage:
        return self.agent.store.get_passage(self._agent_id, clean_text(passage_id))

    def delete(self, passage_id: str) -> None:
        self.agent.store.delete_passage(self._agent_id, clean_text(passage_id))

    def count(self) -> int:
        return self.agent.store.agent_stats(self._agent_id).passage_count

    def load_path(
        self,
        path: Path,
        tags: Sequence[str] = (),
        progress: Callable[[Path, int], None] | None = None,
    ) -> tuple[int, int, int]:
        """Load a text file, or every text file under a folder. Returns
        (files, passages stored, duplicates skipped); `progress(file, size)`
        is called as each file is done."""
        path = Path(path).expanduser()
        if not path.exists():
            raise ConfigError(f"{path} does not exist")
        files = (
            [path]
            if path.is_file()
            else sorted(
                p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES
            )
        )
        stored = duplicates = 0
        for file in files:
            try:
                text = file.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                raise ConfigError(f"{file} is not UTF-8 text") from None
            if text.strip():
                report = self.insert(text, tags=[*tags, f"file:{file.name}"])
                stored += len(report.stored)
                duplicates += len(report.duplicates)
            if progress:
                progress(file, file.stat().st_size)
        return len(files), stored, duplicates

    def reembed(self, embedder: Embedder, progress: Callable[[int], None] | None = None) -> int:
        """Replace every stored vector with ones from `embedder`. Returns the
        number of passages embedded (messages are embedded at their next search)."""
        agent = self.agent
        agent.store.delete_vectors(self._agent_id)
        agent.state.embedding_model = None
        agent.state.embedding_dimension = None
        agent.store.save_agent(agent.state)
        agent.set_embedder(embedder)
        done = 0
        while count := backfill(agent, "passage", limit=256):
            done += count
            if progress:
                progress(count)
        check_embedder(agent)
        return done
