"""Where state lives, as the layers below the edges see it: the names of our
files, how a one-line error names a folder, how a database location is told
from a file path (and a PostgreSQL URL from others), and how a location is
shown: `redacted`, with a URL's password as `***`, wherever one is shown
(the command line, error messages, logs). Nothing here reads the environment
(resolve.py does).
"""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from memgpt_lite.errors import ConfigError

DB_FILENAME = "memgpt_lite.db"
CONFIG_FILENAME = "config.toml"
CACHE_DIRNAME = "cache"
# A URL's scheme: letters first, then letters, digits, "+", "-" or ".", then
# "://". A Windows path ("C:\\x") has no "//" after its colon.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
POSTGRES_SCHEMES = ("postgresql", "postgres")
MASK = "***"
# Query parameters libpq reads a secret from (`?password=...`).
_SECRET_PARAMS = {"password", "sslpassword"}


def scheme(location: str | os.PathLike[str]) -> str | None:
    """The URL scheme of `location`, lower-cased; None for a path."""
    match = _SCHEME.match(os.fspath(location))
    return None if match is None else match.group(1).lower()


def is_url(text: str | os.PathLike[str]) -> bool:
    """Whether `text` is a URL (`scheme://...`) rather than a file path."""
    return scheme(text) is not None


def is_postgres(location: str | os.PathLike[str]) -> bool:
    return scheme(location) in POSTGRES_SCHEMES


def _redact_query(query: str) -> str:
    parts = []
    for part in query.split("&"):
        key, sep, _ = part.partition("=")
        secret = unquote(key).strip().lower() in _SECRET_PARAMS
        parts.append(f"{key}{sep}{MASK}" if secret and sep else part)
    return "&".join(parts)


def redacted(location: str | os.PathLike[str]) -> str:
    """`location` safe to show: a URL with its password (in the user part or
    as `password=` in the query) replaced by `***`; a path unchanged."""
    text = os.fspath(location)
    kind = scheme(text)
    if kind is None:
        return text
    rest = text[len(kind) + 3 :]
    # The authority ends at the first "/", "?" or "#" after the last "@" (a
    # password may hold an unescaped "/" or "@", so look for "@" first).
    head, at, tail = rest.rpartition("@")
    if at:
        end = re.search(r"[/?#]", tail)
        host, after = (tail[: end.start()], tail[end.start() :]) if end else (tail, "")
        user, colon, _ = head.partition(":")
        password = f":{MASK}" if colon else ""
        rest = f"{user}{password}@{host}{after}"
    path_and_query, hash_sign, fragment = rest.partition("#")
    before, question, query = path_and_query.partition("?")
    if question:
        path_and_query = f"{before}?{_redact_query(query)}"
    return f"{text[: len(kind) + 3]}{path_and_query}{hash_sign}{fragment}"


@dataclass(frozen=True)
class FolderNames:
    """How errors name a folder: with the environment variable that chose it
    (`$MEMGPT_LITE_HOME (/srv/agents)`), so the user knows what to change;
    any other folder by its path."""

    chosen_by: tuple[tuple[Path, str], ...] = ()  # (folder, the variable that chose it)

    def label(self, folder: Path) -> str:
        for chosen, variable in self.chosen_by:
            if folder == chosen:
                return f"${variable} ({folder})"
        return str(folder)

    def problem(self, folder: Path, exc: OSError) -> str:
        """Why `folder` cannot hold our files, in one line that names it (or the
        file in its way: the home folder, when it is a file)."""
        label = self.label(folder)
        if isinstance(exc, FileExistsError | NotADirectoryError):
            in_the_way = next((p for p in (folder, *folder.parents) if p.exists()), folder)
            return f"{self.label(in_the_way)} is a file, not a folder"
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return f"{label} is read-only"
        return f"cannot use the folder {label}: {exc.strerror or exc}"

    def ensure(self, folder: Path) -> None:
        """Create `folder` if needed; a ConfigError naming it if it cannot be."""
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(self.problem(folder, exc)) from None
