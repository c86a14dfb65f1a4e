"""The store's SQL for step locks (a part of `PostgresStore`); the waiting is in loop/steplock.py.

The lock is SQLite's lease (storage/sqlite/locks.py): a row per agent while a
step holds it, taken and released in short transactions, renewed by every
commit of the store that holds it, and refused at commit once taken over.
A lease, not a session lock held for the whole step, because a holder that
stalls past its lease (or loses its connection) must lose the lock to the next
step and then be unable to commit, and because a step must not pin one of
the pool's connections while the model thinks.

Taking it is serialized by a transaction-scoped advisory lock on the agent:
two processes that both find the lock free cannot both take it (READ
COMMITTED would let each insert over the other's row).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager

import psycopg

from memgpt_lite.errors import ConflictError, NotFoundError
from memgpt_lite.storage.leases import (
    HOLDER_COLUMNS,
    TAKEN_OVER,
    HeldLease,
    held_by_another,
    holder_from_row,
)
from memgpt_lite.storage.postgres.transactions import guarded
from memgpt_lite.storage.protocol import StepLockHolder


class StepLockStore:
    """Step locks. Mixed into `PostgresStore`."""

    conn: psycopg.Connection
    transaction: Callable[[], AbstractContextManager[None]]

    @property
    def held_leases(self) -> dict[str, HeldLease]:
        return self.__dict__.setdefault("_held_leases", {})

    @guarded
    def step_lock_holder(self, agent_id: str) -> StepLockHolder | None:
        row = self.conn.execute(
            f"SELECT {HOLDER_COLUMNS} FROM step_locks WHERE agent_id = %s", [agent_id]
        ).fetchone()
        if row is None:
            return None
        return holder_from_row(row)

    @guarded
    def take_step_lock(
        self,
        agent_id: str,
        claim: StepLockHolder,
        lease_seconds: float,
        is_dead: Callable[[StepLockHolder], bool],
    ) -> StepLockHolder | None:
        with self.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [agent_id])
            if not self.conn.execute("SELECT 1 FROM agents WHERE id = %s", [agent_id]).fetchone():
                raise NotFoundError(f"no agent with id {agent_id!r}")
            now = time.time()
            current = self.step_lock_holder(agent_id)
            if held_by_another(current, claim, now, is_dead):
                return current
            self.conn.execute(
                "INSERT INTO step_locks (agent_id, holder, pid, hostname, host_id, "
                "process_start, acquired_at, renewed_at, expires_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (agent_id) DO UPDATE "
                "SET holder = EXCLUDED.holder, pid = EXCLUDED.pid, hostname = EXCLUDED.hostname, "
                "host_id = EXCLUDED.host_id, process_start = EXCLUDED.process_start, "
                "acquired_at = EXCLUDED.acquired_at, renewed_at = EXCLUDED.renewed_at, "
                "expires_at = EXCLUDED.expires_at",
                [
                    agent_id,
                    claim.token,
                    claim.pid,
                    claim.hostname,
                    claim.host_id,
                    claim.process_start,
                    now,
                    now,
                    now + lease_seconds,
                ],
            )
        self.held_leases[agent_id] = HeldLease(claim.token, lease_seconds, time.monotonic())
        return None

    def renew_held_leases(self) -> None:
        """Before each commit: push back the expiry of every lock this store
        holds; ConflictError (and the transaction rolls back) if one was
        taken over or its agent deleted."""
        now = time.time()
        for agent_id, lease in self.held_leases.items():
            cursor = self.conn.execute(
                "UPDATE step_locks SET renewed_at = %s, expires_at = %s "
                "WHERE agent_id = %s AND holder = %s",
                [now, now + lease.lease_seconds, agent_id, lease.token],
            )
            if cursor.rowcount == 0:
                raise ConflictError(TAKEN_OVER)
            lease.renewed_at = time.monotonic()

    @guarded
    def renew_step_locks(self, older_than: float = 0.0) -> None:
        now = time.monotonic()
        if any(now - lease.renewed_at > older_than for lease in self.held_leases.values()):
            with self.transaction():
                pass

    @guarded
    def release_step_lock(self, agent_id: str, token: str) -> None:
        self.held_leases.pop(agent_id, None)
        with self.transaction():
            self.conn.execute(
                "DELETE FROM step_locks WHERE agent_id = %s AND holder = %s", [agent_id, token]
            )
