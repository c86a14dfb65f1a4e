"""Where state lives, as the layers below the edges see it: the names of our
files, how a one-line error names a folder, and how a database location is
told from a file path. Nothing here reads the environment (resolve.py does).
"""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass
from pathlib import Path

from memgpt_lite.errors import ConfigError

DB_FILENAME = "memgpt_lite.db"
CONFIG_FILENAME = "config.toml"
CACHE_DIRNAME = "cache"
# A URL's scheme: letters first, then letters, digits, "+", "-" or ".", then
# "://". A Windows path ("C:\\x") has no "//" after its colon.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def scheme(location: str | os.PathLike[str]) -> str | None:
    """The URL scheme of `location`, lower-cased; None for a path."""
    match = _SCHEME.match(os.fspath(location))
    return None if match is None else match.group(1).lower()


def is_url(text: str | os.PathLike[str]) -> bool:
    """Whether `text` is a URL (`scheme://...`) rather than a file path."""
    return scheme(text) is not None


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
