"""Step-lock leases as both backends keep them: a row per agent while a step
holds its lock (storage/sqlite/locks.py and storage/postgres/locks.py hold the
SQL; loop/steplock.py does the waiting)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from memgpt_lite.storage.protocol import StepLockHolder

# The lease row's columns, in the order `holder_from_row` reads them.
HOLDER_COLUMNS = "holder, pid, hostname, host_id, process_start, acquired_at, expires_at"
TAKEN_OVER = (
    "this step's lock on the agent was taken over by another process (its lease ran out) "
    "or the agent was deleted; the step stopped and its last change was not stored"
)


@dataclass
class HeldLease:
    """A lock this store holds."""

    token: str
    lease_seconds: float
    renewed_at: float  # time.monotonic()


def holder_from_row(row: Sequence[Any]) -> StepLockHolder:
    token, pid, hostname, host_id, process_start, acquired_at, expires_at = row
    return StepLockHolder(
        token=token,
        pid=pid,
        hostname=hostname,
        host_id=host_id,
        process_start=process_start,
        acquired_at=acquired_at,
        expires_at=expires_at,
    )


def held_by_another(
    current: StepLockHolder | None,
    claim: StepLockHolder,
    now: float,
    is_dead: Callable[[StepLockHolder], bool],
) -> bool:
    """Whether `current` keeps the lock from `claim`: another holder whose
    lease has not run out and that is not dead."""
    return (
        current is not None
        and current.token != claim.token
        and current.expires_at > now
        and not is_dead(current)
    )
