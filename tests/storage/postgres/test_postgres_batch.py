"""PostgreSQL's held statements (storage/postgres/held.py, batch.py), on a
real server: values written as SQL literals come back as they were, a value
psycopg refuses fails where it was given, and a held write that fails when
it is sent fails its own level only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import psycopg
import pytest
from psycopg.adapt import PyFormat, Transformer
from support.contract.base import new_agent, said

from memgpt_lite.models import Message, ToolCall
from memgpt_lite.storage.postgres.batch import _Literals, as_text
from memgpt_lite.storage.postgres.store import PostgresStore

# What a user may type: quotes, backslashes, placeholders, comments, array
# and JSON syntax, statement ends, and characters outside ASCII.
HOSTILE = [
    "it's a \\ test; -- \"quoted\" 'single'",
    "%s %% $1 ?; DROP TABLE agents; --",
    'NULL {a,b} {"x": [1, "\\""]} E\'\\x00\'',
    "ü 🙂 \u2028 tab\tnew\nline",
    "",
]


@pytest.fixture
def store(pg_url: str) -> Iterator[PostgresStore]:
    opened = PostgresStore(pg_url)
    yield opened
    opened.close()


def test_values_written_as_literals_come_back_as_they_were(store: PostgresStore):
    sam = new_agent(store)
    call = ToolCall(id=HOSTILE[1], name="note", arguments=json.dumps({"text": HOSTILE[2]}))
    messages = [said(sam, text) for text in HOSTILE]
    messages.append(Message(agent_id=sam.id, role="assistant", tool_calls=[call]))
    store.add_messages(messages)
    stored = store.messages_from(sam.id, 0)
    assert [m.content for m in stored] == [*HOSTILE, None]
    assert stored[-1].tool_calls == [call]
    assert store.agent_stats(sam.id).message_count == len(messages)
    assert [m.content for m in store.search_messages(sam.id, "quoted", 5)[0]] == [HOSTILE[0]]


def test_each_kind_of_value_reads_back_from_its_literal(pg_url: str):
    values = [
        HOSTILE[0],
        -5,
        2**62,
        1.5,
        float("inf"),
        True,
        None,
        datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
        [HOSTILE[2], None, "NULL", "", "{x,y}"],
        [None, None],
        [],
        [3, None],
        [datetime(2026, 6, 1, 12, tzinfo=ZoneInfo("Europe/Paris")), None],
        [1.5, None, 1e300, -0.1],
        [2**40, -3],
        b"\x00\x01'\\",
    ]
    query = (
        "SELECT %s::text, %s::int, %s::bigint, %s::float8, %s::float8, %s::bool, %s::text, "
        "%s::timestamptz, %s::text[], %s::text[], %s::text[], %s::int[], %s::timestamptz[], "
        "%s::float8[], %s::bigint[], %s::bytea"
    )
    with psycopg.connect(pg_url, autocommit=True, prepare_threshold=None) as conn:
        text = as_text(conn, query, values)
        assert text.startswith("EXECUTE memgpt_")  # prepared once, on this connection
        assert list(conn.execute(text).fetchone()) == values
        # A statement PREPARE refuses (a parameter of no type) goes with its values.
        untyped = as_text(conn, "SELECT %s IS NULL, 100 %% 7", [None])
        assert conn.execute(untyped).fetchone() == (True, 2)


def test_each_value_has_the_type_psycopg_sends_it_as(pg_url: str):
    values = [
        "text",
        None,
        7,
        -40_000,
        2**40,
        2.5,
        False,
        datetime(2026, 1, 2, tzinfo=UTC),
        b"bytes",
        ["a", None],
        [None],
        [1, None, 2],
        [1, 40_000],
        [-(2**31), 2**31],
        [2**63],
        [0.5, None],
        [datetime(2026, 1, 2, tzinfo=UTC)],
        [True],
        ["", "NULL", "a b", "{x}", 'q"', "back\\slash", "plain"],
    ]
    with psycopg.connect(pg_url, autocommit=True, prepare_threshold=None) as conn:
        transformer = Transformer(conn)
        for value in values:
            oid = 0 if value is None else transformer.get_dumper(value, PyFormat.AUTO).oid
            info = conn.adapters.types.get(oid)
            expected = "unknown" if info is None else info.regtype
            expected += "[]" if info is not None and oid != info.oid else ""
            assert _Literals(conn)(value)[1] == expected, value
            # and read back as what psycopg sends, even where nothing types it
            as_sent = conn.execute("SELECT %s", [value]).fetchone()
            assert conn.execute(as_text(conn, "SELECT %s", [value])).fetchone() == as_sent


def test_parameters_have_the_types_psycopg_would_send(pg_url: str):
    """Not the types the statement's context suggests: an integer column
    times a float stays a float, and a small and a huge integer both fit."""
    query = "SELECT n * %s, n + %s FROM (VALUES (2)) AS v(n)"
    with psycopg.connect(pg_url, autocommit=True, prepare_threshold=None) as conn:
        for factor, added in [(1.5, 1), (0.25, 2**40)]:
            text = as_text(conn, query, [factor, added])
            assert text.startswith("EXECUTE memgpt_")
            assert conn.execute(text).fetchone() == (2 * factor, 2 + added)
            assert conn.execute(query, [factor, added]).fetchone() == (2 * factor, 2 + added)


def test_a_value_psycopg_refuses_fails_where_it_was_given(store: PostgresStore):
    sam = new_agent(store)
    with pytest.raises(psycopg.DataError, match="NUL"):
        store.add_messages([said(sam, "kept out"), said(sam, "a \x00 byte")])
    with (
        psycopg.connect(store.url, autocommit=True) as conn,
        pytest.raises(psycopg.ProgrammingError, match="2 placeholders but 1 parameters"),
    ):
        as_text(conn, "SELECT %s::text, %s::text", ["one"])
    store.add_messages([said(sam, "after")])  # nothing was left half-done
    assert [m.content for m in store.messages_from(sam.id, 0)] == ["after"]


def test_a_held_write_that_fails_when_sent_fails_its_own_level_only(store: PostgresStore):
    sam = new_agent(store)
    first = said(sam, "first")
    store.add_messages([first])
    with store.transaction():
        store.add_messages([said(sam, "kept")])
        again = said(sam, "same id as the first")
        again.id = first.id
        # Held until the savepoint's end, where the server refuses it.
        with pytest.raises(psycopg.errors.UniqueViolation):
            store.add_messages([again])
        store.add_messages([said(sam, "also kept")])
    assert [m.content for m in store.messages_from(sam.id, 0)] == ["first", "kept", "also kept"]
    assert store.agent_stats(sam.id).message_count == 3
