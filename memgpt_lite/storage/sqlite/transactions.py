"""Transactions, and one thread at a time on the connection (a part of `Store`).

The store's one connection may be used from several threads (the loop runs
sync tools in worker threads and steps on an event-loop thread while the
user's thread reads). An SQLite connection has one transaction: a write from
another thread in the middle of it would join it and commit or roll back with
it. So a re-entrant lock is held for each call (`guarded`) and for the whole of
a transaction or snapshot: another thread's call waits until it ends. Holding
it costs one lock acquire per call.

Every write runs in a `BEGIN IMMEDIATE` transaction: a second process waits for
the lock (up to `busy_timeout_seconds`) instead of failing half-way, and a crash
or Ctrl-C mid-transaction rolls back to the last committed state. A write
inside another one is a savepoint. Each open level (transaction, savepoint or
snapshot) is counted, so a transaction that no level accounts for is one an
interrupt left behind, never one to join.

Coroutines of one event loop share its thread, so the lock alone would let a
task's write join the transaction another task holds open across an `await`.
The task that opened a transaction is remembered; another task's call while it
is open is refused (RuntimeError: a bug in the caller, not bad input).
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Concatenate, NamedTuple, ParamSpec, Protocol, TypeVar

from sqlite_utils import Database

from memgpt_lite.errors import ReadOnlyError
from memgpt_lite.settings.folders import FolderNames
from memgpt_lite.storage.sqlite.connect import file_errors, file_problem, read_only_reason
from memgpt_lite.storage.tasks import check_task, current_task


class _Guardable(Protocol):
    lock: threading.RLock
    path: Path
    folder_names: FolderNames
    task_with_transaction: object | None


P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S", bound=_Guardable)


def guarded(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """Run `method` holding the store's lock, with SQLite's errors about the
    file (full, read-only, busy, ...) raised as one-line StoreErrors; any other
    SQLite error (an SQL bug) keeps its traceback."""

    @functools.wraps(method)
    def guarded_method(self: S, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.lock:
            if self.task_with_transaction is not None:
                check_task(self.task_with_transaction)
            try:
                return method(self, *args, **kwargs)
            except sqlite3.Error as exc:
                problem = file_problem(self.path, exc, self.folder_names)
                if problem is None:
                    raise
                raise problem from exc

    guarded_method.guarded = True  # type: ignore[attr-defined]  # checked by a test
    return guarded_method


class _Level(NamedTuple):
    """One open `transaction()` or `snapshot()`."""

    epoch: int  # the store's epoch when it was opened (see `rollback_interrupted`)
    write: bool  # a transaction, not a snapshot
    outermost: bool  # began the SQLite transaction
    savepoint: str | None  # a nested write's savepoint
    changes: int  # the connection's total_changes when it began


class Transactions:
    """Mixed into `Store`, which provides `db`, `path`, `folder_names`,
    `read_only`, `busy_timeout_seconds` and the two hooks below."""

    db: Database
    path: Path
    folder_names: FolderNames  # how errors name a folder
    read_only: bool
    busy_timeout_seconds: float
    renew_held_leases: Callable[[], None]  # before each commit (locks.py)
    transaction_ended: Callable[[bool], None]  # after each commit or rollback (archival.py)

    def _init_transactions(self) -> None:
        self.lock = threading.RLock()
        self._levels = 0  # the open levels, all of the thread holding the lock
        self._owner: int | None = None  # that thread, while any is open
        self._epoch = 0  # moved when abandoned levels are discarded
        # The asyncio task that opened the outermost level, if one did.
        self.task_with_transaction: object | None = None

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic write (see `Storage.transaction`)."""
        level = self._open(write=True)
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
        an SQLite transaction no level accounts for. A no-op otherwise; call
        it only outside the caller's own transactions."""
        if self._levels and self._owner == threading.get_ident():
            for _ in range(self._levels):  # the abandoned levels' holds on the lock
                self.lock.release()
            self._levels, self._owner, self.task_with_transaction = 0, None, None
            self._epoch += 1  # their `with` blocks, if they ever end, find nothing to do
        self._rollback_leftover()

    def _rollback_leftover(self) -> None:
        """Roll back an SQLite transaction that no level accounts for."""
        if self._levels == 0 and self.db.conn.in_transaction:
            self.db.conn.execute("ROLLBACK")
            self.transaction_ended(False)

    def _open(self, write: bool) -> _Level:
        """Take the lock and open a level: BEGIN (IMMEDIATE for a write), a
        savepoint for a write inside another level, or nothing."""
        self.lock.acquire()
        conn = self.db.conn
        try:
            if self._levels and self.task_with_transaction is not None:
                check_task(self.task_with_transaction)
            with file_errors(self.path, self.folder_names):
                self._rollback_leftover()
                outermost = not conn.in_transaction
                savepoint = None
                if outermost:
                    if write and self.read_only:
                        raise ReadOnlyError(
                            f"{read_only_reason(self.path, self.folder_names)}; nothing was changed"
                        )
                    conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                elif write:
                    savepoint = f"nested_{self._levels}"
                    conn.execute(f"SAVEPOINT {savepoint}")
                level = _Level(self._epoch, write, outermost, savepoint, conn.total_changes)
                owner = threading.get_ident()
                task = current_task() if self._levels == 0 else self.task_with_transaction
                # Counted last, with no call in between that an interrupt could break.
                self._owner, self.task_with_transaction = owner, task
                self._levels += 1
        except BaseException:
            # Also an interrupt just after BEGIN: never leave it for the next write.
            if self._levels == 0 and conn.in_transaction:
                conn.execute("ROLLBACK")
            self.lock.release()
            raise
        return level

    def _close(self, level: _Level, commit: bool) -> None:
        """Commit or roll back `level` and release its hold on the lock."""
        if level.epoch != self._epoch:
            return  # discarded by rollback_interrupted, which rolled it back
        conn = self.db.conn
        committed = False
        try:
            with file_errors(self.path, self.folder_names):
                if level.outermost:
                    committed = self._end_outermost(level, commit)
                elif level.savepoint is not None:
                    committed = self._end_savepoint(level.savepoint, commit)
        except BaseException:
            # Also when COMMIT itself fails (disk full): never leave a
            # half-open transaction for the next write to join.
            if level.outermost and conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        finally:
            try:
                # A released savepoint is not committed yet: only the outer end
                # (or a savepoint's rollback) settles what was seen inside.
                if level.outermost or (level.savepoint is not None and not committed):
                    self.transaction_ended(committed)
            finally:
                self._levels -= 1
                if self._levels == 0:
                    self._owner = self.task_with_transaction = None
                self.lock.release()

    def _end_outermost(self, level: _Level, commit: bool) -> bool:
        conn = self.db.conn
        if not commit:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            return False
        # Every write's commit renews this store's step-lock leases (and fails
        # if one was taken over); a snapshot only if something inside wrote.
        if level.write or conn.total_changes != level.changes:
            self.renew_held_leases()
        conn.execute("COMMIT")
        return True

    def _end_savepoint(self, name: str, commit: bool) -> bool:
        conn = self.db.conn
        if commit:
            conn.execute(f"RELEASE {name}")
            return True
        if conn.in_transaction:
            conn.execute(f"ROLLBACK TO {name}")
            conn.execute(f"RELEASE {name}")
        return False

    @contextmanager
    def busy_timeout(self, seconds: float) -> Iterator[None]:
        """Wait at most `seconds` for another connection's write lock, for a
        while. The lock is held throughout: the short timeout is this
        thread's, not that of another thread's call meanwhile."""
        with self.lock:
            self.db.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")
            try:
                yield
            finally:
                self.db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_seconds * 1000)}")
