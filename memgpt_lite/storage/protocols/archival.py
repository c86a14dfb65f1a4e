"""Archival memory: passages, their searches and the vectors of passages and
searchable messages (the part of `Storage` that keeps them)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date, datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

    from memgpt_lite.models import Passage
    from memgpt_lite.storage.protocols.types import Owner, Ranking, StoredVectors, VectorCounters


@runtime_checkable
class ArchivalStorage(Protocol):
    """Passages (archival memory), and vectors (one per passage or
    searchable message, once embedded)."""

    def add_passages(self, passages: Sequence[Passage]) -> list[bool]:
        """Store passages, all or none, skipping any whose text (surrounding
        space trimmed) the agent already has. Returns, per passage, whether it
        was stored; sets `seq` on those stored. NotFoundError, storing none,
        if one belongs to an unknown agent."""
        ...

    def add_passage(self, passage: Passage) -> bool:
        """`add_passages` of one."""
        ...

    def passage_id_for_text(self, agent_id: str, text: str) -> str | None:
        """The id of the agent's passage with this text (as `add_passages`
        compares texts), or None."""
        ...

    def get_passage(self, agent_id: str, passage_id: str) -> Passage:
        """One of the agent's passages. NotFoundError if it has no such passage."""
        ...

    def list_passages(
        self,
        agent_id: str,
        limit: int,
        offset: int = 0,
        tags: Sequence[str] | None = None,
        start: date | None = None,
        end: date | None = None,
        *,
        superseded: bool | None = None,
    ) -> tuple[list[Passage], int]:
        """One page of the agent's passages, newest first, and how many pass
        the filters: any of `tags`, created from `start` to `end` inclusive,
        and, if `superseded` is not None, only replaced passages (True) or
        only current ones (False)."""
        ...

    def newest_passage_time(self, agent_id: str) -> datetime | None:
        """The time (`created_at`) of the agent's last stored passage, None
        if it has none: what memory's latest time is, for a search query
        naming a month without its year."""
        ...

    def passages_by_seq(
        self,
        agent_id: str,
        seqs: Iterable[int],
        tags: Sequence[str] | None = None,
        start: date | None = None,
        end: date | None = None,
        *,
        superseded: bool | None = None,
    ) -> dict[int, Passage]:
        """The agent's passages among `seqs` that pass the filters (as
        `list_passages` has them), by seq."""
        ...

    def supersede_passages(
        self, agent_id: str, old_ids: Sequence[str], new_id: str, at: datetime
    ) -> None:
        """Mark the agent's passages `old_ids` replaced by its passage `new_id`
        at `at` (kept, with `superseded_by` and `superseded_at` set; one
        replaced already takes the new replacement). All or none: NotFoundError
        for an id the agent has no passage with; ConfigError for `new_id`
        among `old_ids`, or a `new_id` that was itself replaced (so a chain
        of replacements never loops). Inside a transaction with the insert of
        the new passage, the two commit together."""
        ...

    def passages_replaced_by(self, agent_id: str, passage_id: str) -> list[Passage]:
        """The agent's passages that `passage_id` replaced, oldest first."""
        ...

    def delete_passage(self, agent_id: str, passage_id: str) -> None:
        """Delete one passage (and its vector). NotFoundError if the agent has
        none such. The passages it replaced pass to the one that replaced it,
        or, if none did, are current again (a replacement undone)."""
        ...

    def rank_passages(
        self,
        agent_id: str,
        query: str,
        limit: int,
        tags: Sequence[str] | None = None,
        start: date | None = None,
        end: date | None = None,
        *,
        exact: int | None = None,
        superseded: bool | None = None,
        budget: int = ...,
        drop_over_budget: bool = False,
    ) -> Ranking[Passage]:
        """The agent's best `limit` passages for plain-text `query` (its words,
        as `search_messages` takes them; a passage's context counts less than
        its text), passing the filters (as `list_passages` has them), with
        scores. `exact`: how many of the first results `Ranking.proven`
        vouches for (default: all). `budget`: at most how many matches are
        scored (see storage/core/words.py; each store has its own default).
        `drop_over_budget`: the words found in more than `budget` passages
        (all agents' in SQLite, the agent's in PostgreSQL) are left out of the
        query, as if not in it; with none left, nothing matches."""
        ...

    def rank_passages_in_period(
        self,
        agent_id: str,
        query: str,
        limit: int,
        tags: Sequence[str] | None = None,
        start: date | None = None,
        end: date | None = None,
        *,
        period: tuple[date | None, date | None],
        period_limit: int,
        superseded: bool | None = None,
    ) -> tuple[Ranking[Passage], list[tuple[Passage, float]] | None]:
        """`rank_passages` (the store's default budget), and the best
        `period_limit` passages with their scores as `rank_passages` would
        rank them with `period` (first and last day, None: open) as the
        `start` and `end` filters, within the given ones; or None if the
        store cannot tell them from the ranking it made (the caller then
        ranks within the period if it needs them). Archival search may need
        both for a query naming a period, and a store may find both at once."""
        ...

    def add_vectors(
        self, agent_id: str, owner: Owner, seqs: Sequence[int], vectors: np.ndarray
    ) -> None:
        """Store one vector per item seq (replacing one stored before)."""
        ...

    def vector_counters(self, agent_id: str) -> VectorCounters:
        """The agent's vector counters ((0, 0) for an unknown agent)."""
        ...

    def load_vectors(
        self, agent_id: str, owner: Owner, after: int, dimension: int
    ) -> StoredVectors:
        """The agent's vectors of one kind stored after `after` (a cursor from
        an earlier call; 0 for all), oldest first, as float32 of `dimension`."""
        ...

    def delete_vectors(self, agent_id: str) -> None:
        """Delete every vector of the agent (both kinds)."""
        ...

    def unembedded_passages(self, agent_id: str, limit: int) -> list[Passage]:
        """Up to `limit` of the agent's passages with no vector, oldest first."""
        ...

    def unembedded_messages(self, agent_id: str, limit: int) -> list[tuple[int, str]]:
        """(seq, search text) of up to `limit` searchable messages with no
        vector, oldest first."""
        ...
