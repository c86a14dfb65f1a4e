"""Step locks, as leases, for every backend (the waiting is in loop/steplock.py).

A step lock is a row in `step_locks` per agent while a step holds it, taken
and released in short write transactions, never held open while a model is
called. Its lease runs out unless renewed: every commit of the store that
holds it renews it, and refuses to commit if it was taken over meanwhile
(core/transactions.py calls `renew_held_leases`), so a step that lost its
lock cannot interleave its writes with the new holder's. A lease rather
than a session lock held for the whole step, because a holder that stalls
past its lease (or loses its connection) must lose the lock to the next
step and then be unable to commit, and because a step must not pin a
pooled connection while the model thinks.

The lock is taken by one conditional upsert, which writes only over a
lease that ran out or the claim's own: two processes that both find the lock
free cannot both take it, on SQLite (one writer at a time) as on PostgreSQL
(the second upsert waits for the first's row, then finds it held). Only a
holder whose lease has not run out but that `is_dead` costs more: it is
read, judged, and replaced only if it still holds the lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from memgpt_lite.errors import BusyError, ConflictError
from memgpt_lite.storage.core.errors import unknown_agent
from memgpt_lite.storage.core.sql import Cursor
from memgpt_lite.storage.core.transactions import Transactions, guarded
from memgpt_lite.storage.protocol import StepLockHolder

# The lease row's columns, in the order `holder_from_row` reads them.
HOLDER_COLUMNS = "holder, pid, hostname, host_id, process_start, acquired_at, expires_at"
TAKEN_OVER = (
    "this step's lock on the agent was taken over by another process (its lease ran out) "
    "or the agent was deleted; the step stopped and its last change was not stored"
)
# Takes the lock unless another holder's lease is running (the third
# condition: unless it is the one holder `take_step_lock` found dead); writes
# nothing for an unknown agent. Returns a row when taken.
_TAKE = (
    "INSERT INTO step_locks (agent_id, holder, pid, hostname, host_id, process_start, "
    "acquired_at, renewed_at, expires_at) SELECT id, ?, ?, ?, ?, ?, ?, ?, ? FROM agents "
    "WHERE id = ? "
    "ON CONFLICT (agent_id) DO UPDATE SET holder = excluded.holder, pid = excluded.pid, "
    "hostname = excluded.hostname, host_id = excluded.host_id, "
    "process_start = excluded.process_start, acquired_at = excluded.acquired_at, "
    "renewed_at = excluded.renewed_at, expires_at = excluded.expires_at "
    "WHERE step_locks.holder = excluded.holder OR step_locks.expires_at <= excluded.acquired_at "
    "OR step_locks.holder = ? RETURNING agent_id"
)
_RELEASE = "DELETE FROM step_locks WHERE agent_id = ? AND holder = ?"
_CHANGING = "kept changing hands while this process tried to take it; try again"
# Rounds of `take_step_lock`: another round follows only when another
# connection changed the lock in between (never on SQLite, with its one writer).
_TAKE_ROUNDS = 5


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


class StepLocks(Transactions):
    """The step locks of `Storage` (see `StepLockStorage`)."""

    @property
    def held_leases(self) -> dict[str, HeldLease]:
        """The step locks this store holds, by agent id."""
        return self.__dict__.setdefault("_held_leases", {})

    @guarded
    def step_lock_holder(self, agent_id: str) -> StepLockHolder | None:
        row = self._one(f"SELECT {HOLDER_COLUMNS} FROM step_locks WHERE agent_id = ?", [agent_id])
        return None if row is None else holder_from_row(row)

    @guarded
    def take_step_lock(
        self,
        agent_id: str,
        claim: StepLockHolder,
        lease_seconds: float,
        is_dead: Callable[[StepLockHolder], bool],
    ) -> StepLockHolder | None:
        """Take the agent's step lock for `claim` unless someone else holds
        it: a holder whose lease ran out, or that `is_dead`, no longer does.
        Returns None when taken, else the holder."""
        return self._take(agent_id, claim, lease_seconds, is_dead)[0]

    def _take(
        self,
        agent_id: str,
        claim: StepLockHolder,
        lease_seconds: float,
        is_dead: Callable[[StepLockHolder], bool],
        *reads: tuple[str, Sequence[Any]],
    ) -> tuple[StepLockHolder | None, list[Cursor] | None]:
        """`take_step_lock`, and the `reads` (statements and parameters)
        made after the take, in its transaction: one round trip, where the
        backend sends them with its COMMIT. Their outcomes when the lock was
        free; None when it was taken from a holder that `is_dead` (after
        them: read again) or not taken (the holder comes first then)."""
        values = self._take_values(agent_id, claim, time.time(), lease_seconds)
        with self.transaction():
            taken = self._execute_later(_TAKE, values)
            read = [self._execute_later(statement, params) for statement, params in reads]
        if not taken.fetchall():
            holder = self._take_from_dead(agent_id, claim, lease_seconds, is_dead)
            if holder is not None:
                return holder, None
            read = None
        self.held_leases[agent_id] = HeldLease(claim.token, lease_seconds, time.monotonic())
        return None, read

    @staticmethod
    def _take_values(
        agent_id: str,
        claim: StepLockHolder,
        now: float,
        lease_seconds: float,
        dead: str | None = None,
    ) -> list[Any]:
        """`_TAKE`'s parameters."""
        values = [claim.token, claim.pid, claim.hostname, claim.host_id, claim.process_start]
        return [*values, now, now, now + lease_seconds, agent_id, dead]

    def _take_from_dead(
        self,
        agent_id: str,
        claim: StepLockHolder,
        lease_seconds: float,
        is_dead: Callable[[StepLockHolder], bool],
    ) -> StepLockHolder | None:
        """The lock was not free: the holder, or None once taken from a
        holder that `is_dead` (or that let go meanwhile)."""
        with self.transaction():
            for _ in range(_TAKE_ROUNDS):
                now = time.time()
                current = self.step_lock_holder(agent_id)
                if current is None and not self._one(
                    "SELECT 1 FROM agents WHERE id = ?", [agent_id]
                ):
                    raise unknown_agent(agent_id)
                if current is not None and held_by_another(current, claim, now, is_dead):
                    return current
                dead = None if current is None else current.token
                values = self._take_values(agent_id, claim, now, lease_seconds, dead)
                if self._all(_TAKE, values):
                    return None
        raise BusyError(f"the step lock of agent {agent_id!r} {_CHANGING}")

    def renew_held_leases(self) -> None:
        """Before each commit: push back the expiry of every lock this store
        holds. Raises ConflictError (and the transaction rolls back) if one
        was taken over or its agent deleted."""
        now = time.time()
        for agent_id, lease in self.held_leases.items():
            cursor = self._execute(
                "UPDATE step_locks SET renewed_at = ?, expires_at = ? "
                "WHERE agent_id = ? AND holder = ?",
                [now, now + lease.lease_seconds, agent_id, lease.token],
            )
            if cursor.rowcount == 0:
                raise ConflictError(TAKEN_OVER)
            lease.renewed_at = time.monotonic()

    @guarded
    def renew_step_locks(self, older_than: float = 0.0) -> None:
        """Renew the leases this store holds (a commit renews them all), if
        one was last renewed more than `older_than` seconds ago."""
        now = time.monotonic()
        if any(now - lease.renewed_at > older_than for lease in self.held_leases.values()):
            with self.transaction():
                pass

    @guarded
    def release_step_lock(self, agent_id: str, token: str) -> None:
        """Give up the lock if `token` holds it (a no-op otherwise)."""
        self.held_leases.pop(agent_id, None)
        with self.transaction():
            self._execute_later(_RELEASE, [agent_id, token])

    def _give_up_step_lock(self, agent_id: str, token: str) -> None:
        """The lock given up by the write committing now (`_write`): its
        commit releases it, and fails (ConflictError) if the lock was taken
        over, as the lease's renewal would have."""
        self.held_leases.pop(agent_id, None)
        if self._execute(_RELEASE, [agent_id, token]).rowcount == 0:
            raise ConflictError(TAKEN_OVER)
