"""A new, empty database made in one go: the schema and rows that running
every migration leaves, replayed.

Running the migrations one by one on a new file costs about 40 ms of CPU
(hundreds of statements, most of them sqlite-utils reading the schema back),
on every database an app or a test creates. So the migrations run once per
process, in memory, and what they left is read back: each schema entry's own
statement, in the order SQLite keeps them (the order they were made in), and
the rows of each table (the migrations' record above all). A new file gets
those, inside the same transaction the migrations would have run in. The
migrations stay the only definition of the schema: nothing here names a
table.
"""

from __future__ import annotations

import functools
import sqlite3

from sqlite_utils import Database

from memgpt_lite.storage.sqlite.migrations import migrations

Statement = tuple[str, tuple[object, ...]]


def is_empty(db: Database) -> bool:
    return db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0


def create_schema(db: Database) -> None:
    """Give the empty database `db` what every migration would, inside the
    caller's transaction (foreign keys off, as the migrations run)."""
    for sql, params in migrated_statements():
        db.execute(sql, params)


@functools.cache
def migrated_statements() -> tuple[Statement, ...]:
    """The statements that make a database as every migration leaves it."""
    db = Database(memory=True)
    db.execute("PRAGMA foreign_keys = OFF")
    migrations.apply(db)
    kinds = dict(db.execute("SELECT name, type FROM pragma_table_list WHERE schema = 'main'"))
    # Shadow tables (a full-text index's storage) are made by their virtual
    # table's statement; sqlite_* tables by SQLite itself.
    entries = db.execute(
        "SELECT name, type, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
    )
    statements: list[Statement] = [
        (sql, ())
        for name, kind, sql in entries
        if kinds.get(name, kind) != "shadow" and not name.startswith("sqlite_")
    ]
    for name, kind in kinds.items():
        if kind == "table" and name not in ("sqlite_schema", "sqlite_temp_schema"):
            statements += _rows(db.conn, name)
    return tuple(statements)


def _rows(conn: sqlite3.Connection, table: str) -> list[Statement]:
    quoted = '"' + table.replace('"', '""') + '"'
    cursor = conn.execute(f"SELECT * FROM {quoted}")
    marks = ", ".join("?" * len(cursor.description))
    return [(f"INSERT INTO {quoted} VALUES ({marks})", tuple(row)) for row in cursor]
