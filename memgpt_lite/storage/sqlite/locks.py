"""The store's SQL for step locks (a part of `Store`); the waiting is in loop/steplock.py.

A step lock is a row in `step_locks`, taken and released in short write
transactions, never held open while a model is called. Its lease runs out
unless renewed: every commit of a `Store` renews the leases that store holds,
and refuses to commit if one was taken over meanwhile, so a step that lost its
lock cannot interleave its writes with the new holder's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from threading import RLock

from sqlite_utils import Database

from memgpt_lite.errors import ConflictError, NotFoundError
from memgpt_lite.storage.leases import (
    HOLDER_COLUMNS,
    TAKEN_OVER,
    HeldLease,
    held_by_another,
    holder_from_row,
)
from memgpt_lite.storage.protocol import StepLockHolder
from memgpt_lite.storage.sqlite.transactions import guarded


class StepLockStore:
    """Step locks. Mixed into `Store`, which provides `db`, `lock` and `transaction`."""

    db: Database
    path: Path
    lock: RLock
    transaction: Callable[[], AbstractContextManager[None]]  # provided by Store

    @property
    def held_leases(self) -> dict[str, HeldLease]:
        """The step locks this store holds, by agent id."""
        return self.__dict__.setdefault("_held_leases", {})

    @guarded
    def step_lock_holder(self, agent_id: str) -> StepLockHolder | None:
        row = self.db.execute(
            f"SELECT {HOLDER_COLUMNS} FROM step_locks WHERE agent_id = ?", [agent_id]
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
        """Take the agent's step lock for `claim` unless someone else holds
        it: a holder whose lease ran out, or that `is_dead`, no longer does.
        Returns None when taken, else the holder."""
        with self.transaction():
            if not self.db.execute("SELECT 1 FROM agents WHERE id = ?", [agent_id]).fetchone():
                raise NotFoundError(f"no agent with id {agent_id!r}")
            now = time.time()
            current = self.step_lock_holder(agent_id)
            if held_by_another(current, claim, now, is_dead):
                return current
            self.db.execute(
                "INSERT OR REPLACE INTO step_locks (agent_id, holder, pid, hostname, host_id, "
                "process_start, acquired_at, renewed_at, expires_at) VALUES (?,?,?,?,?,?,?,?,?)",
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
        """Called by `Store.transaction` before each commit: push back the
        expiry of every lock this store holds. Raises ConflictError (and the
        transaction rolls back) if one was taken over or its agent deleted."""
        now = time.time()
        for agent_id, lease in self.held_leases.items():
            cursor = self.db.execute(
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
            self.db.execute(
                "DELETE FROM step_locks WHERE agent_id = ? AND holder = ?", [agent_id, token]
            )
