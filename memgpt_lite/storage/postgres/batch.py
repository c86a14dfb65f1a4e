"""Several statements in one round trip: one simple query (see held.py).

psycopg sends a statement with parameters on its own (the extended protocol
takes one at a time), and its pipeline mode, which sends several, flushes
and polls once per statement: on a busy machine it cost more than it saved.
So a batch is written as text: each statement with parameters becomes
`EXECUTE name(literals)` of a statement prepared once per connection (SQL's
PREPARE, planned once, as psycopg's own prepared statements are), its
parameters written as SQL literals (strings quoted by libpq). Its outcome is
read from the query's results, one per statement, in order.

A statement is prepared in a round trip of its own, once per connection
(inside a transaction, in a savepoint: a PREPARE that fails would spoil
it); if PREPARE refuses it, it goes with its values in its text. A value
the batch cannot write as a literal (bytes, JSON, a string holding NUL)
sends that statement through psycopg, after the ones before it: more round
trips, the same outcome.
"""

from __future__ import annotations

import math
import re
import weakref
import zlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg.pq import Escaping, TransactionStatus

from memgpt_lite.storage.postgres.held import Held

_PLACEHOLDER = re.compile(r"%%|%s")
_PREPARING = "memgpt_preparing"
_PREPARABLE = (TransactionStatus.IDLE, TransactionStatus.INTRANS)
_MAX_PREPARED = 500  # per connection; any more go with their values in their text
# Per connection: each statement's prepared name, or None where PREPARE refused it.
_prepared: weakref.WeakKeyDictionary[psycopg.Connection, dict[str, str | None]] = (
    weakref.WeakKeyDictionary()
)


class NotLiteral(Exception):
    """A value `literal` cannot write: the statement goes through psycopg."""


class Literals:
    """SQL literals for a connection (its encoding, its string syntax)."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.escaping = Escaping(conn.pgconn)
        self.encoding = conn.info.encoding

    def __call__(self, value: Any) -> str:
        """`value` as an SQL literal, of the type its context gives it, as
        psycopg would have sent it."""
        if isinstance(value, str):
            return self.string(value)
        return literal(value, self)

    def string(self, value: str) -> str:
        if "\x00" in value:
            raise NotLiteral  # psycopg refuses it, in its own words
        try:
            return self.escaping.escape_literal(value.encode(self.encoding)).decode(self.encoding)
        except UnicodeError:
            raise NotLiteral from None


def literal(value: Any, literals: Literals) -> str:
    """A value other than a string as an SQL literal (`Literals` writes strings)."""
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return literals.string(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"'{value!r}'::float8"
    if isinstance(value, datetime) and value.tzinfo is not None:
        return f"'{value.isoformat()}'::timestamptz"
    if isinstance(value, list):
        if not value:
            return "'{}'"
        return "ARRAY[" + ", ".join(literal(item, literals) for item in value) + "]"
    raise NotLiteral


def _numbered(query: str) -> str:
    """`query` with `$1`, `$2`, ... for its placeholders (PREPARE's)."""
    count = 0

    def number(match: re.Match[str]) -> str:
        nonlocal count
        if match.group() == "%%":
            return "%"
        count += 1
        return f"${count}"

    return _PLACEHOLDER.sub(number, query)


def _with_values(query: str, values: list[str]) -> str:
    """`query` with its placeholders replaced by `values`, in order."""
    remaining = iter(values)
    return _PLACEHOLDER.sub(lambda m: "%" if m.group() == "%%" else next(remaining), query)


def _prepared_name(conn: psycopg.Connection, query: str) -> str | None:
    """The name `query` is prepared under on `conn`, prepared now if need be
    (None: PREPARE refused it, or the connection's transaction failed)."""
    names = _prepared.setdefault(conn, {})
    if query in names:
        return names[query]
    status = conn.info.transaction_status
    if len(names) >= _MAX_PREPARED or status not in _PREPARABLE:
        return None
    name = f"memgpt_{zlib.crc32(query.encode()):08x}_{len(names)}"
    prepare = f"PREPARE {name} AS {_numbered(query)}"
    try:
        if status == TransactionStatus.IDLE:
            conn.execute(prepare)
        else:  # in a savepoint, so that a refusal leaves the transaction as it was
            conn.execute(f"SAVEPOINT {_PREPARING}; {prepare}; RELEASE SAVEPOINT {_PREPARING}")
    except psycopg.errors.ProgrammingError:
        if status == TransactionStatus.INTRANS:
            conn.execute(f"ROLLBACK TO SAVEPOINT {_PREPARING}; RELEASE SAVEPOINT {_PREPARING}")
        name = None  # its parameters' types need the values: written out each time
    names[query] = name
    return name


def _text(conn: psycopg.Connection, literals: Literals, held: Held) -> str:
    """A held statement as text for a simple query (NotLiteral: it cannot be)."""
    if held.params is None:
        return held.query
    values = [literals(value) for value in held.params]
    if len(values) != len(_PLACEHOLDER.findall(held.query.replace("%%", ""))):
        raise NotLiteral  # psycopg says what is wrong
    name = _prepared_name(conn, held.query)
    if name is None:
        return _with_values(held.query, values)
    return f"EXECUTE {name}({', '.join(values)})" if values else f"EXECUTE {name}"


def send(conn: psycopg.Connection, statements: Sequence[Held]) -> None:
    """Send `statements` in order, in one round trip when each can be written
    as text, filling the outcome of each that has one."""
    literals = Literals(conn)
    batch: list[tuple[Held, str]] = []
    for held in statements:
        try:
            batch.append((held, _text(conn, literals, held)))
        except NotLiteral:
            _send_text(conn, batch)
            batch = []
            cursor = conn.execute(held.query, held.params)
            if held.later is not None:
                held.later.fill(cursor)
    _send_text(conn, batch)


def _send_text(conn: psycopg.Connection, batch: list[tuple[Held, str]]) -> None:
    if not batch:
        return
    cursor = conn.execute("; ".join(text for _, text in batch))
    for position, (held, _) in enumerate(batch):
        if position:
            cursor.nextset()
        if held.later is not None:
            held.later.fill(cursor)
