"""Opening the database file, and what SQLite says about the file itself.

sqlite3 raises the same exception classes for a read-only file, a full disk, a
lock held too long, a file it cannot open, an I/O error or a file that is not
a database as for a mistake in our SQL. `file_problem` picks out the former by
their result codes and words them for people; an SQL bug keeps its traceback.

A database that may only be read still serves every read: SQLite opens a file
without write permission read-only by itself, and a WAL database in a folder
where its `-wal` and `-shm` files cannot be created is opened as immutable
(nothing else can be writing it then, or those files would exist).

Errors name a folder as the `FolderNames` the store was opened with say (the
home folder with the variable that chose it): the edge that resolved the
settings passes them, so nothing here reads the environment.
"""

from __future__ import annotations

import functools
import os
import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path

from sqlite_utils import Database, Migrations

from memgpt_lite.errors import BusyError, ConfigError, ReadOnlyError, StoreError
from memgpt_lite.settings.folders import FolderNames
from memgpt_lite.storage.core.errors import NOTHING_CHANGED, worded
from memgpt_lite.storage.core.schema import refuse_newer, schema_number

PLAIN_NAMES = FolderNames()  # every folder by its path


def file_problem(
    path: Path, exc: BaseException, names: FolderNames = PLAIN_NAMES
) -> StoreError | None:
    """A one-line StoreError for an SQLite error about the file at `path`
    (read-only, full, busy, cannot open, I/O, not a database); None for any
    other error, an SQL bug above all, which must keep its traceback."""
    code = getattr(exc, "sqlite_errorcode", None)
    if not isinstance(exc, sqlite3.Error) or code is None:
        return None
    primary = code & 0xFF
    if primary == sqlite3.SQLITE_READONLY:
        return ReadOnlyError(f"{read_only_reason(path, names)}; {NOTHING_CHANGED}")
    if primary == sqlite3.SQLITE_FULL:
        return StoreError(f"the disk holding {path} is full; {NOTHING_CHANGED}")
    if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return BusyError(
            f"the database {path} is busy: another process kept it locked too long; "
            f"{NOTHING_CHANGED}, try again"
        )
    if primary == sqlite3.SQLITE_CANTOPEN:
        return StoreError(f"cannot open the database {path}: {_cannot_open_reason(path, names)}")
    if primary == sqlite3.SQLITE_IOERR:
        return StoreError(
            f"the disk holding {path} failed to read or write ({exc}); {NOTHING_CHANGED}"
        )
    if primary in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT):
        return StoreError(f"cannot open {path} as a memgpt_lite database: {exc}")
    return None


def file_errors(path: Path, names: FolderNames = PLAIN_NAMES) -> AbstractContextManager[None]:
    """Raise SQLite's errors about the file at `path` as `file_problem` words
    them; let every other error through as it is."""
    return worded((sqlite3.Error,), functools.partial(file_problem, path, names=names))


def read_only_reason(path: Path, names: FolderNames = PLAIN_NAMES) -> str:
    if path.exists() and not os.access(path.parent, os.W_OK):
        return f"the database {path} is read-only (its folder {names.label(path.parent)} is)"
    return f"the database {path} is read-only"


def _cannot_open_reason(path: Path, names: FolderNames) -> str:
    if not path.exists() and not os.access(path.parent, os.W_OK):
        return f"{names.label(path.parent)} is read-only, so it cannot be created there"
    if path.is_dir():
        return "it is a folder"
    return "the file or its folder cannot be read"


def connect(
    path: Path, busy_timeout_seconds: float, names: FolderNames = PLAIN_NAMES
) -> tuple[sqlite3.Connection, bool]:
    """A connection to the database at `path` (created if missing), and
    whether this process may only read it. Raises a one-line StoreError."""
    try:
        names.ensure(path.parent)
    except ConfigError as exc:
        raise StoreError(f"cannot open the database {path}: {exc}") from None
    conn = None
    try:
        # Shared between threads: the store's lock lets one use it at a time.
        conn = sqlite3.connect(path, timeout=busy_timeout_seconds, check_same_thread=False)
        # The first read opens the file (and a WAL database's -shm).
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        if conn is not None:
            conn.close()
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_READONLY_DIRECTORY:
            return _immutable(path, busy_timeout_seconds, names), True
        with file_errors(path, names):
            raise
    return conn, not os.access(path, os.W_OK)


def _immutable(path: Path, busy_timeout_seconds: float, names: FolderNames) -> sqlite3.Connection:
    """A WAL database whose -wal and -shm cannot be created (a read-only
    folder): no process has it open, so its file holds every commit and
    nothing can change it while we read. A -wal left behind (a writer that
    crashed) may hold commits that reading the file alone would miss."""
    wal = path.with_name(path.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise ReadOnlyError(
            f"cannot read {path}: {names.label(path.parent)} is read-only and {wal.name} holds "
            "changes not yet in the database; open it once where it can be written"
        )
    uri = path.resolve().as_uri() + "?mode=ro&immutable=1"
    return sqlite3.connect(uri, uri=True, timeout=busy_timeout_seconds, check_same_thread=False)


def check_schema(
    db: Database,
    migrations: Migrations,
    path: Path,
    read_only: bool,
    names: FolderNames = PLAIN_NAMES,
) -> bool:
    """Whether migrations are pending. Refuses a database written by a newer
    memgpt_lite (it has migrations this version does not know), and one that
    needs migrating but may only be read."""
    applied = [m.name for m in migrations.applied(db)]
    # Every migration is pending on an empty database: the names this version knows.
    known = [m.name for m in migrations.pending(Database(memory=True))]
    refuse_newer(applied, known, str(path))
    pending = [m.name for m in migrations.pending(db)]
    if pending and read_only:
        raise ReadOnlyError(
            f"{read_only_reason(path, names)} and needs upgrading from schema "
            f"{schema_number(applied)} to {schema_number(known)}; open it once where "
            "it can be written"
        )
    return bool(pending)
