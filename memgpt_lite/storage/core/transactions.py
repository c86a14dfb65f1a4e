"""The transaction rules, and one thread at a time on a store, for every backend.

A store may be used from several threads (the loop runs sync tools in worker
threads and steps on an event-loop thread while the user's thread reads),
and a database connection has one transaction: a write from another thread
in the middle of it would join it and commit or roll back with it. So a
re-entrant lock is held for each call (`guarded`) and for the whole of a
transaction or snapshot: another thread's call waits until it ends. Holding
it costs one lock acquire per call.

A write inside another one is a savepoint, undone alone if it fails. Each
open level (transaction, savepoint or snapshot) is counted, so a database
transaction that no level accounts for is one an interrupt left behind,
never one to join: the next level rolls it back, as `rollback_interrupted`
does, and moves the store's epoch so that the abandoned levels, if their
`with` blocks ever end, find nothing to do. Every write's commit first renews
the leases of the step locks the store holds (locks.py), and fails, rolling
back, if one was taken over. Coroutines of one event loop share its thread,
so the task that opened a transaction is remembered and another task's call
while it is open is refused (tasks.py: a bug in the caller, not bad input).

A backend provides the primitives (the methods below that raise
NotImplementedError): its driver's errors and their one-line wording,
BEGIN for a write or a snapshot, statements that end transactions and
savepoints, whether its connection has a transaction open, how long a write
waits for a lock, and, for a backend that takes connections from a pool,
what to do when no call or level uses the store any more.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Concatenate, NamedTuple, ParamSpec, Self, TypeVar

from memgpt_lite.errors import AlreadyExistsError, ReadOnlyError, StoreError
from memgpt_lite.storage.core.errors import worded
from memgpt_lite.storage.core.sql import Runner
from memgpt_lite.storage.core.tasks import check_task, current_task

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S", bound="Transactions")


def guarded(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """Run `method` holding the store's lock, as a call of its own (a pooled
    backend takes a connection for it, given back when the last call or level
    using it ends), with the driver's errors about the database itself (full,
    read-only, busy, unreachable, ...) raised as one-line StoreErrors; any
    other driver error (an SQL bug) keeps its traceback."""

    @functools.wraps(method)
    def guarded_method(self: S, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.lock:
            if self.task_with_transaction is not None:
                check_task(self.task_with_transaction)
            self._calls += 1
            try:
                try:
                    return method(self, *args, **kwargs)
                finally:
                    self._calls -= 1
                    if not self._calls and not self._levels:
                        self._connection_idle()
            except self.driver_errors as exc:
                problem = self.store_problem(exc)
                if problem is None:
                    raise
                raise problem from None

    guarded_method.guarded = True  # type: ignore[attr-defined]  # checked by a test
    return guarded_method


class Level(NamedTuple):
    """One open `transaction()` or `snapshot()`."""

    epoch: int  # the store's epoch when it was opened (see `rollback_interrupted`)
    write: bool  # a transaction, not a snapshot
    outermost: bool  # began the database transaction
    savepoint: str | None  # a nested write's savepoint
    changes: int  # the backend's count of changes when it began (`_changes`)
    gives_up: tuple[str, str] | None = None  # a step lock (agent id, token) going with it


class Transactions(Runner):
    """The life cycle of a store: transactions, snapshots, busy timeouts and
    closing. A backend's store calls `_init_transactions` first thing, sets
    `read_only`, and provides the primitives."""

    read_only: bool
    busy_timeout_seconds: float
    # The driver's exception classes (`guarded` words those about the database).
    driver_errors: tuple[type[BaseException], ...]

    def _init_transactions(self, busy_timeout_seconds: float) -> None:
        self.busy_timeout_seconds = busy_timeout_seconds
        self.lock = threading.RLock()
        self._levels = 0  # the open levels, all of the thread holding the lock
        self._owner: int | None = None  # that thread, while any is open
        self._epoch = 0  # moved when abandoned levels are discarded
        # The asyncio task that opened the outermost level, if one did.
        self.task_with_transaction: object | None = None
        self._calls = 0  # the guarded calls running (nested ones too)
        self._wrote = False  # a write level was opened inside the outermost one

    # What a backend provides.

    def store_problem(self, exc: BaseException) -> StoreError | None:
        """The one-line StoreError for a driver error about the database
        itself (unusable, read-only, full, busy, ...); None for any other, an
        SQL bug above all, which must keep its traceback."""
        raise NotImplementedError

    def _begin(self, write: bool) -> None:
        """Begin the database transaction of an outermost level: a write
        (waiting for other writers up to the busy timeout) or a snapshot."""
        raise NotImplementedError

    def _execute_control(self, statement: str) -> None:
        """Run COMMIT, ROLLBACK, or a SAVEPOINT, RELEASE SAVEPOINT or
        ROLLBACK TO SAVEPOINT statement on the store's connection."""
        raise NotImplementedError

    def _database_in_transaction(self) -> bool:
        """Whether the store's connection has a transaction open (without
        taking a connection, for a backend that takes them when used)."""
        raise NotImplementedError

    def _read_only_error(self) -> ReadOnlyError:
        """The error for a write on a database this process may only read."""
        raise NotImplementedError

    def _set_busy_timeout(self, seconds: float) -> None:
        """From now on, a write waits at most `seconds` for another
        connection's lock."""
        raise NotImplementedError

    def _disconnect(self) -> None:
        """Release what the store holds (`close`)."""
        raise NotImplementedError

    def _changes(self) -> int:
        """How many rows the connection changed so far, for a backend that
        counts them (see `_wrote_inside`); 0 otherwise."""
        return 0

    def _wrote_inside(self, level: Level) -> bool:
        """Whether anything was written inside the snapshot `level`: a write
        level was opened inside it (a backend that counts changes may tell
        whether one changed anything)."""
        return self._wrote

    def _connection_idle(self) -> None:
        """No call or level uses the store now (a pooled backend gives its
        connection back)."""

    def _abandon(self) -> None:
        """Opening the outermost level failed (an interrupt just after BEGIN,
        say): never leave what it began for the next write to join."""
        if self._database_in_transaction():
            self._execute_control("ROLLBACK")

    def transaction_ended(self, committed: bool) -> None:
        """After each commit or rollback, and when a savepoint rolls back
        (a backend may keep what it saw inside a write until it commits)."""

    def renew_held_leases(self) -> None:
        """Before each commit (core/locks.py)."""

    def _give_up_step_lock(self, agent_id: str, token: str) -> None:
        """Before the commit of a write that gives a step lock up, before
        the renewal of the other leases (core/locks.py)."""
        raise NotImplementedError

    # The rules.

    def database_errors(self) -> AbstractContextManager[None]:
        """Raise the driver's errors about the database as one-line
        StoreErrors (as `guarded` does), any other as it is."""
        return worded(self.driver_errors, self.store_problem)

    @contextmanager
    def refusing_duplicates(self, message: str) -> Iterator[None]:
        """A write (a savepoint, inside another) whose statements raise
        AlreadyExistsError(message), not the driver's error, when one breaks
        a UNIQUE constraint: rolled back alone, so that an outer transaction
        that catches the error goes on."""
        try:
            with self.transaction():
                yield
        except self.dialect.unique_violation as exc:
            if not self.dialect.is_conflict(exc):
                raise
            raise AlreadyExistsError(message) from None

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic write (see `Storage.transaction`)."""
        with self._write():
            yield

    @contextmanager
    def _write(self, gives_up: tuple[str, str] | None = None) -> Iterator[None]:
        """`transaction()`; one that `gives_up` a step lock (its agent id and
        token) gives it up when it commits, after renewing its lease (so
        that a lock taken over still fails it): outside any transaction
        only, since a savepoint does not commit."""
        level = self._open(write=True, gives_up=gives_up)
        try:
            yield
        except BaseException:
            self._close(level, commit=False)
            raise
        self._close(level, commit=True)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction: the reads inside agree even while other
        processes write. Inside a transaction, nothing more."""
        level = self._open(write=False)
        try:
            yield
        except BaseException:
            self._close(level, commit=False)
            raise
        self._close(level, commit=True)

    def in_transaction(self) -> bool:
        """Whether this thread (and asyncio task) has a level open."""
        if not self._levels or self._owner != threading.get_ident():
            return False
        return self.task_with_transaction is current_task()

    @guarded
    def rollback_interrupted(self) -> None:
        """Roll back what an interrupt left open in this thread: levels whose
        `with` block never began (Ctrl-C between opening and the block), or
        a database transaction no level accounts for. A no-op otherwise; call
        it only outside the caller's own transactions."""
        if self._levels and self._owner == threading.get_ident():
            for _ in range(self._levels):  # the abandoned levels' holds on the lock
                self.lock.release()
            self._levels, self._owner, self.task_with_transaction = 0, None, None
            self._epoch += 1  # their `with` blocks, if they ever end, find nothing to do
        self._rollback_leftover()

    def _rollback_leftover(self) -> None:
        """Roll back a database transaction that no level accounts for."""
        if self._levels == 0 and self._database_in_transaction():
            self._execute_control("ROLLBACK")
            self.transaction_ended(False)

    def _open(self, write: bool, gives_up: tuple[str, str] | None = None) -> Level:
        """Take the lock and open a level: BEGIN, a savepoint for a write
        inside another level, or nothing."""
        self.lock.acquire()
        try:
            if self._levels and self.task_with_transaction is not None:
                check_task(self.task_with_transaction)
            if self._levels and gives_up is not None:
                raise RuntimeError("a step lock is given up by a write outside any transaction")
            with self.database_errors():
                return self._begin_level(write)._replace(gives_up=gives_up)
        except BaseException:
            # Also an interrupt just after BEGIN: never leave it for the next write.
            if self._levels == 0:
                self._abandon()
            self.lock.release()
            raise

    def _begin_level(self, write: bool) -> Level:
        self._rollback_leftover()
        outermost = self._levels == 0
        savepoint = None
        if outermost:
            if write and self.read_only:
                raise self._read_only_error()
            self._begin(write)
            self._wrote = write
        elif write:
            savepoint = f"nested_{self._levels}"
            self._execute_control(f"SAVEPOINT {savepoint}")
            self._wrote = True
        level = Level(self._epoch, write, outermost, savepoint, self._changes())
        owner = threading.get_ident()
        task = current_task() if self._levels == 0 else self.task_with_transaction
        # Counted last, with no call in between that an interrupt could break.
        self._owner, self.task_with_transaction = owner, task
        self._levels += 1
        return level

    def _close(self, level: Level, commit: bool) -> None:
        """Commit or roll back `level` and release its hold on the lock."""
        if level.epoch != self._epoch:
            return  # discarded by rollback_interrupted, which rolled it back
        committed = False
        try:
            with self.database_errors():
                if level.outermost:
                    committed = self._end_outermost(level, commit)
                elif level.savepoint is not None:
                    committed = self._end_savepoint(level.savepoint, commit)
        except BaseException:
            # Also when COMMIT itself fails (disk full): never leave a
            # half-open transaction for the next write to join.
            if level.outermost and self._database_in_transaction():
                with self.database_errors():
                    self._execute_control("ROLLBACK")
            raise
        finally:
            self._level_closed(level, committed)

    def _level_closed(self, level: Level, committed: bool) -> None:
        try:
            # A released savepoint is not committed yet: only the outer end
            # (or a savepoint's rollback) settles what was seen inside.
            if level.outermost or (level.savepoint is not None and not committed):
                self.transaction_ended(committed)
        finally:
            self._levels -= 1
            try:
                if self._levels == 0:
                    self._owner = self.task_with_transaction = None
                    if self._calls == 0:
                        self._connection_idle()
            finally:
                self.lock.release()

    def _end_outermost(self, level: Level, commit: bool) -> bool:
        if not commit:
            if self._database_in_transaction():
                self._execute_control("ROLLBACK")
            return False
        # A lock given up here is released by this commit, which fails if it
        # was taken over: that stands for its lease's renewal. Every write's
        # commit renews this store's other leases (and fails if one was taken
        # over); a snapshot's only if something inside wrote.
        if level.gives_up is not None:
            self._give_up_step_lock(*level.gives_up)
        if level.write or self._wrote_inside(level):
            self.renew_held_leases()
        self._execute_control("COMMIT")
        return True

    def _end_savepoint(self, name: str, commit: bool) -> bool:
        if commit:
            self._execute_control(f"RELEASE SAVEPOINT {name}")
            return True
        if self._database_in_transaction():
            self._execute_control(f"ROLLBACK TO SAVEPOINT {name}")
            self._execute_control(f"RELEASE SAVEPOINT {name}")
        return False

    @contextmanager
    def busy_timeout(self, seconds: float) -> Iterator[None]:
        """Wait at most `seconds` for another connection's lock, for a while.
        The lock is held throughout: the short timeout is this thread's, not
        that of another thread's call meanwhile."""
        with self.lock:
            self._set_busy_timeout(seconds)
            try:
                yield
            finally:
                self._set_busy_timeout(self.busy_timeout_seconds)

    @guarded
    def close(self) -> None:
        """Release the connection; the store is not used after."""
        self._disconnect()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
