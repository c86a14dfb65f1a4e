"""The runs of Letta's asynchronous sends: the part of `Storage` that keeps
each run's state, so that any server process on the database answers a
client that polls it (server/letta/runs.py starts and finishes them)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from memgpt_lite.models import new_id, utcnow

RunStatus = Literal["created", "running", "completed", "failed", "cancelled"]


class Run(BaseModel):
    """One asynchronous send of a user's message to an agent, and how it ended."""

    id: str = Field(default_factory=lambda: new_id("run"))
    owner: str
    agent_id: str
    status: RunStatus = "created"
    stop_reason: str | None = None
    message_ids: list[str] = Field(default_factory=list)  # what its step stored
    error: str | None = None  # why it failed, in one line
    created_at: datetime = Field(default_factory=utcnow)
    completed_at: datetime | None = None


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
