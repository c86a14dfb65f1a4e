"""Where state lives: `$MEMGPT_LITE_HOME`, or `~/.memgpt_lite`, holds the database."""

from __future__ import annotations

import os
from pathlib import Path

DB_FILENAME = "memgpt_lite.db"


def home_dir() -> Path:
    """The directory for memgpt_lite's files: `$MEMGPT_LITE_HOME` or `~/.memgpt_lite`."""
    configured = os.environ.get("MEMGPT_LITE_HOME")
    return Path(configured).expanduser() if configured else Path.home() / ".memgpt_lite"


def default_db_path() -> Path:
    return home_dir() / DB_FILENAME
