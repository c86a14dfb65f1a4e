"""Several statements in one round trip: one simple query (see held.py).

psycopg sends a statement with parameters on its own (the extended protocol
takes one at a time), and its pipeline mode, which sends several, flushes
and polls once per statement: on a busy machine it cost more than it saved.
So a statement is written as text when it is held: `EXECUTE name(values)`
of a statement prepared once per connection (SQL's PREPARE: parsed and
planned once, as psycopg's own prepared statements are), its values written
as SQL literals, as psycopg's client-side binding writes them (`_Literals`:
strings quoted by libpq's escaping; a value psycopg refuses, a string holding
NUL say, fails there, in psycopg's words). A batch's outcome is read from
the query's results, one per statement, in order.

A statement is prepared in a round trip of its own, the first time it is
sent on a connection (inside a transaction, in a savepoint: a PREPARE that
fails would spoil it). One that PREPARE refuses (a parameter whose type
only its value tells) goes with its values in its text, as psycopg's
`ClientCursor` would send it.
"""

from __future__ import annotations

import functools
import re
import weakref
import zlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg.adapt import Transformer
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


class _Literals:
    """Values as SQL literals on one connection, as psycopg's client-side
    binding writes them (`Transformer.as_literal`: strings and bytes quoted
    by libpq's escaping; what psycopg refuses, a string holding NUL say,
    fails in its words). A list of strings, integers and times, which
    psycopg writes slowly (the message INSERT's columns), is written here,
    quoted by libpq, the same way."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self._escape = Escaping(conn.pgconn).escape_literal
        self._encoding = conn.info.encoding
        self._psycopg = Transformer(conn).as_literal

    def __call__(self, value: Any) -> str:
        if type(value) is list and value and all(map(_plain, value)):
            # '{"a",NULL}': an array literal of no type (the parameter's, in the end)
            text = "{" + ",".join(map(_array_item, value)) + "}"
            try:
                return self._escape(text.encode(self._encoding)).decode(self._encoding)
            except UnicodeError:  # not in the connection's encoding: psycopg says so
                pass
        return self._psycopg(value).decode(self._encoding)


def _plain(item: Any) -> bool:
    """Whether `item` is an array element `_Literals` writes itself."""
    kind = type(item)
    return (
        item is None
        or kind is int
        or (kind is str and "\x00" not in item)
        or (kind is datetime and item.tzinfo is not None)
    )


def _array_item(item: str | int | datetime | None) -> str:
    if item is None:
        return "NULL"
    if type(item) is int:
        return str(item)
    text = item.isoformat() if isinstance(item, datetime) else item
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@functools.lru_cache(maxsize=1024)
def _placeholders(query: str) -> int:
    return _PLACEHOLDER.findall(query).count("%s")


def as_text(conn: psycopg.Connection, query: str, params: Sequence[Any]) -> str:
    """`query` (psycopg's `%s` placeholders) with `params`, as text for a
    simple query. Raises what psycopg raises for values it cannot send."""
    name = _prepared_name(conn, query)
    if name is None or _placeholders(query) != len(params):
        # (a wrong count of values raises here, in psycopg's words)
        return psycopg.ClientCursor(conn).mogrify(query, params)
    if not params:
        return f"EXECUTE {name}"
    return f"EXECUTE {name}({', '.join(map(_Literals(conn), params))})"


def send(conn: psycopg.Connection, statements: Sequence[Held]) -> None:
    """Send `statements` in one simple query, filling the outcome of each
    that has one."""
    if not statements:
        return
    cursor = conn.execute("; ".join(held.text for held in statements))
    for position, held in enumerate(statements):
        if position:
            cursor.nextset()
        if held.later is not None:
            held.later.fill(cursor)
