"""How the core writes SQL once for both dialects.

The core's statements use `?` placeholders, and only SQL that SQLite (3.35
or later, as the backends already need) and PostgreSQL both read alike:
`INSERT ... ON CONFLICT (...) DO UPDATE SET c = excluded.c` for upserts,
`RETURNING` for the seqs a database assigns, `CAST(? AS TEXT)` where
PostgreSQL must be told a parameter's type. What they say differently is a
`Dialect`'s: how a time is stored, the clauses that lock the rows a write
reads first, lists of values, tag filters, an agent's block ids as one
column, the error a UNIQUE conflict raises. A backend's store provides one
`Dialect` and `_execute`, which runs a statement on its connection (PostgreSQL's
turns each `?` into `%s` first).

A statement with RETURNING must be read to its end before the transaction
commits (SQLite refuses to commit under a statement still running): `_all`,
or `_one` where at most one row comes back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any, NamedTuple, Protocol

from memgpt_lite.storage.core.errors import unknown_agent

Filters = tuple[str, list[Any]]  # conditions (each begins " AND "), and their parameters


class Search(NamedTuple):
    """One full-text ranking a backend makes: the agent's best `limit` rows
    for the words of `query` that pass `filters` (on the table's alias, `m`
    or `p`), scoring at most `budget` matches; `exact`: how many of the first
    results `Ranking.proven` vouches for; with `drop_over_budget`, the words
    found in more than `budget` rows are left out of the query."""

    agent_id: str
    query: str
    limit: int
    filters: Filters
    exact: int
    budget: int
    drop_over_budget: bool = False


class Cursor(Protocol):
    """What `_execute` returns: a DB-API cursor."""

    rowcount: int
    description: Any

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Fetched:
    """A statement's outcome, read to its end: its rows and rowcount."""

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self._rows, self.rowcount = rows, rowcount

    @classmethod
    def of(cls, cursor: Cursor) -> Fetched:
        # DB-API: no description for a statement that returns no rows.
        return cls(cursor.fetchall() if cursor.description is not None else [], cursor.rowcount)

    def fetchone(self) -> Any:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[Any]:
        return self._rows


class Dialect:
    """How a backend's SQL differs from the other's, where the core's
    statements need it (the backend's own modules write their own SQL)."""

    # Appended to a SELECT that a write reads before it writes, locking the
    # rows read until the transaction ends ("" where writers never run at once).
    for_update = ""
    for_no_key_update = ""  # the same, for a row whose key stays
    # A failed statement spoils the whole transaction (PostgreSQL): one that
    # may fail, and whose failure the store turns into an error it raises,
    # runs in a savepoint of its own.
    failure_aborts_transaction = False
    # The driver's exceptions that a UNIQUE (or primary key) conflict raises
    # (`is_conflict` tells it from others of the same class).
    unique_violation: tuple[type[BaseException], ...] = ()
    # SQL for the ids of the blocks of the agent of the `agents` row, in order.
    block_ids = ""

    def is_conflict(self, exc: BaseException) -> bool:
        """Whether `exc`, one of `unique_violation`, is a UNIQUE conflict."""
        return True

    def time(self, value: datetime) -> Any:
        """A time as the database stores it."""
        raise NotImplementedError

    def block_id_list(self, stored: Any) -> list[str]:
        """The block ids `block_ids` reads, as a list."""
        raise NotImplementedError

    def among(self, column: str, values: Sequence[Any]) -> list[tuple[str, list[Any]]]:
        """Conditions that `column` is one of `values` (non-empty), each with
        its parameters: as many as the database needs to hold them all, each
        run on its own."""
        raise NotImplementedError

    def any_tag(self, tags: Sequence[str]) -> tuple[str, list[Any]]:
        """A condition that the passage `p` has one of `tags`, and its parameters."""
        raise NotImplementedError

    def day_bounds(self, start: date | None, end: date | None) -> tuple[Any, Any]:
        """Bounds for `created_at` covering whole UTC days, `end` inclusive,
        as stored (None: open)."""
        low = datetime.combine(start, datetime.min.time(), UTC) if start else None
        high = datetime.combine(end + timedelta(days=1), datetime.min.time(), UTC) if end else None
        return (
            None if low is None else self.time(low),
            None if high is None else self.time(high),
        )


def as_list(stored: Any) -> list[Any]:
    """A list the database returned as JSON text (SQLite) or as an array."""
    return json.loads(stored) if isinstance(stored, str) else list(stored)


def stored_datetime(value: datetime | str | None) -> datetime | None:
    """A time as read back: a datetime, or SQLite's ISO 8601 text."""
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(value)


class Runner:
    """The core's way to the database: a backend's store provides `dialect`
    and `_execute` (its transactions' module does)."""

    dialect: Dialect

    def _execute(self, statement: str, params: Sequence[Any] = ()) -> Cursor:
        """Run `statement` (`?` placeholders) on the store's connection."""
        raise NotImplementedError

    def _execute_later(self, statement: str, params: Sequence[Any] = ()) -> Cursor:
        """Run `statement`, a write of the `transaction()` level open now whose
        outcome is not needed at once: a backend may send it with its next
        statement, or with the level's end (its failure then fails the level,
        as if raised inside it); reading the outcome sends it. Here, at once."""
        return Fetched.of(self._execute(statement, params))

    def _all_together(self, *reads: tuple[str, Sequence[Any]]) -> list[list[Any]]:
        """The rows of each read (a statement and its parameters), in order:
        a backend may send them in one round trip. Here, one after the other."""
        return [self._all(statement, params) for statement, params in reads]

    def _one(self, statement: str, params: Sequence[Any] = ()) -> Any:
        """The first row of `statement`, or None."""
        return self._execute(statement, params).fetchone()

    def _all(self, statement: str, params: Sequence[Any] = ()) -> list[Any]:
        return self._execute(statement, params).fetchall()

    def _lock_agents(self, agent_ids: Iterable[str]) -> None:
        """Inside a write of the agents' items: lock their rows, where
        writers run at once, in one order (so that two writers of the same
        agents never deadlock, and their items are numbered and committed in
        that order). NotFoundError for an agent that does not exist."""
        wanted = sorted(set(agent_ids))
        found: set[str] = set()
        for among, params in self.dialect.among("id", wanted):
            rows = self._all(
                f"SELECT id FROM agents WHERE {among} ORDER BY id{self.dialect.for_no_key_update}",
                params,
            )
            found.update(row[0] for row in rows)
        missing = set(wanted) - found
        if missing:
            raise unknown_agent(min(missing))
