"""The runs of Letta's asynchronous sends (see `RunStorage`), for every backend."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memgpt_lite.errors import NotFoundError
from memgpt_lite.storage.core.errors import unknown_agent
from memgpt_lite.storage.core.transactions import Transactions, guarded
from memgpt_lite.storage.protocols.runs import Run

_COLUMNS = (
    "id",
    "owner",
    "agent_id",
    "status",
    "stop_reason",
    "message_ids",
    "error",
    "created_at",
    "completed_at",
)
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM letta_runs"
_SAVE = (
    f"INSERT INTO letta_runs ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
    "ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS[3:] if c != "created_at")
)


def _run(row: Sequence[Any]) -> Run:
    values = dict(zip(_COLUMNS, row, strict=True))
    values["message_ids"] = json.loads(values["message_ids"])
    return Run(**values)


class Runs(Transactions):
    """Letta's runs (see `RunStorage`)."""

    @guarded
    def save_run(self, run: Run) -> None:
        completed = None if run.completed_at is None else self.dialect.time(run.completed_at)
        with self.transaction():
            if not self._one("SELECT 1 FROM agents WHERE id = ?", [run.agent_id]):
                raise unknown_agent(run.agent_id)
            self._execute(
                _SAVE,
                [
                    run.id,
                    run.owner,
                    run.agent_id,
                    run.status,
                    run.stop_reason,
                    json.dumps(run.message_ids),
                    run.error,
                    self.dialect.time(run.created_at),
                    completed,
                ],
            )

    @guarded
    def get_run(self, run_id: str, owner: str) -> Run:
        row = self._one(f"{_SELECT} WHERE id = ? AND owner = ?", [run_id, owner])
        if row is None:
            raise NotFoundError(f"no run with id {run_id!r}")
        return _run(row)

    @guarded
    def list_runs(self, owner: str, agent_id: str | None = None, limit: int = 100) -> list[Run]:
        where, params = "owner = ?", [owner]
        if agent_id is not None:
            where, params = where + " AND agent_id = ?", [*params, agent_id]
        rows = self._all(
            f"{_SELECT} WHERE {where} ORDER BY created_at DESC LIMIT ?", [*params, limit]
        )
        return [_run(row) for row in rows]
