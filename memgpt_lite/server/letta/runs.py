"""Letta's runs: every send is one (run_life.py). `agents.messages.create_async`
(POST /v1/agents/{id}/messages/async) answers at once with its run, whose
step goes on in the server; `runs.retrieve` is polled until it is
`completed` (or `failed`, its `metadata.error` saying why, or `cancelled`),
then `runs.messages.list` gives what the step stored. `runs.list` lists the
user's runs; `runs.messages.stream` (POST /v1/runs/{id}/stream) reads a
background run's stream again from a seq_id (run_stream.py);
`agents.messages.cancel` cancels an agent's runs.

A run is a row of the database (storage/protocols/runs.py), so any server
process on it answers for it. The step runs as every send does (one at a
time per agent, to its end even if nobody polls). A run whose server was
stopped before its step ended is ended as abandoned (live_runs.py).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse
from pydantic import Field

from memgpt_lite.agent.workspace import Run
from memgpt_lite.errors import ConfigError, MemGPTError
from memgpt_lite.models import AgentState, Message, StepInput
from memgpt_lite.server.api_agents import step_result
from memgpt_lite.server.context import Context, ServerContext, User
from memgpt_lite.server.letta.bodies import LettaBody, SendRequest
from memgpt_lite.server.letta.messages import MessagePage, letta_page
from memgpt_lite.server.letta.paging import Order, page
from memgpt_lite.server.letta.run_life import LiveRun, cancel_runs
from memgpt_lite.server.letta.run_stream import check_streamable, follow_response
from memgpt_lite.server.letta.send import prepared_send

log = logging.getLogger(__name__)

router = APIRouter(tags=["letta"])

# The newest runs of a user that runs.list reads (older ones are not listed).
MAX_LISTED_RUNS = 10_000


class AsyncSendRequest(SendRequest):
    """LettaAsyncRequest: a send, and where to report its end (not done)."""

    callback_url: str | None = None


class RetrieveStreamRequest(LettaBody):
    """Letta's RetrieveStreamRequest: from which seq_id, and how to follow."""

    starting_after: int = Field(default=0, ge=0)
    include_pings: bool | None = True
    poll_interval: float | None = Field(default=None, gt=0, le=60)
    batch_size: int | None = Field(default=None, ge=1, le=1000)


class CancelRequest(LettaBody):
    """Letta's CancelAgentRunRequest: the runs to cancel, or all open ones."""

    run_ids: list[str] | None = None


def run_view(run: Run) -> dict[str, Any]:
    """A run as Letta's Run."""
    return {
        "id": run.id,
        "agent_id": run.agent_id,
        "conversation_id": run.conversation_id,
        "status": run.status,
        "stop_reason": run.stop_reason,
        "created_at": run.created_at,
        "completed_at": run.completed_at,
        "background": run.background,
        "metadata": {} if run.error is None else {"error": run.error},
        "request_config": None,
        "callback_url": None,
    }


async def _run_async(
    ctx: ServerContext, user: str, live: LiveRun, message: StepInput, state: AgentState
) -> None:
    """The step of an asynchronous send (of the agent `state`, as read before
    the run began); its end is stored by its watch."""
    try:
        await step_result(ctx, user, state.id, message, None, live.watch, state=state)
    except MemGPTError:
        pass  # stored as the run's end (run_life.py)
    except Exception:
        log.exception("the step of run %s failed", live.run.id)  # a bug; the run is failed


@router.post("/v1/agents/{agent_id}/messages/async")
async def create_async(
    agent_id: str, body: AsyncSendRequest, ctx: Context, user: User
) -> dict[str, Any]:
    """Letta's create_agent_message_async: the run, `running`; what the
    request asks is checked first (a bad one is answered, no run made)."""
    if body.callback_url is not None:
        raise ConfigError(
            "callback_url: memgpt-lite does not call back; poll the run (runs.retrieve)"
        )
    state, message, live = await run_in_threadpool(prepared_send, ctx, user, agent_id, body)
    ctx.runs.keep(asyncio.create_task(_run_async(ctx, user, live, message, state)))
    return run_view(live.run)


@router.post("/v1/agents/{agent_id}/messages/cancel")
def cancel_agent_runs(
    agent_id: str, ctx: Context, user: User, body: CancelRequest | None = None
) -> dict[str, str]:
    """Letta's cancel_message: cancel the agent's given runs, or every open
    one; each run's status after (a run that ended already is left as it
    was). Their steps stop at their next safe point (loop/stopping.py)."""
    state = ctx.agent_state(user, agent_id)
    return cancel_runs(ctx, user, state.id, None if body is None else body.run_ids)


def listed_runs(
    ctx: ServerContext,
    user: str,
    agent_ids: set[str],
    statuses: list[str] | None,
    background: bool | None,
    stop_reason: str | None,
    active: bool = False,
) -> list[Run]:
    """The user's runs, newest first, of `agent_ids` (empty: every agent),
    with these statuses, background or not and stop reason (None: any),
    still open with `active`."""
    return [
        r
        for r in ctx.workspace.runs(user, MAX_LISTED_RUNS)
        if (not agent_ids or r.agent_id in agent_ids)
        and (not statuses or r.status in statuses)
        and (background is None or r.background == background)
        and (stop_reason is None or r.stop_reason == stop_reason)
        and (not active or r.open)
    ]


@router.get("/v1/runs/active")
def list_active_runs(
    ctx: Context, user: User, agent_id: str | None = None, background: bool | None = None
) -> list[dict[str, Any]]:
    """Letta's list_active_runs: the user's open runs, newest first."""
    agents = {agent_id} if agent_id else set()
    runs = listed_runs(ctx, user, agents, None, background, None, active=True)
    return [run_view(r) for r in runs]


@router.get("/v1/runs/{run_id}")
def retrieve_run(run_id: str, ctx: Context, user: User) -> dict[str, Any]:
    return run_view(ctx.workspace.run(run_id, user))


@router.delete("/v1/runs/{run_id}")
def delete_run(run_id: str, ctx: Context, user: User) -> None:
    """Letta's delete_run: the run and its kept stream; an open run's step
    is stopped first, at its next safe point. Its messages stay."""
    deleted_run(ctx, user, run_id)


def deleted_run(ctx: ServerContext, user: str, run_id: str) -> Run:
    """Delete the user's run and its kept stream, an open one cancelled
    first (its step stops at its next safe point); the run as it ended."""
    run = ctx.workspace.run(run_id, user)
    cancel_runs(ctx, user, run.agent_id, [run.id])
    ended = ctx.workspace.run(run_id, user)
    ctx.workspace.store.delete_run(run.id, user)
    return ended


@router.get("/v1/runs/", include_in_schema=False)
@router.get("/v1/runs")
def list_runs(
    ctx: Context,
    user: User,
    agent_id: str | None = None,
    agent_ids: Annotated[list[str] | None, Query()] = None,
    statuses: Annotated[list[str] | None, Query()] = None,
    background: bool | None = None,
    stop_reason: str | None = None,
    after: str | None = None,
    before: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    order: Order = "desc",
    active: bool = False,
    ascending: bool = False,
) -> list[dict[str, Any]]:
    """Letta's list_runs: the user's runs, newest first unless `order` is
    "asc" (or the older `ascending`), by agent, status, background, stop
    reason and `active` (still running); `after` and `before` are run ids."""
    wanted = set(agent_ids or ()) | ({agent_id} if agent_id else set())
    runs = listed_runs(ctx, user, wanted, statuses, background, stop_reason, active)
    if order == "asc" or ascending:
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
    stored = ctx.workspace.messages_by_id(run.agent_id, run.message_ids)
    wanted = MessagePage(after, before, limit, order, use_assistant_message)
    shown = letta_messages_of(ctx, user, run.agent_id, stored, wanted, include_return_message_types)
    for item in shown:
        item["run_id"] = run.id
    return shown


def letta_messages_of(
    ctx: ServerContext,
    user: str,
    agent_id: str,
    stored: list[Message],
    wanted: MessagePage,
    types: list[str] | None = None,
) -> list[dict[str, Any]]:
    """One page of stored messages of the user's agent (oldest first) as
    Letta's messages of `types` (None: all), an answer whose calls wait for
    approval as an approval request."""
    state = ctx.agent_state(user, agent_id)
    waiting = {call.id for call in ctx.workspace.waiting_calls(state)}
    if wanted.order == "desc":
        stored = stored[::-1]
    return letta_page(stored, wanted, types, waiting)


@router.post("/v1/runs/{run_id}/stream", response_model=None)
async def retrieve_stream(
    run_id: str, ctx: Context, user: User, body: RetrieveStreamRequest | None = None
) -> StreamingResponse:
    """Letta's retrieve_stream_for_run: a background run's stream, from the
    chunk after seq_id `starting_after`, then what comes, to its end."""
    run = await run_in_threadpool(ctx.workspace.run, run_id, user)
    return resumed(ctx, run, body or RetrieveStreamRequest())


def resumed(ctx: ServerContext, run: Run, body: RetrieveStreamRequest) -> StreamingResponse:
    """A background run's stream, resumed as `body` asks."""
    check_streamable(run)
    return follow_response(
        ctx,
        run,
        body.starting_after,
        batch_size=body.batch_size or 100,
        poll_seconds=body.poll_interval or 0.1,
        pings=body.include_pings is not False,
    )
