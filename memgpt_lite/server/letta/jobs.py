"""Letta's jobs (/v1/jobs): list, list active, retrieve, delete, cancel.

In Letta a run is a kind of job (`job_type` "run"), and a run's id is a
job's id. memgpt-lite's only jobs are its runs (runs.py), so these routes
show the user's runs as Letta's Job. Letta's other jobs (a folder's files
being processed, asked for by `source_id`) do not exist here: a list of a
source's jobs is empty.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from memgpt_lite.agent.workspace import Run
from memgpt_lite.server.context import Context, User
from memgpt_lite.server.letta.paging import page
from memgpt_lite.server.letta.run_life import cancel_runs
from memgpt_lite.server.letta.runs import deleted_run, listed_runs, run_view

router = APIRouter(prefix="/v1/jobs", tags=["letta"])


def job_view(run: Run) -> dict[str, Any]:
    """A run as Letta's Job."""
    view = run_view(run)
    return {
        "id": run.id,
        "user_id": run.owner,
        "agent_id": run.agent_id,
        "job_type": "run",
        "status": run.status,
        "stop_reason": run.stop_reason,
        "created_at": run.created_at,
        "updated_at": run.completed_at or run.renewed_at or run.created_at,
        "completed_at": run.completed_at,
        "background": run.background,
        "metadata": view["metadata"],
        "callback_url": None,
        "created_by_id": None,
        "last_updated_by_id": None,
    }


def _jobs(
    runs: list[Run],
    source_id: str | None,
    after: str | None,
    before: str | None,
    limit: int,
    ascending: bool,
) -> list[dict[str, Any]]:
    if source_id is not None:  # a folder's file jobs: memgpt-lite has none
        return []
    if ascending:
        runs = runs[::-1]
    shown = page(runs, lambda r: r.id, after=after, before=before, limit=limit)
    return [job_view(r) for r in shown]


@router.get("/", include_in_schema=False)
@router.get("")
def list_jobs(
    ctx: Context,
    user: User,
    source_id: str | None = None,
    before: str | None = None,
    after: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    order: Literal["asc", "desc"] = "desc",
    order_by: Literal["created_at"] = "created_at",
    active: bool = False,
    ascending: bool | None = None,
) -> list[dict[str, Any]]:
    """Letta's list_jobs: the user's runs as jobs, newest first unless
    `order` is "asc" (or the older `ascending` is true); `active`: still
    running."""
    runs = listed_runs(ctx, user, set(), None, None, None, active)
    return _jobs(runs, source_id, after, before, limit, order == "asc" or bool(ascending))


@router.get("/active")
def list_active_jobs(
    ctx: Context,
    user: User,
    source_id: str | None = None,
    before: str | None = None,
    after: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    ascending: bool = True,
) -> list[dict[str, Any]]:
    """Letta's list_active_jobs: the user's runs still running, as jobs,
    oldest first unless `ascending` is false (Letta's defaults)."""
    runs = listed_runs(ctx, user, set(), None, None, None, active=True)
    return _jobs(runs, source_id, after, before, limit, ascending)


@router.get("/{job_id}")
def retrieve_job(job_id: str, ctx: Context, user: User) -> dict[str, Any]:
    return job_view(ctx.workspace.run(job_id, user))


@router.patch("/{job_id}/cancel")
def cancel_job(job_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's cancel_job: the run cancelled (one that ended already is left
    as it was), as `agents.messages.cancel` does."""
    run = ctx.workspace.run(job_id, user)
    cancel_runs(ctx, user, run.agent_id, [run.id])
    return job_view(ctx.workspace.run(job_id, user))


@router.delete("/{job_id}")
def delete_job(job_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's delete_job: the run deleted (an open one is stopped first),
    as `runs.delete` does; the job as it was."""
    return job_view(deleted_run(ctx, user, job_id))
