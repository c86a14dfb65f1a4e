"""Letta's runs and a background run's chunks (see `RunStorage`), for every backend.

A run's end and its cancellation are each one conditional UPDATE, so the
two, made at once by two processes, leave the run as the first left it: a
step that ends after its run was cancelled records its messages and keeps
the run cancelled; a cancel that comes after the end changes nothing."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import utcnow
from memgpt_lite.storage.core.errors import unknown_agent
from memgpt_lite.storage.core.transactions import Transactions, guarded
from memgpt_lite.storage.protocols.runs import Run, RunChunk

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
    "background",
    "renewed_at",
    "conversation_id",
)
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM letta_runs"
_SAVE = (
    f"INSERT INTO letta_runs ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
    "ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS[3:] if c != "created_at")
)
_OPEN = "status IN ('created', 'running')"
# Each SET reads the row as it was: `status` in a CASE is the old one.
_END = (
    "UPDATE letta_runs SET message_ids = ?, completed_at = COALESCE(completed_at, ?), "
    f"status = CASE WHEN {_OPEN} THEN ? ELSE status END, "
    f"stop_reason = CASE WHEN {_OPEN} THEN ? ELSE stop_reason END, "
    f"error = CASE WHEN {_OPEN} THEN ? ELSE error END "
    "WHERE id = ?"
)
_ABANDON = (
    "UPDATE letta_runs SET completed_at = ?, "
    "status = CASE WHEN status = 'cancelled' THEN status ELSE 'failed' END, "
    "stop_reason = CASE WHEN status = 'cancelled' THEN stop_reason ELSE 'error' END, "
    "error = CASE WHEN status = 'cancelled' THEN error ELSE ? END "
    "WHERE completed_at IS NULL AND renewed_at < ?"
)


def _run(row: Sequence[Any]) -> Run:
    values = dict(zip(_COLUMNS, row, strict=True))
    values["message_ids"] = json.loads(values["message_ids"])
    values["background"] = bool(values["background"])
    return Run(**values)


class Runs(Transactions):
    """Letta's runs (see `RunStorage`)."""

    def _time(self, value: datetime | None) -> Any:
        return None if value is None else self.dialect.time(value)

    @guarded
    def save_run(self, run: Run) -> None:
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
                    self._time(run.completed_at),
                    run.background,
                    self._time(run.renewed_at or run.created_at),
                    run.conversation_id,
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

    @guarded
    def end_run(self, run: Run) -> Run:
        ended = run.completed_at or utcnow()
        with self.transaction():
            self._execute(
                _END,
                [
                    json.dumps(run.message_ids),
                    self.dialect.time(ended),
                    run.status,
                    run.stop_reason,
                    run.error,
                    run.id,
                ],
            )
            return self.get_run(run.id, run.owner)

    @guarded
    def cancel_run(self, run_id: str, owner: str) -> Run:
        with self.transaction():
            self._execute(
                "UPDATE letta_runs SET status = 'cancelled', stop_reason = 'cancelled' "
                f"WHERE id = ? AND owner = ? AND {_OPEN}",
                [run_id, owner],
            )
            return self.get_run(run_id, owner)

    @guarded
    def delete_run(self, run_id: str, owner: str) -> None:
        with self.transaction():
            self.get_run(run_id, owner)
            self._execute("DELETE FROM letta_run_chunks WHERE run_id = ?", [run_id])
            self._execute("DELETE FROM letta_runs WHERE id = ?", [run_id])

    @guarded
    def renew_runs(self, run_ids: Sequence[str]) -> None:
        if not run_ids:
            return
        now = self.dialect.time(utcnow())
        with self.transaction():
            for among, params in self.dialect.among("id", list(run_ids)):
                self._execute(
                    f"UPDATE letta_runs SET renewed_at = ? WHERE {among} AND completed_at IS NULL",
                    [now, *params],
                )

    @guarded
    def end_abandoned_runs(self, renewed_before: datetime, error: str) -> int:
        now = self.dialect.time(utcnow())
        with self.transaction():
            ended = self._execute(_ABANDON, [now, error, self.dialect.time(renewed_before)])
            return max(ended.rowcount, 0)

    @guarded
    def add_run_chunks(self, run_id: str, chunks: Sequence[RunChunk]) -> None:
        now = self.dialect.time(utcnow())
        with self.transaction():
            for seq_id, data in chunks:
                self._execute_later(
                    "INSERT INTO letta_run_chunks (run_id, seq_id, data, created_at) "
                    "VALUES (?, ?, ?, ?)",
                    [run_id, seq_id, data, now],
                )

    @guarded
    def run_chunks(self, run_id: str, after: int, limit: int) -> list[RunChunk]:
        rows = self._all(
            "SELECT seq_id, data FROM letta_run_chunks WHERE run_id = ? AND seq_id > ? "
            "ORDER BY seq_id LIMIT ?",
            [run_id, after, limit],
        )
        return [(int(seq_id), data) for seq_id, data in rows]

    @guarded
    def delete_run_chunks(self, kept_before: datetime) -> None:
        with self.transaction():
            self._execute(
                "DELETE FROM letta_run_chunks WHERE created_at < ?",
                [self.dialect.time(kept_before)],
            )
