"""Step locks, as leases, for every backend (the waiting is in loop/steplock.py).

A step lock is a row in `step_locks` per agent while a step holds it (in
`conversation_step_locks` per conversation, for a step in one of an
agent's conversations other than its default one: two conversations of an
agent step at once, one conversation's steps one at a time), taken
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

from memgpt_lite.conversations import no_conversation
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


@dataclass(frozen=True)
class LockTable:
    """Where the step locks of one kind are: a table, its key column, and
    the table of what is locked."""

    table: str
    key: str
    parent: str

    @property
    def take(self) -> str:
        """Takes the lock unless another holder's lease is running (the third
        condition: unless it is the one holder `take_step_lock` found dead);
        writes nothing for an unknown agent (or conversation). Returns a row
        when taken."""
        t = self.table
        return (
            f"INSERT INTO {t} ({self.key}, holder, pid, hostname, host_id, process_start, "
            f"acquired_at, renewed_at, expires_at) SELECT id, ?, ?, ?, ?, ?, ?, ?, ? "
            f"FROM {self.parent} WHERE id = ? "
            f"ON CONFLICT ({self.key}) DO UPDATE SET holder = excluded.holder, "
            "pid = excluded.pid, hostname = excluded.hostname, host_id = excluded.host_id, "
            "process_start = excluded.process_start, acquired_at = excluded.acquired_at, "
            "renewed_at = excluded.renewed_at, expires_at = excluded.expires_at "
            f"WHERE {t}.holder = excluded.holder OR {t}.expires_at <= excluded.acquired_at "
            f"OR {t}.holder = ? RETURNING {self.key}"
        )

    @property
    def release(self) -> str:
        return f"DELETE FROM {self.table} WHERE {self.key} = ? AND holder = ?"

    @property
    def holder(self) -> str:
        return f"SELECT {HOLDER_COLUMNS} FROM {self.table} WHERE {self.key} = ?"

    @property
    def renew(self) -> str:
        return (
            f"UPDATE {self.table} SET renewed_at = ?, expires_at = ? "
            f"WHERE {self.key} = ? AND holder = ?"
        )


AGENT_LOCKS = LockTable("step_locks", "agent_id", "agents")
CONVERSATION_LOCKS = LockTable("conversation_step_locks", "conversation_id", "conversations")


def lock_of(agent_id: str, conversation: str | None) -> tuple[str, LockTable]:
    """The key and table of the step lock of an agent's conversation (None:
    its default one, the agent's own lock)."""
    if conversation is None:
        return agent_id, AGENT_LOCKS
    return conversation, CONVERSATION_LOCKS


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
    locks: LockTable = AGENT_LOCKS  # where it is


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
        """The step locks this store holds, by key (`lock_of`: an agent id,
        or a conversation id)."""
        return self.__dict__.setdefault("_held_leases", {})

    @guarded
    def step_lock_holder(
        self, agent_id: str, conversation: str | None = None
    ) -> StepLockHolder | None:
        key, locks = lock_of(agent_id, conversation)
        row = self._one(locks.holder, [key])
        return None if row is None else holder_from_row(row)

    @guarded
    def take_step_lock(
        self,
        agent_id: str,
        claim: StepLockHolder,
        lease_seconds: float,
        is_dead: Callable[[StepLockHolder], bool],
        conversation: str | None = None,
    ) -> StepLockHolder | None:
        """Take the step lock of the agent's conversation for `claim` unless
        someone else holds it: a holder whose lease ran out, or that
        `is_dead`, no longer does. Returns None when taken, else the holder."""
        return self._take(agent_id, claim, lease_seconds, is_dead, conversation=conversation)[0]

    def _take(
        self,
        agent_id: str,
        claim: StepLockHolder,
        lease_seconds: float,
        is_dead: Callable[[StepLockHolder], bool],
        *reads: tuple[str, Sequence[Any]],
        conversation: str | None = None,
    ) -> tuple[StepLockHolder | None, list[Cursor] | None]:
        """`take_step_lock`, and the `reads` (statements and parameters)
        made after the take, in its transaction: one round trip, where the
        backend sends them with its COMMIT. Their outcomes when the lock was
        free; None when it was taken from a holder that `is_dead` (after
        them: read again) or not taken (the holder comes first then)."""
        key, locks = lock_of(agent_id, conversation)
        values = self._take_values(key, claim, time.time(), lease_seconds)
        with self.transaction():
            taken = self._execute_later(locks.take, values)
            read = [self._execute_later(statement, params) for statement, params in reads]
        if not taken.fetchall():
            holder = self._take_from_dead(agent_id, claim, lease_seconds, is_dead, conversation)
            if holder is not None:
                return holder, None
            read = None
        held = HeldLease(claim.token, lease_seconds, time.monotonic(), locks)
        self.held_leases[key] = held
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
        conversation: str | None = None,
    ) -> StepLockHolder | None:
        """The lock was not free: the holder, or None once taken from a
        holder that `is_dead` (or that let go meanwhile)."""
        key, locks = lock_of(agent_id, conversation)
        with self.transaction():
            for _ in range(_TAKE_ROUNDS):
                now = time.time()
                current = self.step_lock_holder(agent_id, conversation)
                if current is None and not self._one(
                    f"SELECT 1 FROM {locks.parent} WHERE id = ?", [key]
                ):
                    if conversation is not None:
                        raise no_conversation(conversation)
                    raise unknown_agent(agent_id)
                if current is not None and held_by_another(current, claim, now, is_dead):
                    return current
                dead = None if current is None else current.token
                values = self._take_values(key, claim, now, lease_seconds, dead)
                if self._all(locks.take, values):
                    return None
        raise BusyError(f"the step lock of agent {agent_id!r} {_CHANGING}")

    def renew_held_leases(self) -> None:
        """Before each commit: push back the expiry of every lock this store
        holds. Raises ConflictError (and the transaction rolls back) if one
        was taken over or its agent deleted."""
        now = time.time()
        for key, lease in self.held_leases.items():
            cursor = self._execute(
                lease.locks.renew, [now, now + lease.lease_seconds, key, lease.token]
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
    def release_step_lock(self, agent_id: str, token: str, conversation: str | None = None) -> None:
        """Give up the lock if `token` holds it (a no-op otherwise)."""
        key, locks = lock_of(agent_id, conversation)
        self.held_leases.pop(key, None)
        with self.transaction():
            self._execute_later(locks.release, [key, token])

    def _give_up_step_lock(self, key: str, token: str) -> None:
        """The lock given up by the write committing now (`_write`): its
        commit releases it, and fails (ConflictError) if the lock was taken
        over, as the lease's renewal would have. `key`: the lock's
        (`lock_of`), which this store holds (else it is an agent's)."""
        lease = self.held_leases.pop(key, None)
        locks = AGENT_LOCKS if lease is None else lease.locks
        if self._execute(locks.release, [key, token]).rowcount == 0:
            raise ConflictError(TAKEN_OVER)
