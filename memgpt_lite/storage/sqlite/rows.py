"""How the SQLite store writes values into rows and reads them back, and
checks shared by its parts."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any, TypeVar

from pydantic import BaseModel
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


M = TypeVar("M", bound=BaseModel)
_set = object.__setattr__


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """An instance of `cls` holding `values` (every field, already of its
    type), without validation: for rows the store validated on the way in,
    where validating them again on every read (CleanStr, the arguments
    regex, parsing times) was most of the cost of loading a long window.
    What `model_construct` does for a model with no aliases, defaults to
    fill, extras or private attributes, at a fifth of its cost; a test
    checks the result equals the validated model."""
    instance = cls.__new__(cls)
    _set(instance, "__dict__", values)
    _set(instance, "__pydantic_fields_set__", set(values))
    _set(instance, "__pydantic_extra__", None)
    _set(instance, "__pydantic_private__", None)
    return instance


def require_agents(db: Database, agent_ids: Iterable[str]) -> None:
    """NotFoundError, in one line, for an item of an agent that does not exist
    (deleted meanwhile by another process, say), not a foreign-key error."""
    for agent_id in set(agent_ids):
        if not db.execute("SELECT 1 FROM agents WHERE id = ?", [agent_id]).fetchone():
            raise NotFoundError(f"no agent with id {agent_id!r}")
