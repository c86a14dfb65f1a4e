"""The small types the storage protocols pass, besides our models."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Literal, NamedTuple, TypeVar

if TYPE_CHECKING:
    import numpy as np

    from memgpt_lite.models import AgentState, AgentStats, Block, Message

Owner = Literal["passage", "message"]  # what kind of item a stored vector belongs to
T = TypeVar("T")


class Ranking(NamedTuple, Generic[T]):
    """Items with their text-search scores (higher is better), best first,
    and how many items matched."""

    scored: list[tuple[T, float]]
    total: int
    # Whether the results that had to be exact are the exact ranking of every
    # match; a backend that ranks only part of a huge match set says False.
    proven: bool


class MainContext(NamedTuple):
    """What of an agent's memory the next request holds, read together: the
    window's messages, its core memory blocks, and its stats."""

    messages: list[Message]
    blocks: list[Block]
    stats: AgentStats


class StepStart(NamedTuple):
    """What a step starts from, read once its lock was taken: the agent as
    stored then, its newest message, and whether it is the main agent of a
    group (a sleep-time agent's), so that only then does the step's end
    look the group up (one round trip less for every other step)."""

    state: AgentState
    newest: Message | None
    manages_group: bool = False


class VectorCounters(NamedTuple):
    """How many of an agent's vectors were ever stored and removed. Equal
    counters mean nothing changed: an in-memory index checks them in O(1)."""

    inserts: int
    deletes: int


@dataclass
class StoredVectors:
    """Vectors of one agent and kind, oldest first."""

    seqs: np.ndarray  # int64: the item (message or passage) each row belongs to
    matrix: np.ndarray  # float32, one row per vector
    cursor: int  # pass back as `after` to read only the vectors stored since


@dataclass
class VectorMatches:
    """What `VectorSearch.nearest_vectors` found: cosine similarities (the
    dot product of unit vectors: 1 is the same direction), not normalised."""

    ranked: list[int]  # the nearest items' seqs, best first
    similarity: dict[int, float]  # of each ranked item, and of each `also` item with a vector


@dataclass
class StepLockHolder:
    """Who holds (or claims) an agent's step lock. Times are Unix seconds."""

    token: str  # one per acquisition
    pid: int
    hostname: str
    host_id: str  # where `pid` means something: host, boot and pid namespace
    process_start: str = ""  # tells a reused pid from the holder; "" if unknown
    acquired_at: float = 0.0
    expires_at: float = 0.0
