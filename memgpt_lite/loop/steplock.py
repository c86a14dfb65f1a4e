"""One step at a time per agent, across threads, processes and hosts.

Two steps of one agent must not interleave: each would send the other's
messages to the model and could answer them. So a step (and every history
edit or compaction) holds the agent's *step lock*, a row in the database
(store_locks.py), which is what makes it hold for every process that shares
the database, on any host; a PostgreSQL backend would use an advisory lock or
the same row. Steps of different agents do not wait for each other.

The lock is held through the model calls but no SQLite transaction is: it is
taken and released in short write transactions. A holder that dies must not
block the agent for long:

- on the same host (same boot and pid namespace), a waiter sees that the
  holder's process is gone (or is another process that got its pid) and takes
  the lock at once;
- otherwise the holder's lease runs out. The lease outlasts two model
  requests with all their retries, plus a margin, and every commit of the
  holding step renews it (the loop also renews it before each model call).

A waiting step says so once, through `logging` or the `on_wait` callback;
Ctrl-C while waiting just stops waiting, with nothing taken or stored.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType

from memgpt_lite.errors import BusyError, StoreError
from memgpt_lite.storage.protocol import StepLockHolder, StepStart, Storage

log = logging.getLogger(__name__)

# Added to two model requests' worst case: the lease of a step's lock.
LEASE_MARGIN_SECONDS = 60.0
# How often a waiter looks again: from the first value, growing to the second.
POLL_SECONDS = (0.01, 0.1)
# How long one attempt to take the lock waits for SQLite's write lock: short,
# so Ctrl-C is heard at once; the waiter tries again.
TAKE_BUSY_SECONDS = 0.2

OnWait = Callable[[str], None]

_LIVE_TOKENS: set[str] = set()  # the locks this process holds now
_LIVE_TOKENS_GUARD = threading.Lock()


def lease_seconds(request_seconds: float) -> float:
    """How long a step's lock lasts unrenewed: two model requests of at most
    `request_seconds` each (a compaction's summary, then the reply), plus a
    margin. Only a holder that died on another host makes anyone wait that
    long; on this host a dead holder is seen at once."""
    return 2 * request_seconds + LEASE_MARGIN_SECONDS


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def _host_id() -> str:
    """What a pid is relative to: the host, its boot, and the pid namespace
    (two containers may share a host name and a database, not their pids)."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    return "|".join([socket.gethostname(), _read("/proc/sys/kernel/random/boot_id"), namespace])


def _process_start(pid: int) -> str:
    """When process `pid` started, in clock ticks since boot ("" if unknown
    or gone), and "zombie" for a process that died and was not yet reaped."""
    stat = _read(f"/proc/{pid}/stat")
    if not stat:
        return ""
    fields = stat.rsplit(")", 1)[-1].split()  # the name, in parentheses, may hold spaces
    if fields[0] in ("Z", "X"):
        return "zombie"
    return fields[19]


_HOST_ID = _host_id()
_OWN_START: dict[int, str] = {}  # this process's start, by pid (a fork has its own)


def _me(token: str) -> StepLockHolder:
    pid = os.getpid()
    if pid not in _OWN_START:
        _OWN_START[pid] = _process_start(pid)
    return StepLockHolder(
        token=token,
        pid=pid,
        hostname=socket.gethostname(),
        host_id=_HOST_ID,
        process_start=_OWN_START[pid],
    )


def holder_is_dead(holder: StepLockHolder) -> bool:
    """Whether the process that holds a lock is known to be gone. Only a
    holder on this host can be checked; one elsewhere waits for its lease."""
    if holder.host_id != _HOST_ID:
        return False
    if holder.pid == os.getpid():
        with _LIVE_TOKENS_GUARD:  # a lock this process took and no longer holds
            return holder.token not in _LIVE_TOKENS
    if os.name == "nt":
        return False  # no cheap check there: the lease decides
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, another user's
    started = _process_start(holder.pid)
    if started == "zombie":
        return True
    return bool(holder.process_start and started and started != holder.process_start)


def describe_wait(agent_name: str, holder: StepLockHolder) -> str:
    if holder.host_id == _HOST_ID and holder.pid == os.getpid():
        where = "another thread of this process"
    elif holder.host_id == _HOST_ID:
        where = f"another process (pid {holder.pid})"
    else:
        where = f"another process (pid {holder.pid} on {holder.hostname})"
    return f"agent {agent_name} is busy with a step in {where}; waiting..."


class StepLock:
    """The step lock of one agent, as a context manager:

        with StepLock(store, agent_id, "sam", lease_seconds, on_wait=print):
            ...  # the step

    Waits while another thread, process or host holds it."""

    def __init__(
        self,
        store: Storage,
        agent_id: str,
        agent_name: str,
        lease_seconds: float,
        on_wait: OnWait | None = None,
        starts_step: bool = False,
        conversation: str | None = None,
    ) -> None:
        self.store = store
        self.agent_id = agent_id
        # The agent's conversation whose steps the lock serialises (None:
        # the default one); the steps of its other conversations run meanwhile.
        self.conversation = conversation
        self.agent_name = agent_name
        self.lease_seconds = lease_seconds
        self.on_wait = on_wait
        self.token = uuid.uuid4().hex
        # A step's lock reads what the step starts from as it is taken
        # (`Storage.start_step`: one round trip less where that counts).
        self.starts_step = starts_step
        self.start: StepStart | None = None
        # A transaction already open when the lock was taken is the caller's.
        self._outer_transaction = False
        self._given_up = False  # by the step's last write (`give_up_with`)

    def __enter__(self) -> StepLock:
        self._outer_transaction = self.store.in_transaction()
        self._claim()
        try:
            for delay in self._attempts():
                time.sleep(delay)
        except StoreError:
            self._unclaim()
            raise  # the database refused the take: nothing was taken
        except BaseException:
            self._unclaim()
            self._release()  # taken just before an interrupt: give it back
            raise
        return self

    async def __aenter__(self) -> StepLock:
        """As `with`, waiting without blocking the event loop."""
        self._outer_transaction = self.store.in_transaction()
        self._claim()
        try:
            for delay in self._attempts():
                await asyncio.sleep(delay)
        except StoreError:
            self._unclaim()
            raise
        except BaseException:  # cancelled, or Ctrl-C: give back what was taken
            self._unclaim()
            self._release()
            raise
        return self

    def _claim(self) -> None:
        """Count the token as live *before* it is taken: between the take's
        commit and this, another thread of this process would otherwise see a
        holder with a dead token and take the lock over (holder_is_dead)."""
        with _LIVE_TOKENS_GUARD:
            _LIVE_TOKENS.add(self.token)

    def _unclaim(self) -> None:
        with _LIVE_TOKENS_GUARD:
            _LIVE_TOKENS.discard(self.token)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, traceback)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        with _LIVE_TOKENS_GUARD:
            _LIVE_TOKENS.discard(self.token)
        if not self._outer_transaction:
            # Ctrl-C between a BEGIN and its guard leaves a transaction open;
            # releasing inside it would be rolled back with it.
            self.store.rollback_interrupted()
        if not self._given_up:
            self._release()

    def give_up_with(self, last_write: Callable[[tuple[str, str] | None], None]) -> None:
        """Run the step's last write, `last_write(release_lock)`, giving the
        lock up with it (`Storage.add_messages`): its commit releases the lock,
        and leaving the lock then has nothing left to do. Taken inside the
        caller's transaction, whose commit is the caller's, the lock is kept
        (`release_lock` None) and released on leaving, as always."""
        if self._outer_transaction:
            last_write(None)
            return
        last_write((self.conversation or self.agent_id, self.token))
        self._given_up = True

    def renew(self) -> None:
        """Push back the lease, if a quarter of it went by since the last
        renewal (each commit renews it too). Raises ConflictError if another
        process took the lock over meanwhile."""
        self.store.renew_step_locks(older_than=self.lease_seconds / 4)

    def _attempts(self) -> Iterator[float]:
        """Try to take the lock until it is taken; between tries, yield how
        long to wait (the caller sleeps, in a thread or an event loop)."""
        claim = _me(self.token)
        announced = False
        delay, longest = POLL_SECONDS
        busy_since: float | None = None
        first = True
        while True:
            # A waiter looks before it tries, so as not to take SQLite's write
            # lock only to find the holder still there; the first try just tries.
            holder = (
                None if first else self.store.step_lock_holder(self.agent_id, self.conversation)
            )
            first = False
            if holder is None or holder.expires_at <= time.time() or holder_is_dead(holder):
                try:
                    with self.store.busy_timeout(TAKE_BUSY_SECONDS):
                        holder = self._take(claim)
                    busy_since = None
                except BusyError:
                    # Another write holds the database, not necessarily this agent.
                    busy_since = busy_since or time.monotonic()
                    if self._busy_too_long(busy_since):
                        raise
                else:
                    if holder is None:
                        return
            if holder is not None and not announced:
                announced = True
                self._announce(holder)
            yield delay
            delay = min(longest, delay * 1.5)

    def _take(self, claim: StepLockHolder) -> StepLockHolder | None:
        """Take the lock (with what the step starts from, for a step's):
        None when taken, else the holder."""
        if not self.starts_step:
            return self.store.take_step_lock(
                self.agent_id, claim, self.lease_seconds, holder_is_dead, self.conversation
            )
        taken = self.store.start_step(
            self.agent_id, claim, self.lease_seconds, holder_is_dead, self.conversation
        )
        if isinstance(taken, StepLockHolder):
            return taken
        self.start = taken
        return None

    def _busy_too_long(self, since: float) -> bool:
        return time.monotonic() - since > self.store.busy_timeout_seconds

    def _announce(self, holder: StepLockHolder) -> None:
        message = describe_wait(self.agent_name, holder)
        if self.on_wait is None:
            log.warning("%s", message)
        else:
            log.info("%s", message)
            self.on_wait(message)

    def _release(self) -> None:
        try:
            self.store.release_step_lock(self.agent_id, self.token, self.conversation)
        except StoreError as exc:
            # The row stays; this process is no holder now (see holder_is_dead),
            # and others take it when this process ends or the lease runs out.
            log.warning("agent %s: could not release its step lock: %s", self.agent_name, exc)
