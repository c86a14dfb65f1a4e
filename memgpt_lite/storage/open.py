"""Opening storage by where it is: a file path means SQLite, the default.

A URL chooses another backend by its scheme: `postgresql://` (or
`postgres://`) opens `storage/postgres/`. The backend is imported only when it
is opened, so naming one costs nothing at start-up.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from memgpt_lite.errors import ConfigError

if TYPE_CHECKING:
    from memgpt_lite.storage.protocol import Storage

# A URL's scheme: letters first, then letters, digits, "+", "-" or ".", then
# "://". A Windows path ("C:\\x") has no "//" after its colon.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def open_storage(location: str | os.PathLike[str], busy_timeout_seconds: float = 30.0) -> Storage:
    """The storage at `location`: a path (or a `sqlite:///path` URL) opens
    that SQLite file, created if missing. `busy_timeout_seconds`: how long a
    write waits for another connection's lock. Raises ConfigError for a URL
    no backend serves, StoreError when the database cannot be opened."""
    text = os.fspath(location)
    scheme = _SCHEME.match(text)
    if scheme is None:
        path = Path(text)
    elif scheme.group(1).lower() in ("postgresql", "postgres"):
        from memgpt_lite.storage.postgres.store import PostgresStore  # psycopg: only when opened

        return PostgresStore(text, busy_timeout_seconds=busy_timeout_seconds)
    elif scheme.group(1).lower() == "sqlite":
        path = Path(text[len("sqlite:///") :]) if text.startswith("sqlite:///") else Path("")
        if not path.parts:
            raise ConfigError(f"{text!r}: a SQLite URL is sqlite:///path/to/file.db")
    else:
        # Only the scheme is named: the rest of a URL may hold a password.
        raise ConfigError(
            f"no storage backend serves {scheme.group(1)}:// URLs; "
            "give the path of a SQLite database file"
        )
    from memgpt_lite.storage.sqlite.store import Store  # only when opened: it loads sqlite

    return Store(path, busy_timeout_seconds=busy_timeout_seconds)
