"""Helpers for tests that run once per storage backend (the `db_location`
fixture in conftest.py): a location is a SQLite file path or a PostgreSQL URL."""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Sequence
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
    per owner (SQLite's m018, PostgreSQL's m012), migration record and all:
    for tests that rewind a database to an older version."""
    if is_postgres(location):
        import psycopg

        with psycopg.connect(os.fspath(location), autocommit=True) as conn:
            conn.execute(
                "ALTER TABLE agents DROP COLUMN display_name;"
                "ALTER TABLE agents DROP CONSTRAINT agents_owner_name_key;"
                "ALTER TABLE agents ADD CONSTRAINT agents_name_key UNIQUE (name);"
                "DROP INDEX agents_name;"
                "CREATE INDEX agents_owner ON agents(owner, name);"
                "DELETE FROM memgpt_lite_migrations WHERE name = 'm012_agent_names_per_owner'"
            )
        from memgpt_lite.storage.postgres import store as store_module
        from memgpt_lite.storage.postgres.connect import close_pool

        store_module._prepared.pop(os.fspath(location), None)  # opened here: open anew
        close_pool(os.fspath(location))
        return
    conn = sqlite3.connect(location)  # foreign keys off: the old table is dropped
    try:
        with conn:
            made = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'agents'").fetchone()[0]
            made = made.replace("name TEXT NOT NULL,", "name TEXT NOT NULL UNIQUE,", 1)
            made = made.replace(
                ", display_name TEXT, UNIQUE (owner, name), UNIQUE (owner, display_name)", ""
            )
            triggers = conn.execute(
                "SELECT sql FROM sqlite_master WHERE tbl_name = 'agents' AND type = 'trigger'"
            ).fetchall()
            columns = [row[1] for row in conn.execute("PRAGMA table_info(agents)")]
            kept = ", ".join(c for c in columns if c != "display_name")
            conn.execute(f"CREATE TEMP TABLE agents_before AS SELECT {kept} FROM agents")
            conn.execute("DROP TABLE agents")
            conn.execute(made)
            conn.execute("INSERT INTO agents SELECT * FROM temp.agents_before")
            conn.execute("DROP TABLE temp.agents_before")
            for (trigger,) in triggers:
                conn.execute(trigger)
            conn.execute("CREATE INDEX agents_owner ON agents(owner, name)")
            conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm018_agent_names_per_owner'")
    finally:
        conn.close()
