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
agree with each other whatever commits meanwhile. The statements of
transactions and savepoints go with the next statement, not alone (held.py).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from memgpt_lite.errors import ConflictError, ReadOnlyError, StoreError
from memgpt_lite.storage.core.errors import NOTHING_CHANGED
from memgpt_lite.storage.core.locks import (
    AGENT_LOCKS,
    CONVERSATION_LOCKS,
    TAKEN_OVER,
    HeldLease,
)
from memgpt_lite.storage.core.sql import Cursor
from memgpt_lite.storage.core.transactions import Transactions
from memgpt_lite.storage.location import describe
from memgpt_lite.storage.postgres.batch import as_text, send
from memgpt_lite.storage.postgres.connect import (
    DRIVER_ERRORS,
    give_back,
    pool,
    server_errors,
    server_problem,
)
from memgpt_lite.storage.postgres.dialect import POSTGRES
from memgpt_lite.storage.postgres.held import (
    LEASE_LOST,
    Held,
    HeldStatements,
    Later,
    released,
    renewal,
)

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
    held_leases: dict[str, HeldLease]  # core/locks.py's

    def _execute(self, statement: str, params: Sequence[Any] = ()) -> Cursor:
        return self._send(postgres_statement(statement), params)

    def _execute_later(self, statement: str, params: Sequence[Any] = ()) -> Cursor:
        return self._hold(postgres_statement(statement), params)

    def _send(self, query: str, params: Sequence[Any] = ()) -> Later:
        """Run `query` (psycopg's placeholders) now, with what is held: one
        round trip."""
        later = self._hold(query, params)
        self._send_held()
        return later

    def _hold(self, query: str, params: Sequence[Any] = ()) -> Later:
        """Hold `query` (psycopg's placeholders), to go with the next
        statement sent, or its level's end (held.py)."""
        later = Later(self._send_held)
        text = as_text(self._connection_in_use(), query, params)
        self._held.hold(Held(text, later, must_send=True))
        return later

    def _all_together(self, *reads: tuple[str, Sequence[Any]]) -> list[list[Any]]:
        """In one round trip."""
        held = [self._hold(postgres_statement(statement), params) for statement, params in reads]
        self._send_held()
        return [later.fetchall() for later in held]

    def _send_held(self, then: str | None = None) -> None:
        """Send what is held, and the transaction statement `then`, in one round trip."""
        statements = self._held.take()
        if then is not None:
            statements.append(Held(then))
        send(self._connection(), statements)

    def _init_transactions(self, busy_timeout_seconds: float) -> None:
        super()._init_transactions(busy_timeout_seconds)
        self._conn: psycopg.Connection | None = None  # taken from the pool while in use
        self._lock_timeout = busy_timeout_ms(busy_timeout_seconds)
        self._held = HeldStatements()  # sent with the next statement (held.py)

    @property
    def conn(self) -> psycopg.Connection:
        """The connection of the call or transaction running now, taken from
        the pool when the call first uses it (a call that needs none, such as
        `close`, takes none), with what was held sent."""
        conn = self._connection_in_use()
        if self._held:
            self._send_held()
        return conn

    def _connection_in_use(self) -> psycopg.Connection:
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
        self._connection()  # taken now: no free connection fails here, not later
        if write:
            self._held.hold_begin("BEGIN", f"SET LOCAL lock_timeout = {self._lock_timeout}")
        else:
            self._held.hold_begin("BEGIN ISOLATION LEVEL REPEATABLE READ")

    def _execute_control(self, statement: str) -> None:
        if statement == "COMMIT":
            self._commit()
        elif statement == "ROLLBACK":
            begun = self._held.begin
            self._held.clear()  # what was held rolls back unsent
            if not begun:  # else the server has no transaction to roll back
                self._connection().execute("ROLLBACK")
        elif statement.startswith("SAVEPOINT"):
            if self._held.writes():
                self._send_held()  # a savepoint never opens over unsent writes
            self._held.hold(Held(statement))
        elif statement.startswith("RELEASE"):
            self._release(statement.rsplit(" ", 1)[1])
        else:  # ROLLBACK TO SAVEPOINT
            self._rollback_to(statement.rsplit(" ", 1)[1])

    def _release(self, name: str) -> None:
        """Release the savepoint `name`: nothing if it was never sent and
        held no write; else held, once the writes its block held are sent,
        which rolls it back alone if one of them fails."""
        unsent = self._held.unsent_savepoint(name)
        if not self._held.writes():
            if unsent is not None:
                self._held.drop_from(unsent)
            else:
                self._held.hold(Held(f"RELEASE SAVEPOINT {name}"))
            return
        try:
            self._send_held()
        except BaseException:
            self._rollback_to(name)
            self._held.hold(Held(f"RELEASE SAVEPOINT {name}"))
            raise
        self._held.hold(Held(f"RELEASE SAVEPOINT {name}"))

    def _rollback_to(self, name: str) -> None:
        """Undo the savepoint's block: what it held is dropped, and what it
        sent is rolled back with the next statement sent."""
        unsent = self._held.unsent_savepoint(name)
        if unsent is not None:
            self._held.drop_from(unsent + 1)  # kept for its RELEASE, which drops it
        else:
            self._held.clear()  # all held after the savepoint: its block's
            self._held.hold(Held(f"ROLLBACK TO SAVEPOINT {name}"))

    def _commit(self) -> None:
        """COMMIT, with what is held (the lease renewal last); no round trip
        for a transaction that never sent anything and holds no write."""
        if self._held.only_begun():
            self._held.clear()
            return
        renewing = self._held.renewal
        try:
            self._send_held(then="COMMIT")
        except LEASE_LOST:
            if not renewing:
                raise
            raise ConflictError(TAKEN_OVER) from None
        if renewing:
            now = time.monotonic()
            for lease in self.held_leases.values():
                lease.renewed_at = now

    def renew_held_leases(self) -> None:
        """Held, to go with the COMMIT that follows, which it fails (ConflictError
        then) if a lease was taken over or its agent deleted."""
        if not self.held_leases:
            return
        now, leases = time.time(), self.held_leases
        values: list[Any] = []
        tables: list[tuple[str, str]] = []
        for locks in (AGENT_LOCKS, CONVERSATION_LOCKS):
            these = {key: lease for key, lease in leases.items() if lease.locks == locks}
            if not these:
                continue
            tables.append((locks.table, locks.key))
            values += [
                now,
                now,
                list(these),
                [lease.token for lease in these.values()],
                [float(lease.lease_seconds) for lease in these.values()],
            ]
        values.append(len(leases))
        statement = renewal(tuple(tables))
        self._held.hold_renewal(as_text(self._connection_in_use(), statement, values))

    def _give_up_step_lock(self, key: str, token: str) -> None:
        """Held, to go with the COMMIT that follows, which it fails as a
        renewal does if the lock was taken over (core/locks.py)."""
        lease = self.held_leases.pop(key, None)
        locks = AGENT_LOCKS if lease is None else lease.locks
        statement = released(locks.table, locks.key)
        self._held.hold_renewal(as_text(self._connection_in_use(), statement, [key, token]))

    def _database_in_transaction(self) -> bool:
        conn = self._conn
        return self._held.begin or (
            conn is not None and not conn.closed and conn.info.transaction_status in _IN_TRANSACTION
        )

    def _read_only_error(self) -> ReadOnlyError:
        return ReadOnlyError(f"{describe(self.url)} is read-only; {NOTHING_CHANGED}")

    def _set_busy_timeout(self, seconds: float) -> None:
        self._lock_timeout = busy_timeout_ms(seconds)

    def _connection_idle(self) -> None:
        """Give the connection back, never with a half-done transaction."""
        self._held.clear()  # a BEGIN never sent began nothing
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
        self._held.clear()
        if self._calls == 0:
            self._connection_idle()

    def _disconnect(self) -> None:
        """Nothing: a store holds no connection between calls (the pool stays
        open for the process's other stores)."""
