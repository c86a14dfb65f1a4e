"""Opening, closing and transactions: the part of `Storage` every other part
runs inside (the rules it keeps are protocol.py's)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol, Self, runtime_checkable


@runtime_checkable
class StoreLifecycle(Protocol):
    """A store's life: its transactions, snapshots and waits for locks."""

    # Whether this process may only read the database: every write raises ReadOnlyError.
    read_only: bool
    # How long a write waits for another connection's lock before BusyError.
    busy_timeout_seconds: float

    def close(self) -> None:
        """Release the connection; the store is not used after."""
        ...

    def __enter__(self) -> Self: ...

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
