"""The SQLite backend's `Store`: one implementation of `storage.protocol.Storage`.

SQLite through sqlite-utils, in WAL mode so readers never block the writer.
What SQLite says as PostgreSQL does is the core's (storage/core/: agents,
blocks, reads of messages and passages, step locks, usage, keys, the
transaction rules); this package holds what only SQLite says, one module per
part: what the core runs on (primitives.py: the connection, BEGIN IMMEDIATE,
SQLite's errors about the file, worded in connect.py), its words for the
core's statements (dialect.py), writes of messages and passages that its
triggers follow, with FTS5 ranking (messages.py, archival.py, fulltext.py,
period_depth.py), vectors as float32 blobs (vectors.py), the window kept in
memory (window_cache.py), a second connection that runs one part of a
ranking beside the first (side_reader.py), and the migrations (migrations.py).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlite_utils import Database

from memgpt_lite.settings.values import StorageSettings
from memgpt_lite.storage.core.sealed_keys import KeySealer
from memgpt_lite.storage.core.store import CoreStore
from memgpt_lite.storage.core.window_cache import WindowCache
from memgpt_lite.storage.sqlite.archival import ArchivalStore
from memgpt_lite.storage.sqlite.connect import check_schema, connect, file_errors
from memgpt_lite.storage.sqlite.messages import MessageStore
from memgpt_lite.storage.sqlite.migrations import migrations
from memgpt_lite.storage.sqlite.new_database import create_schema, is_empty
from memgpt_lite.storage.sqlite.primitives import SQLitePrimitives
from memgpt_lite.storage.sqlite.side_reader import SideReader
from memgpt_lite.storage.sqlite.vectors import BlobVectors

# Up to 64 MiB of pages cached per connection (the store's and its side
# reader's), not SQLite's 2 MB: a search of a large archive re-reads the same
# index pages, and fetching them from the OS again costs 10% of it at 1M
# passages.
CACHE_SIZE = "PRAGMA cache_size = -65536"


class Store(MessageStore, ArchivalStore, BlobVectors, SQLitePrimitives, CoreStore):
    """The database of agents, blocks, messages and passages, in one SQLite
    file. Safe to share between threads (see core/transactions.py)."""

    def __init__(
        self,
        path: str | Path,
        busy_timeout_seconds: float = 30.0,
        settings: StorageSettings | None = None,
    ) -> None:
        self.path = Path(path).expanduser()
        # How errors name a folder (the edge's settings; default: by its path).
        self.folder_names = (settings or StorageSettings()).folder_names
        self.key_sealer = KeySealer((settings or StorageSettings()).secret)
        self._init_transactions(busy_timeout_seconds)
        self.window_cache = WindowCache()
        conn, self.read_only = connect(self.path, busy_timeout_seconds, self.folder_names)
        self.db = Database(conn)
        self.side_reader = SideReader(self._side_connection)
        try:
            self._prepare()
        except BaseException:
            conn.close()
            raise

    def _prepare(self) -> None:
        """Settings, WAL mode and migrations; without a write when none is due,
        so that a database this process may only read serves its reads."""
        with file_errors(self.path, self.folder_names):
            self.db.execute("PRAGMA foreign_keys = ON")
            # NORMAL is durable across application crashes in WAL mode; only a
            # power cut can lose the last commits, never corrupt the file.
            self.db.execute("PRAGMA synchronous = NORMAL")
            self.db.execute(CACHE_SIZE)
            if self.read_only:
                check_schema(self.db, migrations, self.path, True, self.folder_names)
                return
            if self.db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                self.db.enable_wal()
            if check_schema(self.db, migrations, self.path, False, self.folder_names):
                # Foreign keys off while migrating (a no-op inside a transaction):
                # a migration that makes a table again (SQLite's way to change a
                # constraint) drops the old one, which must not fire the ON DELETE
                # of the tables that refer to it.
                self.db.execute("PRAGMA foreign_keys = OFF")
                try:
                    with self.transaction():
                        # A new file: every migration at once (new_database.py).
                        migrate = create_schema if is_empty(self.db) else migrations.apply
                        migrate(self.db)
                finally:
                    self.db.execute("PRAGMA foreign_keys = ON")

    def _side_connection(self) -> sqlite3.Connection:
        conn = connect(self.path, self.busy_timeout_seconds, self.folder_names)[0]
        conn.execute(CACHE_SIZE)
        return conn

    def _disconnect(self) -> None:
        self.side_reader.close()
        self.db.close()
