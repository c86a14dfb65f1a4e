"""Statements held back and sent together (a part of `PostgresStore`, under
primitives.py).

A statement sent alone is a round trip to the server, and each round trip
costs the client, the server and the machine's scheduler far more than the
work it carries. So the statements that nothing waits for are held: BEGIN
and its lock timeout, SAVEPOINT, RELEASE, the lease renewal, and the writes
whose outcome is read only once their level ended (`_execute_later`). They
go to the server with the next statement that is sent, or with the COMMIT:
one simple query, one round trip (batch.py writes them as text). A
transaction that ends having sent nothing and holding no write costs none; a
savepoint whose block held no write is never sent.

Errors stay where they were. What is held either cannot fail on its own
(BEGIN, SET LOCAL, SAVEPOINT and RELEASE: the server being gone fails the
statement they go with), or is sent before its level ends: a savepoint
sends the writes its block held before it is released (and is rolled back
alone if one failed), and an outermost transaction sends its writes with
its COMMIT, which the server then skips (the transaction rolls back, as if
they had failed inside it). The lease renewal is held last before COMMIT
and fails on purpose when a lease was taken over, so that the COMMIT is
never run.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any, NamedTuple

import psycopg
from psycopg.pq import ExecStatus

# Renew the leases this store holds, and fail (division by zero, the one
# error a plain SQL statement can raise on purpose) unless every one was
# still held: the COMMIT sent after it is then skipped. One UPDATE per table
# of locks held (`renewal`): a step in an agent's default conversation sends
# the agent's alone, as it did before conversations.
_RENEWED = (
    "{name} AS (UPDATE {table} s SET renewed_at = %s, expires_at = %s + l.seconds "
    "FROM unnest(%s::text[], %s::text[], %s::float8[]) AS l({key}, holder, seconds) "
    "WHERE s.{key} = l.{key} AND s.holder = l.holder RETURNING 1)"
)


@cache
def renewal(tables: tuple[tuple[str, str], ...]) -> str:
    """The statement that renews the leases held in `tables` ((table, key
    column) each, in the order of their values: now, now, keys, holders,
    seconds), then checks that their count is the last parameter."""
    names = [f"renewed_{i}" if i else "renewed" for i in range(len(tables))]
    parts = [
        _RENEWED.format(name=name, table=table, key=key)
        for name, (table, key) in zip(names, tables, strict=True)
    ]
    if len(tables) == 1:
        return f"WITH {parts[0]} SELECT 1 / (count(*) = %s)::int FROM renewed"
    counted = " + ".join(f"(SELECT count(*) FROM {name})" for name in names)
    return f"WITH {', '.join(parts)} SELECT 1 / ({counted} = %s)::int"


@cache
def released(table: str, key: str) -> str:
    """The statement that gives up a lock held in `table` (its `key` and
    holder), failing as the renewal does unless it was still held."""
    return (
        f"WITH released AS (DELETE FROM {table} WHERE {key} = %s AND holder = %s RETURNING 1) "
        "SELECT 1 / count(*) FROM released"
    )


LEASE_LOST = psycopg.errors.DivisionByZero


class Later:
    """The outcome of a held statement, as a cursor gives it: its rows and
    rowcount once it was sent (reading it first sends what is held)."""

    def __init__(self, send_held: Callable[[], None]) -> None:
        self._send_held = send_held
        self._rows: list[Any] | None = None
        self._rowcount = -1

    def fill(self, cursor: psycopg.Cursor) -> None:
        """From the cursor's current result (its status, not `description`,
        which makes a column object per column, tells whether it has rows)."""
        self._rowcount = cursor.rowcount
        result = cursor.pgresult
        has_rows = result is not None and result.status == ExecStatus.TUPLES_OK
        self._rows = cursor.fetchall() if has_rows else []

    def _sent(self) -> list[Any]:
        if self._rows is None:
            self._send_held()
        if self._rows is None:
            raise RuntimeError("a held statement was rolled back before it was sent")
        return self._rows

    @property
    def rowcount(self) -> int:
        self._sent()
        return self._rowcount

    def fetchall(self) -> list[Any]:
        return self._sent()

    def fetchone(self) -> Any:
        rows = self._sent()
        return rows[0] if rows else None


class Held(NamedTuple):
    """A statement held back, as the text it is sent as (batch.py)."""

    text: str
    later: Later | None = None  # where its outcome goes, for one that has one
    # A write, a read whose outcome is awaited, or the renewal: it must be sent
    # (BEGIN, SAVEPOINT and the like change nothing unless something follows).
    must_send: bool = False


class HeldStatements:
    """The statements held back for one connection, in order, and what they
    mean for the level being ended (primitives.py decides)."""

    def __init__(self) -> None:
        self.statements: list[Held] = []
        self.begin = False  # BEGIN is among them: the server has no transaction yet
        self.renewal = False  # the lease renewal is among them

    def __bool__(self) -> bool:
        return bool(self.statements)

    def hold(self, held: Held) -> None:
        self.statements.append(held)

    def hold_begin(self, *texts: str) -> None:
        self.statements.extend(Held(text) for text in texts)
        self.begin = True

    def hold_renewal(self, text: str) -> None:
        self.statements.append(Held(text, must_send=True))
        self.renewal = True

    def writes(self) -> bool:
        """Whether a statement that must be sent (a write, the renewal) is among them."""
        return any(held.must_send for held in self.statements)

    def unsent_savepoint(self, name: str) -> int | None:
        """Where the savepoint `name` stands among them, if it was never sent."""
        for at in range(len(self.statements) - 1, -1, -1):
            if self.statements[at].text == f"SAVEPOINT {name}":
                return at
        return None

    def drop_from(self, at: int) -> None:
        """Forget what was held from `at` on (its block ended unsent)."""
        del self.statements[at:]

    def only_begun(self) -> bool:
        """Whether the transaction was never sent and nothing held would
        change anything: ending it needs no round trip."""
        return self.begin and not self.writes()

    def take(self) -> list[Held]:
        """The statements to send now; none are held after."""
        statements = self.statements
        self.statements, self.begin, self.renewal = [], False, False
        return statements

    def clear(self) -> None:
        self.take()
