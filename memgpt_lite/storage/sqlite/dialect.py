"""SQLite's words for what the core's statements say alike (core/sql.py).

Times are ISO 8601 text in UTC, so that they compare correctly as text;
lists are JSON text; a list of values is `IN (?, ...)` in chunks under
SQLite's parameter limit. No clause locks the rows a write reads: SQLite has
one writer at a time, and every write begins IMMEDIATE.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from memgpt_lite.storage.core.sql import Dialect

IN_LIST_CHUNK = 500  # values per `IN (...)`: well under SQLite's parameter limit


def stored_time(value: datetime) -> str:
    """A time as the database stores it: ISO 8601 in UTC, so that times
    compare correctly as text."""
    return value.astimezone(UTC).isoformat()


class SQLiteDialect(Dialect):
    unique_violation = (sqlite3.IntegrityError,)
    # A subquery's order is the order json_group_array sees its rows in.
    block_ids = (
        "(SELECT json_group_array(block_id) FROM (SELECT block_id FROM agent_blocks "
        "WHERE agent_id = agents.id ORDER BY position))"
    )

    def is_conflict(self, exc: BaseException) -> bool:
        # IntegrityError is also a NOT NULL or foreign-key failure: a bug here.
        name = getattr(exc, "sqlite_errorname", "")
        return name in ("SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY")

    def time(self, value: datetime) -> str:
        return stored_time(value)

    def block_id_list(self, stored: Any) -> list[str]:
        return json.loads(stored)

    def among(self, column: str, values: Sequence[Any]) -> list[tuple[str, list[Any]]]:
        chunks = [list(values[i : i + IN_LIST_CHUNK]) for i in range(0, len(values), IN_LIST_CHUNK)]
        return [(f"{column} IN ({','.join('?' * len(chunk))})", chunk) for chunk in chunks]

    def any_tag(self, tags: Sequence[str]) -> tuple[str, list[Any]]:
        marks = ",".join("?" * len(tags))
        return f"EXISTS (SELECT 1 FROM json_each(p.tags) WHERE value IN ({marks}))", list(tags)


SQLITE = SQLiteDialect()
