"""Helpers for tests that run once per storage backend (the `db_location`
fixture in conftest.py): a location is a SQLite file path or a PostgreSQL URL."""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memgpt_lite.storage.open import open_storage
from memgpt_lite.storage.protocol import Storage


def is_postgres(location: str | Path) -> bool:
    """True when `location` names a PostgreSQL database rather than a SQLite file."""
    return os.fspath(location).startswith(("postgresql://", "postgres://"))


def open_db(location: str | Path) -> Storage:
    """Another connection to the database at `location`, whichever backend."""
    return open_storage(location)


def execute_sql(location: str | Path, sql: str, params: Sequence[Any] = ()) -> None:
    """Run one statement on the database at `location`, bypassing the store,
    as another program would; `?` placeholders. For the few tests that must
    put the database in a state the store never makes (a lease run out)."""
    if is_postgres(location):
        import psycopg

        with psycopg.connect(os.fspath(location), autocommit=True) as conn:
            conn.execute(sql.replace("?", "%s"), list(params))
        return
    conn = sqlite3.connect(location)
    try:
        with conn:
            conn.execute(sql, list(params))
    finally:
        conn.close()


# What a process prints once per PostgreSQL database without pgvector (the
# tests' server turns pgvector off where its HNSW index cannot run): a notice
# about the machine, not part of any command's output.
_NO_PGVECTOR = re.compile(r"\bhas no pgvector: vectors are searched in this process\b")


def is_notice(line: str) -> bool:
    """True for a line of stderr that tells of the database, not of the command."""
    return _NO_PGVECTOR.search(line) is not None


def without_notices(stderr: str) -> str:
    """`stderr` without the lines `is_notice` names."""
    return "".join(line for line in stderr.splitlines(keepends=True) if not is_notice(line))


def undo_agent_names_per_owner(location: str | Path) -> None:
    """Put the agents table back as it was before agent names became unique
    per owner (SQLite's m018, PostgreSQL's m012), migration records and all,
    with the later migration that changed what it made (SQLite's m025,
    PostgreSQL's m019: display names may repeat) undone too: for tests that
    rewind a database to an older version."""
    if is_postgres(location):
        _alter_postgres(
            location,
            "ALTER TABLE agents DROP COLUMN display_name;"
            "ALTER TABLE agents DROP CONSTRAINT agents_owner_name_key;"
            "ALTER TABLE agents ADD CONSTRAINT agents_name_key UNIQUE (name);"
            "DROP INDEX agents_name;"
            "CREATE INDEX agents_owner ON agents(owner, name);"
            "DELETE FROM memgpt_lite_migrations WHERE name IN "
            "('m012_agent_names_per_owner', 'm019_display_names_repeat')",
        )
        return

    def before(made: str) -> str:
        made = made.replace("name TEXT NOT NULL,", "name TEXT NOT NULL UNIQUE,", 1)
        return made.replace(", display_name TEXT, UNIQUE (owner, name)", "")

    conn = sqlite3.connect(location)  # foreign keys off: the old table is dropped
    try:
        with conn:
            _remake_sqlite_agents(conn, before, without="display_name")
            conn.execute("DROP INDEX agents_name")
            conn.execute("CREATE INDEX agents_owner ON agents(owner, name)")
            conn.execute(
                "DELETE FROM _sqlite_migrations WHERE name IN "
                "('m018_agent_names_per_owner', 'm025_display_names_repeat')"
            )
    finally:
        conn.close()


def undo_display_names_repeat(location: str | Path) -> None:
    """Put back the constraint that made display names unique within their
    owner (undoing SQLite's m025, PostgreSQL's m019), migration record and all."""
    if is_postgres(location):
        _alter_postgres(
            location,
            "ALTER TABLE agents ADD CONSTRAINT agents_owner_display_name_key "
            "UNIQUE (owner, display_name);"
            "DELETE FROM memgpt_lite_migrations WHERE name = 'm019_display_names_repeat'",
        )
        return

    def before(made: str) -> str:
        return made[:-1] + ", UNIQUE (owner, display_name))"

    conn = sqlite3.connect(location)  # foreign keys off: the old table is dropped
    try:
        with conn:
            _remake_sqlite_agents(conn, before)
            conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm025_display_names_repeat'")
    finally:
        conn.close()


def _alter_postgres(location: str | Path, script: str) -> None:
    """Run `script` on the PostgreSQL database at `location`, then forget
    what this process prepared for it (so it is opened anew)."""
    import psycopg

    from memgpt_lite.storage.postgres import store as store_module
    from memgpt_lite.storage.postgres.connect import close_pool

    with psycopg.connect(os.fspath(location), autocommit=True) as conn:
        conn.execute(script)
    store_module._prepared.pop(os.fspath(location), None)  # opened here: open anew
    close_pool(os.fspath(location))


def _remake_sqlite_agents(
    conn: sqlite3.Connection, statement: Callable[[str], str], without: str | None = None
) -> None:
    """Make SQLite's agents table again from `statement(its statement)`,
    its rows (without the column `without`) and triggers kept."""
    made = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'agents'").fetchone()[0]
    triggers = conn.execute(
        "SELECT sql FROM sqlite_master WHERE tbl_name = 'agents' AND type = 'trigger'"
    ).fetchall()
    indexes = conn.execute(
        "SELECT sql FROM sqlite_master WHERE tbl_name = 'agents' AND type = 'index' "
        "AND sql IS NOT NULL"
    ).fetchall()
    columns = [row[1] for row in conn.execute("PRAGMA table_info(agents)")]
    kept = ", ".join(c for c in columns if c != without)
    conn.execute(f"CREATE TEMP TABLE agents_before AS SELECT {kept} FROM agents")
    conn.execute("DROP TABLE agents")
    conn.execute(statement(made))
    conn.execute("INSERT INTO agents SELECT * FROM temp.agents_before")
    conn.execute("DROP TABLE temp.agents_before")
    for (trigger_or_index,) in triggers + indexes:
        conn.execute(trigger_or_index)
