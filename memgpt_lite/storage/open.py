"""Opening storage by where it is: a file path means SQLite, the default;
a `postgresql://` (or `postgres://`) URL means PostgreSQL.

This is the one place that knows which backend a location names; every other
module holds a `Storage`. A backend is imported only when it is opened, so
naming one costs nothing at start-up, and PostgreSQL's driver is needed only
by those who use it (`pip install "memgpt-lite[postgres]"`).
"""

from __future__ import annotations

import importlib.util
import os
from typing import TYPE_CHECKING

from memgpt_lite.errors import ConfigError
from memgpt_lite.settings.values import StorageSettings
from memgpt_lite.storage.location import is_postgres, scheme, sqlite_path

if TYPE_CHECKING:
    from memgpt_lite.storage.protocol import Storage

POSTGRES_DRIVER = ("psycopg", "psycopg_pool")
MISSING_DRIVER = 'PostgreSQL storage needs its driver: pip install "memgpt-lite[postgres]"'


def open_storage(
    location: str | os.PathLike[str],
    busy_timeout_seconds: float = 30.0,
    settings: StorageSettings | None = None,
) -> Storage:
    """The storage at `location`: a path (or a `sqlite:///path` URL) opens
    that SQLite file, created if missing; a `postgresql://user@host:5432/db`
    URL opens that PostgreSQL database. `busy_timeout_seconds`: how long a
    write waits for another connection's lock. `settings`: as the edge
    resolved them (how errors name folders, a new PostgreSQL database's
    choices); None: the defaults. Raises ConfigError for a URL no backend
    serves or a missing driver, StoreError when the database cannot be
    opened."""
    text = os.fspath(location)
    if is_postgres(text):
        return _open_postgres(text, busy_timeout_seconds, settings)
    path = sqlite_path(text)
    if path is None:
        if scheme(text) == "sqlite":
            raise ConfigError(f"{text!r}: a SQLite URL is sqlite:///path/to/file.db")
        # Only the scheme is named: the rest of a URL may hold a password.
        raise ConfigError(
            f"no storage backend serves {scheme(text)}:// URLs; give the path of a SQLite "
            "database file or a postgresql:// URL"
        )
    from memgpt_lite.storage.sqlite.store import Store  # only when opened: it loads sqlite

    return Store(path, busy_timeout_seconds=busy_timeout_seconds, settings=settings)


def _open_postgres(
    url: str, busy_timeout_seconds: float, settings: StorageSettings | None
) -> Storage:
    # Checked before the import, so that a missing driver is this one line
    # rather than an ImportError from inside the backend.
    if any(importlib.util.find_spec(name) is None for name in POSTGRES_DRIVER):
        raise ConfigError(MISSING_DRIVER)
    from memgpt_lite.storage.postgres.store import PostgresStore

    return PostgresStore(url, busy_timeout_seconds=busy_timeout_seconds, settings=settings)
