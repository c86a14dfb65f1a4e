"""What the core runs on in PostgreSQL (a part of `PostgresStore`): its
connections, statements on them, and the transaction primitives (the rules
are core/transactions.py's).

A store holds no connection of its own: it takes one from its process's pool
(connect.py) when a call first runs SQL, or for a transaction from its start
to its end, and gives it back when no call or level uses it. So stores are
cheap, and a process with many agents uses at most the pool's connections.

PostgreSQL lets writers run at once (SQLite has one writer at a time), so a
write that reads before it writes locks what it read (`FOR UPDATE`, or the
agent's row first: see the dialect). A write sets its own `lock_timeout`
(the busy timeout); a snapshot is a REPEATABLE READ transaction: its reads
agree with each other whatever commits meanwhile.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from memgpt_lite.errors import ReadOnlyError, StoreError
from memgpt_lite.storage.core.errors import NOTHING_CHANGED
from memgpt_lite.storage.core.sql import Cursor
from memgpt_lite.storage.core.transactions import Transactions
from memgpt_lite.storage.location import describe
from memgpt_lite.storage.postgres.connect import (
    DRIVER_ERRORS,
    give_back,
    pool,
    server_errors,
    server_problem,
)
from memgpt_lite.storage.postgres.dialect import POSTGRES

_IN_TRANSACTION = (TransactionStatus.INTRANS, TransactionStatus.INERROR)


def busy_timeout_ms(seconds: float) -> str:
    """A `lock_timeout` value: at least 1 ms (0 would mean wait forever)."""
    return f"'{max(1, int(seconds * 1000))}ms'"


@functools.lru_cache(maxsize=1024)
def postgres_statement(statement: str) -> str:
    """A core statement (`?` placeholders) as psycopg takes it."""
    return statement.replace("%", "%%").replace("?", "%s")


class PostgresPrimitives(Transactions):
    """Mixed into `PostgresStore`, which provides `url`."""

    url: str
    driver_errors = DRIVER_ERRORS
    dialect = POSTGRES

    def _execute(self, statement: str, params: Sequence[Any] = ()) -> Cursor:
        return self.conn.execute(postgres_statement(statement), params)

    def _init_transactions(self, busy_timeout_seconds: float) -> None:
        super()._init_transactions(busy_timeout_seconds)
        self._conn: psycopg.Connection | None = None  # taken from the pool while in use
        self._lock_timeout = busy_timeout_ms(busy_timeout_seconds)

    @property
    def conn(self) -> psycopg.Connection:
        """The connection of the call or transaction running now, taken from
        the pool when the call first uses it (a call that needs none, such as
        `close`, takes none)."""
        assert self._calls or self._levels, "store SQL outside a guarded call"
        if self._conn is None:
            with server_errors(self.url):
                return self._connection()
        return self._conn

    def _connection(self) -> psycopg.Connection:
        """The store's connection, taken from the pool if it has none (the
        caller holds the lock)."""
        if self._conn is None:
            self._conn = pool(self.url).getconn(timeout=self.busy_timeout_seconds)
        return self._conn

    def store_problem(self, exc: BaseException) -> StoreError | None:
        return server_problem(self.url, exc)

    def _begin(self, write: bool) -> None:
        self._connection().execute(
            f"BEGIN; SET LOCAL lock_timeout = {self._lock_timeout}"
            if write
            else "BEGIN ISOLATION LEVEL REPEATABLE READ"
        )

    def _execute_control(self, statement: str) -> None:
        self._connection().execute(statement)

    def _database_in_transaction(self) -> bool:
        conn = self._conn
        return (
            conn is not None and not conn.closed and conn.info.transaction_status in _IN_TRANSACTION
        )

    def _read_only_error(self) -> ReadOnlyError:
        return ReadOnlyError(f"{describe(self.url)} is read-only; {NOTHING_CHANGED}")

    def _set_busy_timeout(self, seconds: float) -> None:
        self._lock_timeout = busy_timeout_ms(seconds)

    def _connection_idle(self) -> None:
        """Give the connection back, never with a half-done transaction."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            if not conn.closed and conn.info.transaction_status in _IN_TRANSACTION:
                conn.rollback()
        except psycopg.Error:
            pass  # broken: given back all the same, the pool checks it and replaces it
        give_back(self.url, conn)

    def _abandon(self) -> None:
        """After a failure opening the outermost level: what it began is
        rolled back when the connection goes back to the pool, now if no
        call is using it, else when that call ends."""
        if self._calls == 0:
            self._connection_idle()

    def _disconnect(self) -> None:
        """Nothing: a store holds no connection between calls (the pool stays
        open for the process's other stores)."""
