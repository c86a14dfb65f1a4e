"""Letta's asynchronous sends and their runs: `agents.messages.create_async`
(POST /v1/agents/{id}/messages/async) answers at once with a run, whose step
goes on in the server; `runs.retrieve` polls it until it is `completed` (or
`failed`, its `metadata.error` saying why), then `runs.messages.list` gives
what the step stored. `runs.list` lists the user's runs.

A run is a row of the database (storage/protocols/runs.py), so any server
process on it answers the poll. The step runs as every send does (one at a
time per agent, to its end even if nobody polls). A server stopped while a
run's step goes on leaves the run `running`: its messages are those stored.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool

from memgpt_lite.agent.workspace import Run
from memgpt_lite.errors import ConfigError, LLMError, MemGPTError
from memgpt_lite.models import StepInput, utcnow
from memgpt_lite.server.api_agents import step_result
from memgpt_lite.server.context import Context, ServerContext, User
from memgpt_lite.server.letta.bodies import SendRequest
from memgpt_lite.server.letta.messages import keep, to_letta
from memgpt_lite.server.letta.paging import Order, page
from memgpt_lite.server.letta.send import STOP_REASONS, checked_input

router = APIRouter(tags=["letta"])

# The newest runs of a user that runs.list reads (older ones are not listed).
MAX_LISTED_RUNS = 10_000


class AsyncSendRequest(SendRequest):
    """LettaAsyncRequest: a send, and where to report its end (not done)."""

    callback_url: str | None = None


def run_view(run: Run) -> dict[str, Any]:
    """A run as Letta's Run."""
    return {
        "id": run.id,
        "agent_id": run.agent_id,
        "status": run.status,
        "stop_reason": run.stop_reason,
        "created_at": run.created_at,
        "completed_at": run.completed_at,
        "background": False,
        "metadata": {} if run.error is None else {"error": run.error},
        "request_config": None,
        "callback_url": None,
    }


async def finish(ctx: ServerContext, user: str, run: Run, message: StepInput) -> None:
    """Run the step of `run` and store how it ended."""
    try:
        result = await step_result(ctx, user, run.agent_id, message)
    except MemGPTError as exc:
        run.status, run.error = "failed", str(exc)
        run.stop_reason = "llm_api_error" if isinstance(exc, LLMError) else "error"
    except BaseException:
        run.status, run.error, run.stop_reason = "failed", "the server failed", "error"
        raise  # a bug or a cancelled task: logged by asyncio once stored below
    else:
        run.status, run.stop_reason = "completed", STOP_REASONS[result.stop_reason]
        run.message_ids = [m.id for m in result.messages]
    finally:
        run.completed_at = utcnow()
        await run_in_threadpool(ctx.workspace.save_run, run)


def _keep_running(request: Request, task: asyncio.Task[None]) -> None:
    """Hold the run's task until it ends (the event loop keeps only a weak
    reference), on the app: one set per app, not per process."""
    tasks: set[asyncio.Task[None]] = request.app.state.__dict__.setdefault("letta_runs", set())
    tasks.add(task)
    task.add_done_callback(tasks.discard)


@router.post("/v1/agents/{agent_id}/messages/async")
async def create_async(
    agent_id: str, body: AsyncSendRequest, request: Request, ctx: Context, user: User
) -> dict[str, Any]:
    """Letta's create_agent_message_async: the run, `running`; what the
    request asks is checked first (a bad one is answered, no run made)."""
    if body.callback_url is not None:
        raise ConfigError(
            "callback_url: memgpt-lite does not call back; poll the run (runs.retrieve)"
        )
    state = await run_in_threadpool(ctx.agent_state, user, agent_id)
    message = await run_in_threadpool(checked_input, ctx, user, state.id, body)
    run = await run_in_threadpool(ctx.workspace.start_run, user, state.id)
    _keep_running(request, asyncio.create_task(finish(ctx, user, run.model_copy(), message)))
    return run_view(run)


@router.get("/v1/runs/{run_id}")
def retrieve_run(run_id: str, ctx: Context, user: User) -> dict[str, Any]:
    return run_view(ctx.workspace.run(run_id, user))


@router.get("/v1/runs/", include_in_schema=False)
@router.get("/v1/runs")
def list_runs(
    ctx: Context,
    user: User,
    agent_id: str | None = None,
    agent_ids: Annotated[list[str] | None, Query()] = None,
    statuses: Annotated[list[str] | None, Query()] = None,
    after: str | None = None,
    before: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    order: Order = "desc",
    active: bool = False,
) -> list[dict[str, Any]]:
    """Letta's list_runs: the user's runs, newest first unless `order` is
    "asc", by agent and status; `after` and `before` are run ids."""
    wanted = set(agent_ids or ()) | ({agent_id} if agent_id else set())
    runs = [
        r
        for r in ctx.workspace.runs(user, MAX_LISTED_RUNS)
        if (not wanted or r.agent_id in wanted)
        and (not statuses or r.status in statuses)
        and (not active or r.status in ("created", "running"))
    ]
    if order == "asc":
        runs.reverse()
    return [
        run_view(r) for r in page(runs, lambda r: r.id, after=after, before=before, limit=limit)
    ]


@router.get("/v1/runs/{run_id}/messages")
def list_run_messages(
    run_id: str,
    ctx: Context,
    user: User,
    after: str | None = None,
    before: str | None = None,
    limit: Annotated[int | None, Query(ge=1)] = 100,
    order: Order = "asc",
    use_assistant_message: bool = True,
    include_return_message_types: Annotated[list[str] | None, Query()] = None,
) -> list[dict[str, Any]]:
    """Letta's list_messages_for_run: what the run's step stored, as Letta's
    messages (the user's message first), in the order stored."""
    run = ctx.workspace.run(run_id, user)
    state = ctx.agent_state(user, run.agent_id)
    ids = set(run.message_ids)
    stored = [m for m in ctx.workspace.all_messages(state.id) if m.id in ids]
    waiting = {call.id for call in ctx.workspace.waiting_calls(state)}
    shown = keep(
        (
            item
            for m in stored
            for item in to_letta(m, use_assistant_message=use_assistant_message, waiting=waiting)
        ),
        include_return_message_types,
    )
    if order == "desc":
        shown.reverse()
    return page(shown, lambda m: m["id"], after=after, before=before, limit=limit)
