"""The storage seam: everything memgpt_lite needs from a database, as `Storage`.

The agent, its memory tiers, the agent files and the command line talk to
storage only through this protocol, so a backend is one package that
implements it (SQLite, in `storage/sqlite/`, is the default) and one branch in
`storage.open.open_storage`. No caller writes SQL or knows the tables.

`Storage` is made of one small protocol per concern (storage/protocols/):
`StoreLifecycle` (opening, closing, transactions), `AgentStorage`,
`BlockStorage` (blocks and their history), `ConversationStorage` (an
agent's conversations), `MessageStorage` (recall),
`ArchivalStorage` (passages and vectors), `UsageAndKeyStorage`,
`StepLockStorage`, `ToolStorage` (the tool registry and MCP servers),
`RunStorage` (the runs of Letta's asynchronous sends),
`SentRequestStorage` (the sends the server answered under a key),
`GroupStorage` (sleep-time agents and the main agent they serve),
`IdentityStorage` (Letta's identities, and their agents and blocks) and
`ProviderStorage` (users' providers, with the API keys they brought),
`ArchiveStorage` (Letta's archives, and the one attached to an agent). A
caller that needs one concern may ask for its protocol.

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

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from memgpt_lite.storage.protocols.accounts import UsageAndKeyStorage
from memgpt_lite.storage.protocols.agents import AgentStorage
from memgpt_lite.storage.protocols.archival import ArchivalStorage
from memgpt_lite.storage.protocols.archives import ArchiveStorage
from memgpt_lite.storage.protocols.blocks import BlockStorage
from memgpt_lite.storage.protocols.conversations import ConversationStorage
from memgpt_lite.storage.protocols.groups import GroupStorage
from memgpt_lite.storage.protocols.identities import IdentityStorage
from memgpt_lite.storage.protocols.lifecycle import StoreLifecycle
from memgpt_lite.storage.protocols.locks import StepLockStorage
from memgpt_lite.storage.protocols.messages import MessageStorage
from memgpt_lite.storage.protocols.providers import ProviderStorage
from memgpt_lite.storage.protocols.runs import RunStorage
from memgpt_lite.storage.protocols.sends import SentRequest, SentRequestStorage
from memgpt_lite.storage.protocols.tools import ToolStorage
from memgpt_lite.storage.protocols.types import (
    MainContext,
    Owner,
    Ranking,
    StepLockHolder,
    StepStart,
    StoredVectors,
    VectorCounters,
    VectorMatches,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np

__all__ = [
    "AgentStorage",
    "ArchivalStorage",
    "ArchiveStorage",
    "BlockStorage",
    "ConversationStorage",
    "GroupStorage",
    "IdentityStorage",
    "MainContext",
    "MessageStorage",
    "Owner",
    "ProviderStorage",
    "Ranking",
    "SentRequest",
    "SentRequestStorage",
    "StepLockHolder",
    "StepLockStorage",
    "StepStart",
    "Storage",
    "StoreLifecycle",
    "StoredVectors",
    "RunStorage",
    "ToolStorage",
    "UsageAndKeyStorage",
    "VectorCounters",
    "VectorMatches",
    "VectorSearch",
]


@runtime_checkable
class Storage(
    StoreLifecycle,
    AgentStorage,
    BlockStorage,
    ConversationStorage,
    MessageStorage,
    ArchivalStorage,
    UsageAndKeyStorage,
    StepLockStorage,
    ToolStorage,
    RunStorage,
    SentRequestStorage,
    GroupStorage,
    IdentityStorage,
    ProviderStorage,
    ArchiveStorage,
    Protocol,
):
    """Agents, blocks, messages, passages, vectors, token usage, step locks,
    the users' API keys and their tools, Letta's runs, groups of agents,
    identities, providers, archives: every part of the seam, in one protocol."""


def _declare_members(composed: type) -> None:
    """Name every method of the parts on the composed protocol itself, so
    that its own namespace (`vars(Storage)`) lists the whole seam, as it
    did when one class declared it: the contract's checks of each backend
    read that list. The methods are the parts' (one docstring each)."""
    for part in reversed(composed.__mro__[1:]):
        if getattr(part, "_is_protocol", False) and part is not Protocol:
            for name, value in vars(part).items():
                if callable(value) and not name.startswith("_"):
                    setattr(composed, name, value)


_declare_members(Storage)


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
