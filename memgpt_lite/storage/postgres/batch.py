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

The statement is prepared with the parameter types psycopg would send its
values with (`unknown` for a string, `float8` for a float, `int2` or `int8`
by the integer's size, ...), so the server reads it as it reads psycopg's:
types left to the statement's context would make a float an integer where
it meets an integer column. So one statement is prepared once per set of
types, in a round trip of its own the first time it is sent on a connection
(inside a transaction, in a savepoint: a PREPARE that fails would spoil it).
One that PREPARE refuses goes with its values in its text, as psycopg's
`ClientCursor` would send it.
"""

from __future__ import annotations

import functools
import re
import weakref
import zlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, cast

import psycopg
from psycopg import sql
from psycopg.adapt import PyFormat, Transformer
from psycopg.pq import Escaping, TransactionStatus

from memgpt_lite.storage.postgres.held import Held

# psycopg's placeholders: positional (%s) or named (%(name)s); %% is a %.
_PLACEHOLDER = re.compile(r"%%|%s|%\((\w+)\)s")
_PREPARING = "memgpt_preparing"
_PREPARABLE = (TransactionStatus.IDLE, TransactionStatus.INTRANS)
_MAX_PREPARED = 500  # per connection; any more go with their values in their text
# Per connection: the prepared name of each statement and its parameters' types,
# or None where PREPARE refused it.
_prepared: weakref.WeakKeyDictionary[psycopg.Connection, dict[tuple[str, ...], str | None]] = (
    weakref.WeakKeyDictionary()
)
Params = Sequence[Any] | Mapping[str, Any]


@functools.lru_cache(maxsize=1024)
def _numbered(query: str) -> tuple[str, tuple[int | str, ...]]:
    """`query` with `$1`, `$2`, ... for its placeholders (PREPARE's), and the
    key of the value each stands for: a position, or a name (a name used
    twice is one parameter)."""
    keys: list[int | str] = []

    def number(match: re.Match[str]) -> str:
        if match.group() == "%%":
            return "%"
        key: int | str = match.group(1) or len(keys)
        if key not in keys:
            keys.append(key)
        return f"${keys.index(key) + 1}"

    return _PLACEHOLDER.sub(number, query), tuple(keys)


def _values(params: Params, keys: tuple[int | str, ...]) -> list[Any] | None:
    """The values of `params` in the order of `keys`; None if they do not
    fit (psycopg then says how)."""
    if isinstance(params, Mapping):
        if all(isinstance(key, str) and key in params for key in keys):
            return [params[key] for key in keys]
        return None
    if all(isinstance(key, int) for key in keys) and len(params) == len(keys):
        return list(params)
    return None


def _prepared_name(conn: psycopg.Connection, query: str, types: Sequence[str]) -> str | None:
    """The name `query` is prepared under on `conn` with parameters of
    `types`, prepared now if need be (None: PREPARE refused it, or the
    connection's transaction failed)."""
    names = _prepared.setdefault(conn, {})
    key = (query, *types)
    if key in names:
        return names[key]
    status = conn.info.transaction_status
    if len(names) >= _MAX_PREPARED or status not in _PREPARABLE:
        return None
    name = f"memgpt_{zlib.crc32(query.encode()):08x}_{len(names)}"
    declared = f" ({', '.join(types)})" if types else ""
    prepare = f"PREPARE {name}{declared} AS {_numbered(query)[0]}"
    try:
        if status == TransactionStatus.IDLE:
            conn.execute(prepare)
        else:  # in a savepoint, so that a refusal leaves the transaction as it was
            conn.execute(f"SAVEPOINT {_PREPARING}; {prepare}; RELEASE SAVEPOINT {_PREPARING}")
    except psycopg.errors.ProgrammingError:
        if status == TransactionStatus.INTRANS:
            conn.execute(f"ROLLBACK TO SAVEPOINT {_PREPARING}; RELEASE SAVEPOINT {_PREPARING}")
        name = None  # its parameters' types need the values: written out each time
    names[key] = name
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
        self._transformer = Transformer(conn)
        self._psycopg = self._transformer.as_literal
        self._types = conn.adapters.types

    def type_of(self, value: Any) -> str | None:
        """The parameter type psycopg sends `value` as (what it dumps it as:
        `unknown` for a string, which the statement's context types), as
        PREPARE names it; None for one it has no name of."""
        oid = 0 if value is None else self._transformer.get_dumper(value, PyFormat.AUTO).oid
        if not oid:
            return "unknown"
        info = self._types.get(oid)
        if info is None:
            return None
        return info.regtype if oid == info.oid else f"{info.regtype}[]"

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


def as_text(conn: psycopg.Connection, query: str | sql.Composable, params: Params) -> str:
    """`query` (psycopg's placeholders, or a composed statement) with
    `params`, as text for a simple query. Its parameters have the types
    psycopg would send them with, so that the server reads the statement as
    psycopg would have it read. Raises what psycopg raises for values it
    cannot send."""
    if isinstance(query, sql.Composable):
        query = query.as_string(conn)
    values = _values(params, _numbered(query)[1])
    literals = _Literals(conn)
    types = None if values is None else [literals.type_of(value) for value in values]
    name = None
    if values is not None and types is not None and None not in types:
        name = _prepared_name(conn, query, cast(list[str], types))
    if name is None or values is None:
        # (values that do not fit the placeholders raise here, in psycopg's words)
        return psycopg.ClientCursor(conn).mogrify(query, params)
    if not values:
        return f"EXECUTE {name}"
    return f"EXECUTE {name}({', '.join(map(literals, values))})"


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
