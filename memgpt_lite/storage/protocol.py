"""The storage seam: everything memgpt_lite needs from a database, as `Storage`.

The agent, its memory tiers, the agent files and the command line talk to
storage only through this protocol, so a backend is one package that
implements it (SQLite, in `storage/sqlite/`, is the default) and one branch in
`storage.open.open_storage`. No caller writes SQL or knows the tables.

Shared rules, for every method:

- Results are our pydantic models (`memgpt_lite.models`) or the small types
  below; a model passed in is stored as it is, and fields the store assigns
  (`seq`, `updated_at`, `block_ids`) are set on it.
- Every write is atomic. Writes inside `transaction()` commit or roll back
  together; a nested `transaction()` is a savepoint, undone alone if it fails.
- Errors are `memgpt_lite.errors`: NotFoundError, AlreadyExistsError,
  ConflictError; StoreError (BusyError, ReadOnlyError) when the database
  itself cannot be used, in one line, with nothing changed. A backend's own
  exceptions escape only for its bugs.
- A store is safe to share between threads: each call, and each transaction
  as a whole, runs alone; another thread's writes never join an open
  transaction. Another process (or another store on the same database) sees
  a transaction's writes only once it commits. A transaction belongs to the
  thread and asyncio task that opened it: it must not await, nor wait for
  another thread that uses the store (that thread waits for it: a deadlock);
  a call from another task on its thread raises RuntimeError.
- `seq` numbers messages and passages. Each kind has its own sequence across
  the whole database, increasing with every item stored, so one agent's
  items are ordered by seq, though not contiguous.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Generic, Literal, NamedTuple, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

    from memgpt_lite.models import (
        AgentState,
        AgentStats,
        ApiKey,
        Block,
        BlockVersion,
        Message,
        ModelUsage,
        Passage,
        UsageRecord,
    )

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


@runtime_checkable
class Storage(Protocol):
    """Agents, blocks, messages, passages, vectors, token usage, step locks
    and the users' API keys."""

    # Whether this process may only read the database: every write raises ReadOnlyError.
    read_only: bool
    # How long a write waits for another connection's lock before BusyError.
    busy_timeout_seconds: float

    # Life cycle and transactions

    def close(self) -> None:
        """Release the connection; the store is not used after."""
        ...

    def __enter__(self) -> Storage: ...

    def __exit__(self, *exc: object) -> None: ...

    def transaction(self) -> AbstractContextManager[None]:
        """One atomic write: everything inside commits together when the block
        ends, or is rolled back if it raises. Nested, a savepoint: undone alone
        if it fails, committed with the outer one. The calling thread has the
        store to itself until it ends. Raises ReadOnlyError on a read-only
        store; ConflictError at commit (nothing committed) if a step lock this
        store holds was taken over meanwhile (every commit renews the leases of
        the step locks it holds)."""
        ...

    def snapshot(self) -> AbstractContextManager[None]:
        """Reads inside see one consistent state of the database, even while
        other processes write. Inside a transaction, that transaction's state."""
        ...

    def in_transaction(self) -> bool:
        """Whether the calling thread (and asyncio task) has a transaction or
        snapshot open here."""
        ...

    def rollback_interrupted(self) -> None:
        """Roll back a transaction that an interrupt (Ctrl-C) left open in the
        calling thread, so that later writes do not join it. A no-op
        otherwise. Call it only outside the caller's own transactions."""
        ...

    def busy_timeout(self, seconds: float) -> AbstractContextManager[None]:
        """Inside, a write waits at most `seconds` for another connection's
        lock before BusyError (then `busy_timeout_seconds` again)."""
        ...

    # Agents

    def create_agent(
        self, state: AgentState, blocks: Sequence[Block], author: str = "create"
    ) -> None:
        """Store a new agent with its blocks, in this order: a block not stored
        yet is created (its value the first version of its history, by
        `author`), a stored one (shared with another agent) is linked.
        Sets `state.block_ids`. AlreadyExistsError if the name is taken (by
        any user's agent: names are unique in the database). `state.owner` is
        stored here, once: later writes of the agent keep it."""
        ...

    def get_agent(self, name_or_id: str) -> AgentState:
        """The agent with this name or id. NotFoundError if there is none."""
        ...

    def list_agents(self, owner: str | None = None) -> list[tuple[AgentState, AgentStats]]:
        """Every agent with its stats, by name; with `owner`, only that user's."""
        ...

    def agent_stats(self, agent_id: str) -> AgentStats:
        """Message and passage counts, last activity, last memory change (O(1)).
        NotFoundError for an unknown agent."""
        ...

    def update_agent(self, agent_id: str, change: Callable[[AgentState], object]) -> AgentState:
        """Apply `change` to the agent as stored now (read inside the write, so
        nothing changes it in between) and store the result; returns it. The
        owner stays as created. NotFoundError for an unknown agent; nothing
        is stored if `change` raises."""
        ...

    def save_agent(self, state: AgentState) -> None:
        """Store `state` whole, if the stored agent is still as `state` was
        read (its `updated_at` is the version, moved forward by every write),
        except its `owner`, which stays as created. ConflictError, storing
        nothing, if anything changed it since; NotFoundError if it was
        deleted. `update_agent` changes one field."""
        ...

    def rename_agent(self, agent_id: str, new_name: str) -> AgentState:
        """Give the agent another name; returns the renamed state.
        AlreadyExistsError if another agent has it, NotFoundError if unknown."""
        ...

    def delete_agent(self, agent_id: str) -> None:
        """Delete the agent, its messages, passages, vectors and step lock, and
        its blocks that no other agent shares. An unknown id changes nothing."""
        ...

    # Blocks (shared: one block may belong to several agents)

    def get_blocks(self, agent_id: str) -> list[Block]:
        """The agent's blocks in their order ([] for an unknown agent)."""
        ...

    def get_block(self, block_id: str) -> Block:
        """One block. NotFoundError if there is none."""
        ...

    def save_block(self, block: Block, author: str = "user") -> None:
        """Store the block (created if new) and set its `updated_at`; every
        agent that shares it sees the edit and its memory change time moves.
        A new block, or a value other than the stored one, is appended to the
        block's history by `author`, in the same transaction."""
        ...

    def attach_block(self, agent_id: str, block: Block, author: str = "user") -> None:
        """Link the block (stored first if new, its value the first version
        of its history, by `author`) to the agent, after its other blocks.
        AlreadyExistsError if the agent has a block with that label,
        NotFoundError for an unknown agent."""
        ...

    def detach_block(self, agent_id: str, block_id: str) -> None:
        """Unlink the block from the agent, and delete it if no other agent
        holds it. A block the agent does not hold changes nothing."""
        ...

    def block_owners(self, block_id: str) -> list[str]:
        """The names of the agents a block belongs to, sorted."""
        ...

    def block_history(self, block_id: str, limit: int | None = None) -> list[BlockVersion]:
        """The values the block held, oldest first (with `limit`, the newest
        `limit` of them), each with its time, author and label then; sets
        `seq`. The last is the current value. [] for an unknown block: a
        block's history is deleted with it."""
        ...

    def set_block_history(self, block_id: str, versions: Sequence[BlockVersion]) -> None:
        """Replace the block's whole history with `versions`, in order, as
        they are (times, authors, labels; `seq` is set): what copying a block
        to another database carries over. NotFoundError for an unknown block."""
        ...

    # Messages (recall memory)

    def add_messages(self, messages: Sequence[Message]) -> None:
        """Append messages, in order, in one transaction; sets each `seq`.
        NotFoundError, storing none, if one belongs to an unknown agent."""
        ...

    def messages_from(self, agent_id: str, start_seq: int) -> list[Message]:
        """The agent's messages with `seq >= start_seq` (the window from its
        `context_start`), oldest first. A later read may hand out the same
        `Message` objects again, but only while each holds just what it held
        when first handed out: one a caller changed, or whose row changed,
        comes back as a new object (so what a caller built from an object,
        like `TokenCounter.sent`, holds while the same object comes back)."""
        ...

    def last_messages(self, agent_id: str, limit: int) -> list[Message]:
        """The agent's newest `limit` messages, oldest first."""
        ...

    def first_messages(self, agent_id: str, start_seq: int, limit: int) -> list[Message]:
        """The agent's oldest `limit` messages with `seq >= start_seq`, oldest
        first: a page of history read without holding the rest (unlike
        `messages_from`, which reads and may keep the whole window)."""
        ...

    def recent_messages(
        self, agent_id: str, limit: int, offset: int = 0, since: datetime | None = None
    ) -> tuple[list[Message], int]:
        """One page of all the agent's messages, counted from the newest:
        `limit` of them after skipping the `offset` newest, returned oldest
        first; with `since` (an aware datetime), only those created at or after
        it. Also returns how many there are in all (from `since`)."""
        ...

    def messages_by_seq(
        self, agent_id: str, seqs: Sequence[int], exclude_step_id: str | None = None
    ) -> dict[int, Message]:
        """The agent's messages among `seqs`, by seq; those of step
        `exclude_step_id` are left out. Unknown seqs are skipped."""
        ...

    def messages_between(
        self,
        agent_id: str,
        start: date,
        end: date,
        limit: int,
        offset: int = 0,
        exclude_step_id: str | None = None,
    ) -> tuple[list[Message], int]:
        """The agent's searchable messages (user and assistant, see
        `Message.search_text`) created from `start` to `end` inclusive (UTC
        days), oldest first: one page, and how many there are."""
        ...

    def update_message(self, message: Message) -> None:
        """Rewrite a stored message's content and tool calls; search follows
        the new text, and its vector, now stale, is dropped (embedded again by
        the next search). NotFoundError if it is not stored."""
        ...

    def delete_messages_from(self, agent_id: str, start_seq: int) -> int:
        """Delete the agent's messages with `seq >= start_seq`; returns how
        many. They leave search, the counts and the vectors with them."""
        ...

    def search_messages(
        self,
        agent_id: str,
        query: str,
        limit: int,
        offset: int = 0,
        exclude_step_id: str | None = None,
    ) -> tuple[list[Message], int]:
        """One page of the agent's searchable messages matching any word of
        plain-text `query` (stemmed, accents ignored; any text is safe), best
        first, and how many matched. Step `exclude_step_id` is left out."""
        ...

    def rank_messages(
        self, agent_id: str, query: str, limit: int, exclude_step_id: str | None = None
    ) -> Ranking[Message]:
        """The best `limit` matches of `search_messages`, with their scores."""
        ...

    # Passages (archival memory)

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

    # Vectors (one per passage or searchable message, once embedded)

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

    # Step locks: one step of an agent at a time, across threads, processes
    # and hosts (the waiting is in loop/steplock.py)

    def step_lock_holder(self, agent_id: str) -> StepLockHolder | None:
        """Who holds the agent's step lock (its lease may have run out), or None."""
        ...

    def take_step_lock(
        self,
        agent_id: str,
        claim: StepLockHolder,
        lease_seconds: float,
        is_dead: Callable[[StepLockHolder], bool],
    ) -> StepLockHolder | None:
        """Take the agent's lock for `claim` for `lease_seconds`, unless another
        holder has it: one whose lease ran out, or that `is_dead`, no longer
        does. Returns None when taken, else the holder. From then on, every
        commit of this store renews the lease. NotFoundError for an unknown agent."""
        ...

    def renew_step_locks(self, older_than: float = 0.0) -> None:
        """Renew the leases of the locks this store holds, if one was last
        renewed more than `older_than` seconds ago. ConflictError if one was
        taken over (its lease ran out) or its agent deleted."""
        ...

    def release_step_lock(self, agent_id: str, token: str) -> None:
        """Give up the agent's lock if `token` holds it (a no-op otherwise)."""
        ...

    # Token usage: what each model answer cost, kept with its step

    def add_usage(self, record: UsageRecord) -> None:
        """Store one model answer's token usage. Rows are never merged or
        edited: popping messages leaves them (the tokens were spent); deleting
        the agent deletes them. NotFoundError for an unknown agent."""
        ...

    def usage_by_model(self, agent_id: str) -> list[ModelUsage]:
        """The agent's token totals from every stored record, one per model,
        sorted by model name ([] for an agent with none, or unknown)."""
        ...

    def step_usage(self, agent_id: str, step_id: str) -> list[UsageRecord]:
        """The usage records of one step of the agent, in the order stored."""
        ...

    def agent_usage(self, agent_id: str) -> list[UsageRecord]:
        """Every usage record of the agent, in the order stored ([] for an
        agent with none, or unknown): what copying an agent to another
        database carries over."""
        ...

    # API keys of the HTTP server's users (their secrets are never stored:
    # see memgpt_lite/agent/keys.py)

    def add_api_key(self, key: ApiKey) -> None:
        """Store a new key. AlreadyExistsError if its id or hash is stored already."""
        ...

    def api_key_by_hash(self, key_hash: str) -> ApiKey | None:
        """The key with this hash, revoked or not (the caller checks
        `revoked_at`), or None."""
        ...

    def list_api_keys(self) -> list[ApiKey]:
        """Every key, revoked ones too, oldest first."""
        ...

    def revoke_api_key(self, key_id: str) -> ApiKey:
        """Mark the key revoked now and return it; a key revoked already keeps
        its first `revoked_at`. NotFoundError if there is no key with this id."""
        ...


@runtime_checkable
class VectorSearch(Protocol):
    """An optional capability of a `Storage`: the nearest vectors found by
    the database itself (PostgreSQL with pgvector), so search need not load
    an agent's vectors into the process. Search uses it when the store has it
    and `server_vectors` is True; otherwise it keeps its in-process index
    (memory/retrieval/vector_index.py), built from `load_vectors`."""

    # Whether `nearest_vectors` can be used on this database (fixed when it opens).
    server_vectors: bool

    def nearest_vectors(
        self, agent_id: str, owner: Owner, query: np.ndarray, k: int, also: Sequence[int] = ()
    ) -> VectorMatches:
        """The agent's (up to) `k` items of kind `owner` whose vectors are most
        similar to `query` (of the agent's dimension) by cosine, best first;
        nearly so for large indexes (approximate search may miss a few). Also
        returns the exact similarities of those items and of the `also` seqs
        (items found otherwise, such as by words) that have a vector; others,
        and seqs that are not the agent's, are left out. Read-only: allowed on
        a read-only store."""
        ...
