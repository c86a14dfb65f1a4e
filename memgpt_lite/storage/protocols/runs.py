"""Letta's runs: the part of `Storage` that keeps each send's run, so that
any server process on the database answers a client that polls one, follows
a background run's stream or cancels one (server/letta/runs.py and
run_life.py start, end and cancel them)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from memgpt_lite.models import new_id, utcnow

RunStatus = Literal["created", "running", "completed", "failed", "cancelled"]
# The statuses of a run whose step may still run.
OPEN_STATUSES: tuple[RunStatus, ...] = ("created", "running")


class Run(BaseModel):
    """One send of a user's message to an agent, and how it ended."""

    id: str = Field(default_factory=lambda: new_id("run"))
    owner: str
    agent_id: str
    status: RunStatus = "created"
    stop_reason: str | None = None
    message_ids: list[str] = Field(default_factory=list)  # what its step stored
    error: str | None = None  # why it failed, in one line
    created_at: datetime = Field(default_factory=utcnow)
    completed_at: datetime | None = None  # when its step ended (or its server was found gone)
    background: bool = False  # a streamed send whose chunks are kept
    renewed_at: datetime | None = None  # last said to be running by its server
    conversation_id: str | None = None  # the agent's conversation it ran in (None: its default)

    @property
    def open(self) -> bool:
        """Whether its step may still run."""
        return self.status in OPEN_STATUSES


# One chunk of a background run's stream: its seq_id and its JSON.
RunChunk = tuple[int, str]


@runtime_checkable
class RunStorage(Protocol):
    def save_run(self, run: Run) -> None:
        """Store the run, or its new state if stored already. NotFoundError
        for an unknown agent."""
        ...

    def get_run(self, run_id: str, owner: str) -> Run:
        """The owner's run; NotFoundError if there is none of that id (or it
        is another owner's, word for word)."""
        ...

    def list_runs(self, owner: str, agent_id: str | None = None, limit: int = 100) -> list[Run]:
        """The owner's newest runs (of one agent, if given), newest first."""
        ...

    def end_run(self, run: Run) -> Run:
        """Store how the run's step ended: its `message_ids` always; its
        status, stop reason, error and `completed_at` only if it is still
        open (a run cancelled meanwhile stays cancelled). Returns the run as
        stored; NotFoundError if it is gone."""
        ...

    def cancel_run(self, run_id: str, owner: str) -> Run:
        """Make the owner's open run `cancelled` (stop reason "cancelled";
        its step, told, stops and ends it); a run that ended already is left
        as it is. Returns the run as stored; NotFoundError as `get_run`."""
        ...

    def delete_run(self, run_id: str, owner: str) -> None:
        """Delete the owner's run and its chunks; NotFoundError as `get_run`."""
        ...

    def renew_runs(self, run_ids: Sequence[str]) -> None:
        """Note that these runs' steps still run (`renewed_at`: now)."""
        ...

    def end_abandoned_runs(self, renewed_before: datetime, error: str) -> int:
        """End every open run last renewed before `renewed_before`: its
        server is gone. `failed` with `error` (a cancelled one stays
        cancelled), `completed_at` now. Returns how many."""
        ...

    def add_run_chunks(self, run_id: str, chunks: Sequence[RunChunk]) -> None:
        """Keep these chunks of the run's stream."""
        ...

    def run_chunks(self, run_id: str, after: int, limit: int) -> list[RunChunk]:
        """The run's chunks after seq_id `after`, in order, at most `limit`."""
        ...

    def delete_run_chunks(self, kept_before: datetime) -> None:
        """Delete the chunks kept before `kept_before`, whatever their run."""
        ...
