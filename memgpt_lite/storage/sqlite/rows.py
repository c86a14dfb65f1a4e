"""How the SQLite store writes values into rows and reads them back, and
checks shared by its parts."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, date, datetime, timedelta

from sqlite_utils import Database

from memgpt_lite.errors import NotFoundError


def stored_time(value: datetime) -> str:
    """A time as the database stores it: ISO 8601 in UTC, so that times
    compare correctly as text (`day_bounds` relies on it)."""
    return value.astimezone(UTC).isoformat()


def day_bounds(start: date | None, end: date | None) -> tuple[str | None, str | None]:
    """ISO bounds for `created_at` covering whole UTC days, `end` inclusive."""
    low = datetime.combine(start, datetime.min.time(), UTC).isoformat() if start else None
    high = None
    if end:
        high = datetime.combine(end + timedelta(days=1), datetime.min.time(), UTC).isoformat()
    return low, high


def seq_chunks(seqs: Sequence[int]) -> Iterator[tuple[list[int], str]]:
    """`seqs` in chunks that stay under SQLite's parameter limit, each with its
    `?,?,...` placeholders for an `IN (...)` list."""
    for i in range(0, len(seqs), 500):
        chunk = list(seqs[i : i + 500])
        yield chunk, ",".join("?" * len(chunk))


def stored_datetime(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def require_agents(db: Database, agent_ids: Iterable[str]) -> None:
    """NotFoundError, in one line, for an item of an agent that does not exist
    (deleted meanwhile by another process, say), not a foreign-key error."""
    for agent_id in set(agent_ids):
        if not db.execute("SELECT 1 FROM agents WHERE id = ?", [agent_id]).fetchone():
            raise NotFoundError(f"no agent with id {agent_id!r}")
