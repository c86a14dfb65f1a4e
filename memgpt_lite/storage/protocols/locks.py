"""Step locks: one step of an agent at a time, across threads, processes and
hosts (the waiting is in loop/steplock.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from memgpt_lite.storage.protocols.types import StepLockHolder, StepStart


@runtime_checkable
class StepLockStorage(Protocol):
    """An agent's step lock: a lease, renewed by every commit of the store
    that holds it."""

    def step_lock_holder(
        self, agent_id: str, conversation: str | None = None
    ) -> StepLockHolder | None:
        """Who holds the agent's step lock (its lease may have run out), or
        None. Each conversation of an agent has its own lock (None: the
        default conversation's, the agent's own), as for every method here."""
        ...

    def take_step_lock(
        self,
        agent_id: str,
        claim: StepLockHolder,
        lease_seconds: float,
        is_dead: Callable[[StepLockHolder], bool],
        conversation: str | None = None,
    ) -> StepLockHolder | None:
        """Take the agent's lock for `claim` for `lease_seconds`, unless another
        holder has it: one whose lease ran out, or that `is_dead`, no longer
        does. Returns None when taken, else the holder. From then on, every
        commit of this store renews the lease. NotFoundError for an unknown agent."""
        ...

    def start_step(
        self,
        agent_id: str,
        claim: StepLockHolder,
        lease_seconds: float,
        is_dead: Callable[[StepLockHolder], bool],
        conversation: str | None = None,
    ) -> StepLockHolder | StepStart:
        """Take the agent's lock as `take_step_lock` does and, once taken,
        read what a step starts from (as `agent_and_newest_message` does),
        in one round trip where the backend can. Returns the holder when
        another has the lock (nothing was read), else what was read."""
        ...

    def renew_step_locks(self, older_than: float = 0.0) -> None:
        """Renew the leases of the locks this store holds, if one was last
        renewed more than `older_than` seconds ago. ConflictError if one was
        taken over (its lease ran out) or its agent deleted."""
        ...

    def release_step_lock(self, agent_id: str, token: str, conversation: str | None = None) -> None:
        """Give up the agent's lock if `token` holds it (a no-op otherwise)."""
        ...
