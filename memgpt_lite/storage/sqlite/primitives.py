"""What the core runs on in SQLite (a part of `Store`): statements on the
store's connection, and the transaction primitives (the rules are
core/transactions.py's).

The store's one connection is shared by threads under the core's lock.
Every write runs in a `BEGIN IMMEDIATE` transaction: a second process waits
for the lock (up to `busy_timeout_seconds`) instead of failing half-way, and
a crash or Ctrl-C mid-transaction rolls back to the last committed state. A
snapshot is a deferred `BEGIN`: in WAL mode its reads see one state while
others write. SQLite counts the rows a connection changed, so a snapshot's
commit renews the step-lock leases only if something inside changed a row.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from memgpt_lite.errors import ReadOnlyError, StoreError
from memgpt_lite.settings.folders import FolderNames
from memgpt_lite.storage.core.errors import NOTHING_CHANGED
from memgpt_lite.storage.core.sql import Cursor
from memgpt_lite.storage.core.transactions import Level, Transactions
from memgpt_lite.storage.sqlite.connect import file_problem, read_only_reason
from memgpt_lite.storage.sqlite.dialect import SQLITE


class SQLitePrimitives(Transactions):
    """Mixed into `Store`, which provides `db`, `path` and `folder_names`."""

    db: Database
    path: Path
    folder_names: FolderNames  # how errors name a folder
    driver_errors = (sqlite3.Error,)
    dialect = SQLITE

    def _execute(self, statement: str, params: Sequence[Any] = ()) -> Cursor:
        return self.db.conn.execute(statement, params)

    def store_problem(self, exc: BaseException) -> StoreError | None:
        return file_problem(self.path, exc, self.folder_names)

    def _begin(self, write: bool) -> None:
        self.db.conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")

    def _execute_control(self, statement: str) -> None:
        self.db.conn.execute(statement)

    def _database_in_transaction(self) -> bool:
        return self.db.conn.in_transaction

    def _read_only_error(self) -> ReadOnlyError:
        return ReadOnlyError(f"{read_only_reason(self.path, self.folder_names)}; {NOTHING_CHANGED}")

    def _set_busy_timeout(self, seconds: float) -> None:
        self.db.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")

    def _changes(self) -> int:
        return self.db.conn.total_changes

    def _wrote_inside(self, level: Level) -> bool:
        return self.db.conn.total_changes != level.changes
