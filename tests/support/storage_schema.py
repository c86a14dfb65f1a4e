"""The schema a database holds, read from its own catalog, for comparing the
schema the migrations make with a snapshot (tests/storage/test_storage_schema.py).

    python tests/support/storage_schema.py --write

writes the snapshots (tests/data/storage/schema_*.json) from the migrations
of this checkout: only when a new migration is added, since a shipped one
never changes what it makes. The PostgreSQL snapshot needs a server:
$MEMGPT_LITE_TEST_PG, or one started with pgserver as the tests do.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

# Computed here, not taken from paths.py: the module also runs as a script.
DATA = Path(__file__).resolve().parents[1] / "data" / "storage"
SQLITE_SNAPSHOT = DATA / "schema_sqlite.json"
POSTGRES_SNAPSHOT = DATA / "schema_postgres.json"
# The vectors' column is pgvector's `vector` where the server has it (and
# MEMGPT_LITE_PG_VECTORS is not "off"), else bytea: either is the schema.
VECTOR_TYPE = "vector or bytea"

Schema = dict[str, Any]


def sqlite_schema(path: Path) -> Schema:
    """Every object of the SQLite database at `path` with the statement that
    made it, as `sqlite_master` keeps it (word for word), and the migrations
    applied. The table sqlite-utils records them in is its own, left out."""
    conn = sqlite3.connect(path)
    try:
        objects = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master "
            "WHERE tbl_name != '_sqlite_migrations' ORDER BY type, name"
        ).fetchall()
        applied = conn.execute("SELECT name FROM _sqlite_migrations ORDER BY name").fetchall()
    finally:
        conn.close()
    return {
        "objects": [list(row) for row in objects],
        "migrations": [row[0] for row in applied],
    }


def sqlite_rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """The rows of every table of the SQLite database at `path` (the times
    migrations were applied left out)."""
    conn = sqlite3.connect(path)
    try:
        tables = conn.execute(
            "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table' "
            "AND name NOT IN ('sqlite_schema', 'sqlite_temp_schema')"
        ).fetchall()
        rows = {}
        for (table,) in tables:
            columns = "name" if table == "_sqlite_migrations" else "*"
            rows[table] = sorted(conn.execute(f'SELECT {columns} FROM "{table}"').fetchall())
    finally:
        conn.close()
    return rows


_POSTGRES_QUERIES = {
    "columns": """
        SELECT table_name, column_name, ordinal_position,
            CASE WHEN table_name = 'vectors' AND column_name = 'vector'
                THEN %(vector)s ELSE udt_name END,
            is_nullable, column_default, is_identity, identity_generation
        FROM information_schema.columns WHERE table_schema = current_schema()
        ORDER BY table_name, ordinal_position
    """,
    "constraints": """
        SELECT conrelid::regclass::text, conname, contype, pg_get_constraintdef(oid)
        FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
        ORDER BY 1, 2
    """,
    "indexes": """
        SELECT tablename, indexname, indexdef FROM pg_indexes
        WHERE schemaname = current_schema() ORDER BY 1, 2
    """,
    "triggers": """
        SELECT tgrelid::regclass::text, tgname, pg_get_triggerdef(oid) FROM pg_trigger
        WHERE NOT tgisinternal ORDER BY 1, 2
    """,
    "functions": """
        SELECT p.proname, pg_get_functiondef(p.oid) FROM pg_proc p
        WHERE p.pronamespace = current_schema()::regnamespace AND NOT EXISTS (
            SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e'
        ) ORDER BY 1, 2
    """,
    "text_search": """
        SELECT c.cfgname, m.maptokentype, m.mapseqno, d.dictname, d.dictinitoption
        FROM pg_ts_config c JOIN pg_ts_config_map m ON m.mapcfg = c.oid
        JOIN pg_ts_dict d ON d.oid = m.mapdict
        WHERE c.cfgnamespace = current_schema()::regnamespace ORDER BY 1, 2, 3
    """,
    "migrations": "SELECT name FROM memgpt_lite_migrations ORDER BY id",
}


def postgres_schema(url: str) -> Schema:
    """The tables' columns, constraints, indexes, triggers, functions (those
    of extensions left out), the search configuration and the migrations
    applied, from the PostgreSQL database at `url`."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        schema = {}
        for name, query in _POSTGRES_QUERIES.items():
            params = {"vector": VECTOR_TYPE} if "%(vector)s" in query else None
            schema[name] = [list(row) for row in conn.execute(query, params).fetchall()]
        return schema


def dumps(schema: Schema) -> str:
    """JSON with one row per line, so a change reads as a one-line diff."""
    parts = []
    for name, rows in schema.items():
        lines = ",\n".join(f"    {json.dumps(row)}" for row in rows)
        parts.append(f"  {json.dumps(name)}: [\n{lines}\n  ]")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _write() -> None:
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for `support`
    from memgpt_lite.storage.postgres.store import PostgresStore
    from memgpt_lite.storage.sqlite.store import Store
    from support.postgres_server import TestServer

    DATA.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "schema.db"
        Store(path).close()
        SQLITE_SNAPSHOT.write_text(dumps(sqlite_schema(path)))
    server = TestServer()
    try:
        url = server.new_database()
        PostgresStore(url).close()
        POSTGRES_SNAPSHOT.write_text(dumps(postgres_schema(url)))
        server.drop(url)
    finally:
        server.stop()


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    _write()
