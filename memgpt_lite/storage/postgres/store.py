"""The PostgreSQL backend's `PostgresStore`: one implementation of `storage.protocol.Storage`.

psycopg 3 with a connection pool per process and database (connect.py).
What PostgreSQL says as SQLite does is the core's (storage/core/: agents,
blocks, reads of messages and passages, step locks, usage, keys, the
transaction rules); this package holds what only PostgreSQL says, one module
per part: what the core runs on (primitives.py: pooled connections, BEGIN
with its lock timeout, REPEATABLE READ snapshots, the server's errors, worded
in connect.py), its words for the core's statements (dialect.py), writes of
messages and passages that keep their tsvectors and the agents' counters,
with BM25 computed over tsvectors (messages.py, archival.py, fulltext.py),
vectors with pgvector and its nearest-vector search (vectors.py), and the
migrations (migrations.py), applied on open.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

import psycopg

from memgpt_lite.settings.values import PostgresOptions, StorageSettings
from memgpt_lite.storage.core.sealed_keys import KeySealer
from memgpt_lite.storage.core.store import CoreStore
from memgpt_lite.storage.core.window_cache import WindowCache
from memgpt_lite.storage.location import describe
from memgpt_lite.storage.postgres.archival import ArchivalStore
from memgpt_lite.storage.postgres.connect import connect, server_errors
from memgpt_lite.storage.postgres.messages import MessageStore
from memgpt_lite.storage.postgres.migrations import migrate
from memgpt_lite.storage.postgres.primitives import PostgresPrimitives
from memgpt_lite.storage.postgres.vectors import VectorStore

log = logging.getLogger(__name__)


class _Prepared(NamedTuple):
    """What opening a database found, kept for the process's next stores
    of it: an agent per store must not cost a connection and a migration
    check each."""

    read_only: bool
    search_language: str
    server_vectors: bool


_prepared: dict[str, _Prepared] = {}


class PostgresStore(
    MessageStore,
    ArchivalStore,
    VectorStore,
    PostgresPrimitives,
    CoreStore,
):
    """Agents, blocks, messages and passages in a PostgreSQL database. Safe
    to share between threads (see transactions.py); many processes and hosts
    may open the same database."""

    def __init__(
        self, url: str, busy_timeout_seconds: float = 30.0, settings: StorageSettings | None = None
    ) -> None:
        self.url = url
        self.key_sealer = KeySealer((settings or StorageSettings()).secret)
        self._init_transactions(busy_timeout_seconds)
        self.window_cache = WindowCache()  # each agent's window, kept between reads
        prepared = _prepared.get(url)
        if prepared is None:
            conn = connect(url)
            try:
                with server_errors(url):
                    chosen = (settings or StorageSettings()).postgres  # for a new database
                    prepared = _prepared[url] = self._prepare(conn, chosen)
            finally:
                conn.close()
        self.read_only, self.search_language, self.server_vectors = prepared

    def _prepare(self, conn: psycopg.Connection, chosen: PostgresOptions) -> _Prepared:
        """Read-only check and migrations, on a connection of its own (a bad
        server fails here, at once, in one line)."""
        where = describe(self.url)
        read_only = conn.execute("SHOW transaction_read_only").fetchone()[0] == "on"
        if read_only:
            from memgpt_lite.storage.postgres.migrations import applied, check_schema

            if check_schema(applied(conn), where):
                from memgpt_lite.errors import ReadOnlyError

                raise ReadOnlyError(
                    f"{where} is read-only and needs upgrading; open it once where it can be "
                    "written"
                )
        created = False
        if not read_only:
            created = "m002_vectors" in migrate(conn, where, chosen)
        language = conn.execute(
            "SELECT value FROM settings WHERE key = 'search_language'"
        ).fetchone()[0]
        vector_type = conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'vectors'::regclass AND attname = 'vector'"
        ).fetchone()[0]
        if vector_type == "bytea":
            # Told once, by the process that makes the vectors table: not by
            # every command that opens the database after.
            (log.warning if created else log.debug)(
                "%s has no pgvector: vectors are searched in this process, as with SQLite",
                where,
            )
        return _Prepared(read_only, language, vector_type != "bytea")
