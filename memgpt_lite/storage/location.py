"""Where a database is, as users write it: a file path (SQLite) or a URL
(`postgresql://user:secret@host:5432/db`, `sqlite:///path`).

Pure string work, no backend imported: `open_storage` dispatches on it, and
everything that shows a location (the CLI, error messages, logs) shows
`redacted(location)`, so a password in a URL never reaches the screen, a log
or a file. `describe` names a server database for one-line errors. Telling a
URL from a path (`scheme`, `is_url`, `is_postgres`) and `redacted` are the
settings' (settings/folders.py: a `db` in config.toml may be either, and the
command line shows it before any database opens); they are imported here for
the backends.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

# Also offered from here to the backends and open.py, which import them so.
from memgpt_lite.settings.folders import is_postgres as is_postgres
from memgpt_lite.settings.folders import is_url, redacted, scheme

SQLITE_PREFIX = "sqlite:///"


def sqlite_path(location: str | os.PathLike[str]) -> Path | None:
    """The SQLite file `location` names (a path, `~` expanded, or a
    `sqlite:///path` URL); None for any other URL or a bare `sqlite://`."""
    text = os.fspath(location)
    kind = scheme(text)
    if kind is None:
        return Path(text).expanduser()
    if kind == "sqlite" and text.lower().startswith(SQLITE_PREFIX):
        path = Path(text[len(SQLITE_PREFIX) :]).expanduser()
        return path if path.parts else None
    return None


def _query_value(query: str, name: str) -> str | None:
    for part in query.split("&"):
        key, sep, value = part.partition("=")
        if sep and unquote(key).strip().lower() == name:
            return unquote(value)
    return None


def describe(location: str | os.PathLike[str]) -> str:
    """`location` for an error message: `database "mem" on host
    db.example.com:5432` for a server URL, the path for a file. Never holds
    a password."""
    text = os.fspath(location)
    path = sqlite_path(text)
    if path is not None or not is_url(text):
        return os.fspath(path if path is not None else text)
    try:
        parts = urlsplit(redacted(text))
    except ValueError:  # a malformed URL (a bad IPv6 address): show it masked
        return redacted(text)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    user = unquote(userinfo.partition(":")[0]) if at else ""
    database = unquote(parts.path.lstrip("/")) or _query_value(parts.query, "dbname") or ""
    host = unquote(hostport) or _query_value(parts.query, "host") or ""
    # libpq's defaults: the database named like the user, the local socket.
    database = database or user
    named = f'database "{database}"' if database else "the default database"
    if not host:
        where = "on the local socket"
    elif host.startswith("/"):  # a folder: the server's Unix socket is in it
        where = f"on the socket in {host}"
    else:
        where = f"on host {host}"
    return f"{named} {where}"


def same_database(first: str | os.PathLike[str], second: str | os.PathLike[str]) -> bool:
    """Whether two locations surely name one database: the same SQLite file
    (however the path is written), or the same URL text."""
    first_path, second_path = sqlite_path(first), sqlite_path(second)
    if first_path is not None and second_path is not None:
        return first_path.resolve() == second_path.resolve()
    return os.fspath(first).rstrip("/") == os.fspath(second).rstrip("/")
