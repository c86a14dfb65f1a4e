"""Archival memory, the unbounded tier: `agent.archival.insert/search/list/...`.

Long text is cut into retrievable chunks of a few hundred tokens (chunks.py).
An exact duplicate of a stored
passage is skipped (and reported). An insert, and a load of many files, is
all or nothing: every passage of it is stored, or none is. With an embedder,
new passages are embedded before they are stored; if the embedder's endpoint
fails they are stored anyway and embedded on the next search.

Facts change: an insert may name the passages it `replaces` (the old
address). They are kept, marked superseded by the new passage (the first, if
the text is cut into several) in the same transaction as the insert; search
ranks them after the current ones, and `history` shows the chain of a fact.

An agent may have an archive attached besides its own (a named archive, or
another agent's own: storage/protocols/archives.py), as a Letta agent has
its archive: what it inserts goes there, for every agent the archive is
attached to, and its searches, lists and reads take in the archive's
passages with its own. The two are searched apart (each its own words and
vectors, by its own embedder) and their results taken in turn, the best of
each first: their scores, from two indexes, do not compare. An agent with
no archive attached searches its own alone, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from itertools import zip_longest
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memgpt_lite.embeddings.embedder import Embedder
from memgpt_lite.errors import ConfigError, LLMError, NotFoundError
from memgpt_lite.memory.archival.chunks import CHUNK_TOKENS, chunk_text
from memgpt_lite.memory.retrieval.dates import annotate
from memgpt_lite.memory.retrieval.search import (
    backfill,
    check_embedder,
    passage_vectors,
    record_vectors,
    search_passages,
)
from memgpt_lite.models import AgentState, Passage, utcnow
from memgpt_lite.storage.core.words import fts_words
from memgpt_lite.text import clean_text, clean_texts

if TYPE_CHECKING:
    from memgpt_lite.memory.deps import MemoryDeps

log = logging.getLogger(__name__)

TEXT_SUFFIXES = {".txt", ".md", ".markdown", ".rst", ".text", ".csv", ".json", ".log"}


def _read_text(file: Path) -> str:
    """A file's text, or a ConfigError saying why not (nothing is stored yet)."""
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{file} is not UTF-8 text; nothing was loaded") from None
    except OSError as exc:
        raise ConfigError(
            f"cannot read {file}: {exc.strerror or exc}; nothing was loaded"
        ) from None


def _tail(text: str, words: int = 40) -> str:
    return " ".join(text.split()[-words:])


def _dated(passage: Passage) -> Passage:
    """The passage with its relative dates annotated (the same object if none).
    A copy, with the same id: the caller's passage is left as it was."""
    text = annotate(passage.text, passage.created_at)
    return passage if text == passage.text else passage.model_copy(update={"text": text})


@dataclass
class InsertReport:
    stored: list[Passage] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)  # ids of the passages already held
    ids: list[str] = field(default_factory=list)  # the passage holding each chunk, in order
    replaced: list[str] = field(default_factory=list)  # ids of the passages now superseded


def _in_turn(first: Sequence[Passage], second: Sequence[Passage]) -> list[Passage]:
    """Two best-first lists as one, taking from each in turn, the current
    passages before the replaced ones (each list ranks them so)."""
    taken = [p for pair in zip_longest(first, second) for p in pair if p is not None]
    return sorted(taken, key=lambda p: p.superseded_by is not None)


class ArchivalMemory:
    """An agent's archival memory: its own passages, and those of the
    archive attached to it, if any (see the module's doc). `attached=False`:
    its own alone (an archive's, as the archive routes reach it)."""

    def __init__(self, agent: MemoryDeps, *, attached: bool = True) -> None:
        self.agent = agent
        self._with_attached = attached

    @property
    def _agent_id(self) -> str:
        return self.agent.state.id

    def attached(self) -> ArchivalMemory | None:
        """The archival memory of the archive attached to the agent, None
        without one (read with the agent's row: no query when there is none)."""
        if not self._with_attached or self.agent.state.attached_archive is None:
            return None
        archive = self.agent.attached_archive()
        return None if archive is None else ArchivalMemory(archive, attached=False)

    def insert(
        self,
        text: str,
        tags: Sequence[str] = (),
        created_at: datetime | None = None,
        chunk_tokens: int = CHUNK_TOKENS,
        replaces: Sequence[str] = (),
    ) -> InsertReport:
        """Store `text` (chunked if long) with optional tags and time: every
        passage of it, or, if anything fails, none; its relative dates are
        resolved as `insert_many` does. `replaces`: ids of
        passages the text makes out of date, marked superseded by its first
        passage (by the passage already holding the text, if it is a
        duplicate: so a stored fact can replace others without a new copy).
        NotFoundError for an unknown id, ConfigError for one that cannot be
        replaced by it; nothing is stored then. With an archive attached,
        stored in the archive (`replaces` naming its passages)."""
        archive = self.attached()
        if archive is not None:
            return archive.insert(text, tags, created_at, chunk_tokens, replaces)
        passages = [_dated(p) for p in self._chunked(text, tags, created_at, chunk_tokens)]
        replaces = clean_texts(list(dict.fromkeys(r.strip() for r in replaces if r.strip())))
        return self._store(passages, self._embed_new(passages) or {}, replaces or ())

    def _chunked(
        self,
        text: str,
        tags: Sequence[str] = (),
        created_at: datetime | None = None,
        chunk_tokens: int = CHUNK_TOKENS,
    ) -> list[Passage]:
        if not text.strip():
            raise ConfigError("the passage is empty")
        tags = sorted({t.strip() for t in tags if t.strip()})
        chunks = chunk_text(self.agent.token_counter, text, chunk_tokens)
        when = {"created_at": created_at} if created_at else {}
        return [
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

    def insert_many(self, passages: Sequence[Passage]) -> InsertReport:
        """Store prepared passages (no chunking), for bulk loads: all or none.
        Relative dates in their text are resolved at each passage's own time
        (an imported conversation's dates, or now) and written beside them
        ("yesterday [2023-05-07]", see memory/retrieval/dates.py). With an
        archive attached, stored in the archive, as the archive's."""
        archive = self.attached()
        if archive is not None:
            moved = [p.model_copy(update={"agent_id": archive._agent_id}) for p in passages]
            return archive.insert_many(moved)
        passages = [_dated(p) for p in passages]
        return self._store(passages, self._embed_new(passages) or {})

    def _embed_new(self, passages: Sequence[Passage]) -> dict[str, np.ndarray] | None:
        """Vectors, by passage id, for the passages not stored yet, made before
        anything is written, so that no write waits for the embedder and a
        failure leaves nothing behind. None if the embedder's endpoint failed:
        the passages are stored anyway and embedded at the next search."""
        store = self.agent.store
        new = [p for p in passages if store.passage_id_for_text(self._agent_id, p.text) is None]
        if self.agent.embedder is None or not new:
            return {}
        try:
            vectors = passage_vectors(self.agent, new)
        except LLMError as exc:
            log.warning(
                "agent %s: embedding failed; the passages will be embedded at the next search: %s",
                self.agent.state.name,
                exc,
            )
            return None
        if vectors is None:
            return {}
        return {p.id: vector for p, vector in zip(new, vectors, strict=True)}

    def _store(
        self,
        passages: Sequence[Passage],
        vectors: dict[str, np.ndarray],
        replaces: Sequence[str] = (),
    ) -> InsertReport:
        """Store the passages and their vectors, and mark the passages they
        replace, in one transaction."""
        report = InsertReport()
        store = self.agent.store
        with store.transaction():
            for passage, stored in zip(passages, store.add_passages(passages), strict=True):
                if stored:
                    report.stored.append(passage)
                    report.ids.append(passage.id)
                else:
                    held = store.passage_id_for_text(self._agent_id, passage.text) or ""
                    report.duplicates.append(held)
                    report.ids.append(held)
            if replaces and report.ids:
                # A new passage's own time (a backdated insert replaced them
                # then); a fact already held replaces them now.
                new = [p.created_at for p in report.stored if p.id == report.ids[0]]
                at = new[0] if new else utcnow()
                store.supersede_passages(self._agent_id, replaces, report.ids[0], at)
                report.replaced = list(replaces)
            embedded = [p for p in report.stored if p.id in vectors]
            if embedded:
                matrix = np.stack([vectors[p.id] for p in embedded])
                record_vectors(self.agent, "passage", [p.seq or 0 for p in embedded], matrix)
        return report

    def search(
        self,
        query: str,
        limit: int = 5,
        offset: int = 0,
        tags: Sequence[str] | None = None,
        start: date | None = None,
        end: date | None = None,
        include_superseded: bool = True,
    ) -> tuple[list[Passage], int]:
        """Passages for a plain-text query, best first, and how many matched:
        the current ones first, then (unless `include_superseded` is False)
        those a newer passage replaced, marked by their `superseded_by`.
        With an archive attached, its passages and the agent's own in turn."""
        archive = self.attached()
        if archive is None:
            return search_passages(
                self.agent, query, limit, offset, tags, start, end, include_superseded
            )
        both = [
            search_passages(deps, query, offset + limit, 0, tags, start, end, include_superseded)
            for deps in (self.agent, archive.agent)
        ]
        found = _in_turn(both[0][0], both[1][0])
        return found[offset : offset + limit], both[0][1] + both[1][1]

    def related(self, report: InsertReport, limit: int = 3) -> list[Passage]:
        """Current passages close to what `report` stored, that it neither
        holds nor replaced: likely contradictions for the one who inserted it
        to judge (a new address beside the old one). Close means among the
        best search hits for its text and sharing a word with it: with an
        embedder, the nearest vectors of a small memory may be unrelated."""
        held = {*report.ids, *report.replaced}
        if not held:
            return []
        # The first passage: a fact is short, and a long text's query would be slow.
        first = [p for p in report.stored if p.id == report.ids[0]]
        text = (first[0] if first else self.get(report.ids[0])).text
        words = set(fts_words(text))
        found, _ = self.search(text, limit + len(held), include_superseded=False)
        close = [p for p in found if p.id not in held and words & set(fts_words(p.text))]
        return close[:limit]

    def history(self, passage_id: str) -> list[Passage]:
        """The chain of one fact: the passages `passage_id` replaced (and
        those they replaced, in turn), itself, then those that replaced it,
        oldest first. NotFoundError if the agent has no such passage."""
        store, agent_id = self.agent.store, self._agent_id
        archive = self.attached()
        if archive is not None:
            try:
                store.get_passage(agent_id, clean_text(passage_id))
            except NotFoundError:
                return archive.history(passage_id)  # a fact of the archive's
        passage = self.get(passage_id)
        earlier: list[Passage] = []
        seen = {passage.id}
        frontier = [passage.id]
        while frontier:
            replaced = [p for i in frontier for p in store.passages_replaced_by(agent_id, i)]
            replaced = [p for p in replaced if p.id not in seen]
            seen.update(p.id for p in replaced)
            earlier += replaced
            frontier = [p.id for p in replaced]
        later: list[Passage] = []
        current = passage
        while current.superseded_by and current.superseded_by not in seen:
            current = store.get_passage(agent_id, current.superseded_by)
            seen.add(current.id)
            later.append(current)
        return [*sorted(earlier, key=lambda p: p.seq or 0), passage, *later]

    def list(
        self,
        limit: int = 20,
        offset: int = 0,
        tags: Sequence[str] | None = None,
        include_superseded: bool = True,
    ) -> tuple[list[Passage], int]:
        """Passages newest first (stored last first: an attached archive's
        among the agent's own); without `include_superseded`, current ones only."""
        archive = self.attached()
        superseded = None if include_superseded else False
        if archive is None:
            store = self.agent.store
            return store.list_passages(
                self._agent_id, limit, offset, clean_texts(tags), superseded=superseded
            )
        both = [
            deps.store.list_passages(
                deps.state.id, offset + limit, 0, clean_texts(tags), superseded=superseded
            )
            for deps in (self.agent, archive.agent)
        ]
        found = sorted([*both[0][0], *both[1][0]], key=lambda p: p.seq or 0, reverse=True)
        return found[offset : offset + limit], both[0][1] + both[1][1]

    def get(self, passage_id: str) -> Passage:
        """One passage, the agent's own or its attached archive's."""
        try:
            return self.agent.store.get_passage(self._agent_id, clean_text(passage_id))
        except NotFoundError:
            archive = self.attached()
            if archive is None:
                raise
            return archive.get(passage_id)

    def delete(self, passage_id: str) -> None:
        """Delete one passage, the agent's own or its attached archive's (for
        every agent the archive is attached to)."""
        try:
            self.agent.store.delete_passage(self._agent_id, clean_text(passage_id))
        except NotFoundError:
            archive = self.attached()
            if archive is None:
                raise
            archive.delete(passage_id)

    def count(self) -> int:
        archive = self.attached()
        own = self.agent.store.agent_stats(self._agent_id).passage_count
        return own + (archive.count() if archive is not None else 0)

    def load_path(
        self,
        path: Path,
        tags: Sequence[str] = (),
        progress: Callable[[Path, int], None] | None = None,
    ) -> tuple[int, int, int]:
        """Load a text file, or every text file under a folder, all or nothing:
        every file is read, chunked and embedded before one transaction stores
        them all. Returns (files, passages stored, duplicates skipped);
        `progress(file, size)` is called as each file is read. With an
        archive attached, into the archive."""
        archive = self.attached()
        if archive is not None:
            return archive.load_path(path, tags, progress)
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
        passages: list[Passage] = []
        vectors: dict[str, np.ndarray] | None = {}
        for file in files:
            text = _read_text(file)
            if text.strip():
                chunked = self._chunked(text, tags=[*tags, f"file:{file.name}"])
                passages += chunked
                # After one failure of the endpoint, the rest wait for the next search too.
                found = self._embed_new(chunked) if vectors is not None else None
                vectors = None if found is None or vectors is None else vectors | found
            if progress:
                progress(file, file.stat().st_size)
        report = self._store(passages, vectors or {})
        return len(files), len(report.stored), len(report.duplicates)

    def reembed(self, embedder: Embedder, progress: Callable[[int], None] | None = None) -> int:
        """Replace every stored vector with ones from `embedder`. Returns the
        number of passages embedded (messages are embedded at their next search)."""
        agent = self.agent

        def forget_space(state: AgentState) -> None:
            state.embedding_model = None
            state.embedding_dimension = None

        with agent.store.transaction():
            agent.store.delete_vectors(self._agent_id)
            agent.state = agent.store.update_agent(self._agent_id, forget_space)
        agent.set_embedder(embedder)
        done = 0
        while count := backfill(agent, "passage", limit=256):
            done += count
            if progress:
                progress(count)
        check_embedder(agent)
        return done
