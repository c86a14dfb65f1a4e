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
import math
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

# What an array literal's element must be quoted for (whitespace, and the
# characters of the array syntax).
_ARRAY_SYNTAX = re.compile(r'[\s{},"\\]')
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
    """Values as SQL literals on one connection, each with the parameter type
    psycopg sends it as (as PREPARE names it: `unknown` for a string, which
    the statement's context types). The values a step writes (strings,
    numbers, booleans, times and lists of them) are written here as psycopg's
    client-side binding writes them, strings quoted by libpq: about ninety a
    step, and psycopg's adapters took a third of PostgreSQL's own time in
    it. Any other value is psycopg's (`Transformer.as_literal`), and so is
    what psycopg refuses (a string holding NUL, say), in its words."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self._conn = conn
        self._escape = Escaping(conn.pgconn).escape_literal
        self._encoding = conn.info.encoding

    def __call__(self, value: Any) -> tuple[str, str | None]:
        """`value` as a literal, and its type (None: one PREPARE cannot name)."""
        kind = type(value)
        if value is None:
            return "NULL", "unknown"
        if kind is list:
            written = self._array(value)
        else:
            type_name = _scalar_type(value)
            written = None if type_name is None else self._scalar(value, type_name)
        return written or self._by_psycopg(value)

    def _scalar(self, value: Any, type_name: str) -> tuple[str, str] | None:
        if type_name == "unknown":  # a string
            quoted = self._quoted(value)
            return None if quoted is None else (quoted, type_name)
        if type_name == "timestamp with time zone":
            return f"'{value.isoformat()}'", type_name
        if type_name == "boolean":
            return ("true" if value else "false"), type_name
        return repr(value), type_name  # a number

    def _array(self, value: list[Any]) -> tuple[str, str] | None:
        """A list of strings, integers, floats or times, of one kind, and
        NULLs, written as psycopg writes it ('{"a",NULL}', quoted by libpq)
        with the type it gives it; None for any other list."""
        items = [item for item in value if item is not None]
        kinds = set(map(type, items))
        kind = kinds.pop() if len(kinds) == 1 else (str if not kinds else None)
        if kind is str:
            type_name = "unknown"
        elif kind is int:
            type_name = _integer_type(min(items), max(items)) + "[]"
        elif kind in (float, datetime) and all(map(_scalar_type, items)):
            type_name = f"{_scalar_type(items[0])}[]"
        else:
            return None
        quoted = self._quoted("{" + ",".join(map(_array_item, value)) + "}")
        return None if quoted is None else (quoted, type_name)

    def _quoted(self, text: str) -> str | None:
        if "\x00" in text:
            return None  # psycopg refuses it, in its words
        try:
            return self._escape(text.encode(self._encoding)).decode(self._encoding)
        except UnicodeError:  # not in the connection's encoding: psycopg says so
            return None

    def _by_psycopg(self, value: Any) -> tuple[str, str | None]:
        transformer = Transformer(self._conn)
        text = transformer.as_literal(value).decode(self._encoding)
        oid = transformer.get_dumper(value, PyFormat.AUTO).oid
        info = self._conn.adapters.types.get(oid) if oid else None
        if info is None:
            return text, None if oid else "unknown"
        return text, info.regtype if oid == info.oid else f"{info.regtype}[]"


def _scalar_type(value: Any) -> str | None:
    """The type psycopg sends `value` as, for the values `_Literals` writes
    itself (None for any other)."""
    kind = type(value)
    if kind is str:
        return "unknown"
    if kind is int:
        return _integer_type(value, value)
    if kind is float:
        return "double precision" if math.isfinite(value) else None
    if kind is bool:
        return "boolean"
    if kind is datetime and value.tzinfo is not None:
        return "timestamp with time zone"
    return None


def _integer_type(low: int, high: int) -> str:
    """The smallest type psycopg sends integers from `low` to `high` as."""
    for name, bits in (("smallint", 16), ("integer", 32), ("bigint", 64)):
        if -(2 ** (bits - 1)) <= low and high < 2 ** (bits - 1):
            return name
    return "numeric"


def _array_item(item: str | int | float | datetime | None) -> str:
    """An element of an array literal: quoted where the array syntax needs it."""
    if item is None:
        return "NULL"
    if isinstance(item, int | float):
        return repr(item)
    text = item.isoformat() if isinstance(item, datetime) else item
    if text and text.upper() != "NULL" and not _ARRAY_SYNTAX.search(text):
        return text
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
    written = None if values is None else list(map(_Literals(conn), values))
    name = None
    if written is not None and all(type_name for _, type_name in written):
        name = _prepared_name(conn, query, [cast(str, type_name) for _, type_name in written])
    if name is None or written is None:
        # (values that do not fit the placeholders raise here, in psycopg's words)
        return psycopg.ClientCursor(conn).mogrify(query, params)
    if not written:
        return f"EXECUTE {name}"
    return f"EXECUTE {name}({', '.join(text for text, _ in written)})"


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
