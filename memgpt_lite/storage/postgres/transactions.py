"""Transactions, and one thread at a time on the store (a part of `PostgresStore`).

The rules are SQLite's (storage/sqlite/transactions.py): a re-entrant lock is
held for each call (`guarded`) and for the whole of a transaction or snapshot,
so another thread's call waits until it ends and never joins it; a write
inside another is a savepoint; each open level is counted, so a transaction
no level accounts for is one an interrupt left behind; another asyncio task's
call while a task holds a transaction open is refused.

A store holds no connection of its own: it takes one from its process's pool
(connect.py) for a call, or for a transaction from its start to its end, and
gives it back after. So stores are cheap, and a process with many agents
uses at most the pool's connections.

PostgreSQL lets writers run at once (SQLite has one writer at a time), so a
write that reads before it writes locks what it read (`FOR UPDATE`, or the
agent's row first: see agents.py). A snapshot is a REPEATABLE READ
transaction: its reads agree with each other whatever commits meanwhile.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Concatenate, NamedTuple, ParamSpec, Protocol, TypeVar

import psycopg
import psycopg_pool
from psycopg.pq import TransactionStatus

from memgpt_lite.errors import ReadOnlyError
from memgpt_lite.storage.location import describe
from memgpt_lite.storage.postgres.connect import (
    give_back,
    pool,
    server_errors,
    server_problem,
)
from memgpt_lite.storage.tasks import check_task, current_task

_IN_TRANSACTION = (TransactionStatus.INTRANS, TransactionStatus.INERROR)


class _Guardable(Protocol):
    lock: threading.RLock
    url: str
    task_with_transaction: object | None

    def connection(self) -> AbstractContextManager[None]: ...


P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S", bound=_Guardable)


def guarded(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """Run `method` holding the store's lock and a connection, with errors
    about the server raised as one-line StoreErrors (SQL bugs keep theirs)."""

    @functools.wraps(method)
    def guarded_method(self: S, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.lock:
            if self.task_with_transaction is not None:
                check_task(self.task_with_transaction)
            try:
                with self.connection():
                    return method(self, *args, **kwargs)
            except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
                problem = server_problem(self.url, exc)
                if problem is None:
                    raise
                raise problem from None

    guarded_method.guarded = True  # type: ignore[attr-defined]  # checked by a test
    return guarded_method


class _Level(NamedTuple):
    """One open `transaction()` or `snapshot()`."""

    epoch: int
    write: bool
    outermost: bool
    savepoint: str | None


class Transactions:
    """Mixed into `PostgresStore`, which provides `url`, `read_only`,
    `busy_timeout_seconds` and the two hooks below."""

    url: str
    read_only: bool
    busy_timeout_seconds: float
    renew_held_leases: Callable[[], None]  # before each commit (locks.py)
    transaction_ended: Callable[[bool], None]  # after each commit or rollback

    def _init_transactions(self) -> None:
        self.lock = threading.RLock()
        self._levels = 0
        self._owner: int | None = None
        self._epoch = 0
        self.task_with_transaction: object | None = None
        self._conn: psycopg.Connection | None = None  # taken from the pool while in use
        self._uses = 0  # the calls and levels using it
        self._wrote = False  # a write level was opened inside the outermost one
        self._lock_timeout = busy_timeout_ms(self.busy_timeout_seconds)

    @property
    def conn(self) -> psycopg.Connection:
        """The connection of the call or transaction running now, taken from
        the pool when the call first uses it (a call that needs none, such as
        `close`, takes none)."""
        assert self._uses or self._levels, "store SQL outside a guarded call"
        if self._conn is None:
            with server_errors(self.url):
                self._take()
        assert self._conn is not None
        return self._conn

    def _take(self) -> psycopg.Connection:
        """The store's connection, taken from the pool if it has none (the
        caller holds the lock)."""
        if self._conn is None:
            self._conn = pool(self.url).getconn(timeout=self.busy_timeout_seconds)
        return self._conn

    @contextmanager
    def connection(self) -> Iterator[None]:
        """A call using the store: the connection it takes (see `conn`) is
        given back when the last call or level using it ends (the caller
        holds the lock)."""
        self._uses += 1
        try:
            yield
        finally:
            self._uses -= 1
            if self._uses == 0 and self._levels == 0:
                self._give_back()

    def _give_back(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if not conn.closed and conn.info.transaction_status in _IN_TRANSACTION:
            conn.rollback()  # never hand a half-done transaction to another store
        give_back(self.url, conn)

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
        """One REPEATABLE READ transaction; inside a transaction, nothing more."""
        level = self._open(write=False)
        try:
            yield
        except BaseException:
            self._close(level, commit=False)
            raise
        self._close(level, commit=True)

    def in_transaction(self) -> bool:
        if not self._levels or self._owner != threading.get_ident():
            return False
        return self.task_with_transaction is current_task()

    def rollback_interrupted(self) -> None:
        """Roll back what an interrupt left open in this thread (see SQLite's)."""
        with self.lock:
            if self._levels and self._owner == threading.get_ident():
                for _ in range(self._levels):
                    self.lock.release()
                self._levels, self._owner, self.task_with_transaction = 0, None, None
                self._epoch += 1
                self._uses = 0
            if self._levels == 0 and self._uses == 0 and self._conn is not None:
                with server_errors(self.url):
                    self._give_back()
                self.transaction_ended(False)

    def _open(self, write: bool) -> _Level:
        self.lock.acquire()
        try:
            if self._levels and self.task_with_transaction is not None:
                check_task(self.task_with_transaction)
            with server_errors(self.url):
                level = self._begin(write)
        except BaseException:
            if self._levels == 0:
                self._discard_connection()
            self.lock.release()
            raise
        return level

    def _begin(self, write: bool) -> _Level:
        conn = self._take()
        outermost = self._levels == 0
        savepoint = None
        if outermost:
            if conn.info.transaction_status in _IN_TRANSACTION:
                conn.rollback()  # left by an interrupt: never joined
            if write and self.read_only:
                raise ReadOnlyError(f"{describe(self.url)} is read-only; nothing was changed")
            conn.execute(
                f"BEGIN; SET LOCAL lock_timeout = {self._lock_timeout}"
                if write
                else "BEGIN ISOLATION LEVEL REPEATABLE READ"
            )
            self._wrote = write
        elif write:
            savepoint = f"nested_{self._levels}"
            conn.execute(f"SAVEPOINT {savepoint}")
            self._wrote = True
        level = _Level(self._epoch, write, outermost, savepoint)
        owner = threading.get_ident()
        task = current_task() if self._levels == 0 else self.task_with_transaction
        self._owner, self.task_with_transaction = owner, task
        self._levels += 1
        return level

    def _discard_connection(self) -> None:
        """After a failure opening the outermost level: roll back, give back."""
        if self._uses == 0:
            try:
                self._give_back()
            except psycopg.Error:
                self._conn = None  # broken: the pool replaces it

    def _close(self, level: _Level, commit: bool) -> None:
        if level.epoch != self._epoch:
            return
        conn = self.conn
        committed = False
        try:
            with server_errors(self.url):
                if level.outermost:
                    committed = self._end_outermost(conn, commit)
                elif level.savepoint is not None:
                    committed = self._end_savepoint(conn, level.savepoint, commit)
        except BaseException:
            open_ = not conn.closed and conn.info.transaction_status in _IN_TRANSACTION
            if level.outermost and open_:
                with server_errors(self.url):
                    conn.rollback()
            raise
        finally:
            try:
                if level.outermost or (level.savepoint is not None and not committed):
                    self.transaction_ended(committed)
            finally:
                self._levels -= 1
                if self._levels == 0:
                    self._owner = self.task_with_transaction = None
                    if self._uses == 0:
                        self._discard_connection()
                self.lock.release()

    def _end_outermost(self, conn: psycopg.Connection, commit: bool) -> bool:
        if not commit:
            if conn.info.transaction_status in _IN_TRANSACTION:
                conn.execute("ROLLBACK")
            return False
        # Every write's commit renews this store's step-lock leases (and fails
        # if one was taken over); a snapshot's only if something inside wrote.
        if self._wrote:
            self.renew_held_leases()
        conn.execute("COMMIT")
        return True

    @staticmethod
    def _end_savepoint(conn: psycopg.Connection, name: str, commit: bool) -> bool:
        if commit:
            conn.execute(f"RELEASE SAVEPOINT {name}")
            return True
        if conn.info.transaction_status in _IN_TRANSACTION:
            conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
            conn.execute(f"RELEASE SAVEPOINT {name}")
        return False

    @contextmanager
    def busy_timeout(self, seconds: float) -> Iterator[None]:
        """Wait at most `seconds` for another connection's lock, for a while
        (the store's lock is held throughout, so it is this thread's alone)."""
        with self.lock:
            self._lock_timeout = busy_timeout_ms(seconds)
            try:
                yield
            finally:
                self._lock_timeout = busy_timeout_ms(self.busy_timeout_seconds)


def busy_timeout_ms(seconds: float) -> str:
    """A `lock_timeout` value: at least 1 ms (0 would mean wait forever)."""
    return f"'{max(1, int(seconds * 1000))}ms'"
