"""Letta's steps (`/v1/steps/...`), and what Letta reads of a run besides
its messages: its usage, steps, metrics and trace.

A Letta `Step` here is one of our steps: one turn of an agent, from the
user's message through every model request it made to its reply, under one
`step_id`, which its messages carry (so `steps.retrieve(message.step_id)`
finds it). Letta's step is one model request; ours sums the usage records
of its requests (storage: `list_steps`), so a step of three requests is one
Step with their tokens. Steps are those that stored usage (at least one
model answer): a step whose first request failed has none. A summary or a
sleep-time reflection made outside a turn is a step of its own
(`compaction-...`, `reflection-...`).

A step belongs to the run whose stored messages hold its messages; a step
that waited for an approval goes on in the run of the approval, and names
that later run (`run_id`), whose status gives the step's. A step no run
holds (the command line's, the OpenAI-compatible route's) has no run, and
no status. A user's feedback on a step (`PATCH .../feedback`: positive or
negative, and tags) is stored with it. Nothing else of Letta's step is kept:
no timings per request, no traces.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from memgpt_lite.agent.workspace import Run, StepFeedback, StepUsage
from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import Message, utcnow
from memgpt_lite.server.context import Context, ServerContext, User
from memgpt_lite.server.letta.bodies import LettaBody
from memgpt_lite.server.letta.messages import MessagePage
from memgpt_lite.server.letta.paging import Order, page
from memgpt_lite.server.letta.runs import MAX_LISTED_RUNS, letta_messages_of
from memgpt_lite.server.letta.tool_views import agent_tool_views
from memgpt_lite.text import CleanStr

router = APIRouter(tags=["letta"])

# The newest steps of a user that steps.list reads (older ones are not listed).
MAX_LISTED_STEPS = 10_000

# A step's status, from its run's.
STEP_STATUS = {
    "created": "pending",
    "running": "pending",
    "completed": "success",
    "failed": "failed",
    "cancelled": "cancelled",
}

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def nanoseconds(when: datetime) -> int:
    """A time as nanoseconds since the epoch (to the microsecond it is stored to)."""
    return (when - _EPOCH) // timedelta(microseconds=1) * 1000


def step_view(step: StepUsage, run: Run | None) -> dict[str, Any]:
    """A step as Letta's Step."""
    return {
        "id": step.step_id,
        "agent_id": step.agent_id,
        "run_id": None if run is None else run.id,
        "model": step.model,
        "prompt_tokens": step.prompt_tokens,
        "completion_tokens": step.completion_tokens,
        "total_tokens": step.total_tokens,
        "stop_reason": None if run is None else run.stop_reason,
        "status": None if run is None else STEP_STATUS[run.status],
        "error_type": None,
        "error_data": None if run is None or run.error is None else {"message": run.error},
        "tags": step.tags,
        "messages": [],
        "feedback": step.feedback,
        "trace_id": None,
    }


def runs_holding(
    ctx: ServerContext, user: str, agent_id: str, messages: Sequence[Message]
) -> dict[str, Run]:
    """The run each step of these messages (of the agent's) ended in, by
    step id: the newest of the agent's runs (of its newest
    `MAX_LISTED_RUNS`) that stored one of its messages."""
    step_of = {m.id: m.step_id for m in messages if m.step_id}
    found: dict[str, Run] = {}
    for run in ctx.workspace.runs(user, MAX_LISTED_RUNS, agent_id):  # newest first
        for message_id in run.message_ids:
            if message_id in step_of:
                found.setdefault(step_of[message_id], run)
    return found


def step_runs(ctx: ServerContext, user: str, steps: Sequence[StepUsage]) -> dict[str, Run]:
    """The run each of these steps ended in, by step id (see `runs_holding`)."""
    by_agent: dict[str, list[str]] = {}
    for step in steps:
        by_agent.setdefault(step.agent_id, []).append(step.step_id)
    found: dict[str, Run] = {}
    for agent_id, step_ids in by_agent.items():
        messages = ctx.workspace.step_messages(agent_id, step_ids)
        found |= runs_holding(ctx, user, agent_id, messages)
    return found


def step_views(ctx: ServerContext, user: str, steps: Sequence[StepUsage]) -> list[dict[str, Any]]:
    runs = step_runs(ctx, user, steps)
    return [step_view(step, runs.get(step.step_id)) for step in steps]


def owned_step(ctx: ServerContext, user: str, step_id: str) -> StepUsage:
    """The user's step; NotFoundError for another user's, word for word."""
    found = ctx.workspace.steps(user, 1, step_ids=[step_id])
    if not found:
        raise NotFoundError(f"no step with id {step_id!r}")
    return found[0]


def _aware(when: datetime) -> datetime:
    """A time given without a zone, as UTC."""
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _feedback_matches(
    step: StepUsage,
    feedback: StepFeedback | None,
    has_feedback: bool | None,
    tags: list[str] | None,
) -> bool:
    """Whether the step has this feedback, has feedback or none (as
    `has_feedback` asks), and one of these tags, each if given."""
    return (
        (feedback is None or step.feedback == feedback)
        and (has_feedback is None or (step.feedback is not None) == has_feedback)
        and (not tags or not set(tags).isdisjoint(step.tags))
    )


@router.get("/v1/steps/", include_in_schema=False)
@router.get("/v1/steps")
def list_steps(
    ctx: Context,
    user: User,
    before: str | None = None,
    after: str | None = None,
    limit: Annotated[int | None, Query(ge=1, le=1000)] = 50,
    order: Order = "desc",
    order_by: Literal["created_at"] = "created_at",
    start_date: datetime | None = None,
    end_date: datetime | None = None,
    model: str | None = None,
    agent_id: str | None = None,
    trace_ids: Annotated[list[str] | None, Query()] = None,
    feedback: StepFeedback | None = None,
    has_feedback: bool | None = None,
    tags: Annotated[list[str] | None, Query()] = None,
) -> list[dict[str, Any]]:
    """Letta's list_steps: the user's steps, newest first unless `order` is
    "asc", of one agent and model, begun (their first model answer) from
    `start_date` to before `end_date`, with this feedback, with feedback or
    without (`has_feedback`), with one of `tags`; `after` and `before` are
    step ids. No step has a trace: asking for trace ids finds none."""
    if trace_ids:
        return []
    steps = [
        s
        for s in ctx.workspace.steps(user, MAX_LISTED_STEPS, agent_id)
        if (model is None or s.model == model)
        and (start_date is None or s.first_at >= _aware(start_date))
        and (end_date is None or s.first_at < _aware(end_date))
        and _feedback_matches(s, feedback, has_feedback, tags)
    ]
    if order == "asc":
        steps.reverse()
    paged = page(steps, lambda s: s.step_id, after=after, before=before, limit=limit)
    return step_views(ctx, user, paged)


@router.get("/v1/steps/{step_id}")
def retrieve_step(step_id: str, ctx: Context, user: User) -> dict[str, Any]:
    return step_views(ctx, user, [owned_step(ctx, user, step_id)])[0]


class StepFeedbackIn(LettaBody):
    """Letta's ModifyFeedbackRequest."""

    feedback: StepFeedback | None = None
    tags: list[CleanStr] | None = None


@router.patch("/v1/steps/{step_id}/feedback")
def modify_feedback_for_step(
    step_id: str, body: StepFeedbackIn, ctx: Context, user: User
) -> dict[str, Any]:
    """Letta's modify_feedback_for_step: the step's feedback becomes the
    body's (left out or null takes it away); its tags become the body's if
    it names any (as Letta, none given or an empty list keeps them)."""
    step = owned_step(ctx, user, step_id)
    ctx.workspace.set_step_feedback(step.agent_id, step.step_id, body.feedback, body.tags or None)
    return retrieve_step(step_id, ctx, user)


@router.get("/v1/steps/{step_id}/messages")
def list_step_messages(
    step_id: str,
    ctx: Context,
    user: User,
    before: str | None = None,
    after: str | None = None,
    limit: Annotated[int | None, Query(ge=1)] = 100,
    order: Order = "asc",
    order_by: Literal["created_at"] = "created_at",
) -> list[dict[str, Any]]:
    """Letta's list_messages_for_step: the step's messages (of the runs it
    went on in), as Letta's, in the order stored unless `order` is "desc"."""
    step = owned_step(ctx, user, step_id)
    stored = ctx.workspace.step_messages(step.agent_id, [step.step_id])
    wanted = MessagePage(after, before, limit, order, use_assistant_message=True)
    return letta_messages_of(ctx, user, step.agent_id, stored, wanted)


@router.get("/v1/steps/{step_id}/metrics")
def retrieve_step_metrics(step_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's StepMetrics: when the step began (its first message or model
    answer stored) and how long to its last. The time of each request and
    tool is not measured."""
    step = owned_step(ctx, user, step_id)
    messages = ctx.workspace.step_messages(step.agent_id, [step.step_id])
    run = runs_holding(ctx, user, step.agent_id, messages).get(step.step_id)
    times = [step.first_at, step.last_at, *(m.created_at for m in messages)]
    began = nanoseconds(min(times))
    return {
        "id": step.step_id,
        "agent_id": step.agent_id,
        "run_id": None if run is None else run.id,
        "step_start_ns": began,
        "step_ns": nanoseconds(max(times)) - began,
        "llm_request_start_ns": None,
        "llm_request_ns": None,
        "tool_execution_ns": None,
    }


@router.get("/v1/steps/{step_id}/trace")
def retrieve_step_trace(step_id: str, ctx: Context, user: User) -> None:
    """Letta's retrieve_trace_for_step: null, no provider trace is kept."""
    owned_step(ctx, user, step_id)


def run_steps(ctx: ServerContext, user: str, run: Run) -> tuple[list[Message], list[StepUsage]]:
    """What the run stored, and its steps (those with usage), newest first."""
    stored = ctx.workspace.messages_by_id(run.agent_id, run.message_ids)
    step_ids = list(dict.fromkeys(m.step_id for m in stored if m.step_id))
    if not step_ids:
        return stored, []
    return stored, ctx.workspace.steps(user, len(step_ids), run.agent_id, step_ids)


@router.get("/v1/runs/{run_id}/steps")
def list_run_steps(
    run_id: str,
    ctx: Context,
    user: User,
    before: str | None = None,
    after: str | None = None,
    limit: Annotated[int | None, Query(ge=1)] = 100,
    order: Order = "desc",
    order_by: Literal["created_at"] = "created_at",
) -> list[dict[str, Any]]:
    """Letta's list_steps_for_run: the steps whose messages the run stored
    (once it ended), newest first unless `order` is "asc"."""
    _, steps = run_steps(ctx, user, ctx.workspace.run(run_id, user))
    if order == "asc":
        steps.reverse()
    paged = page(steps, lambda s: s.step_id, after=after, before=before, limit=limit)
    return step_views(ctx, user, paged)


@router.get("/v1/runs/{run_id}/usage")
def retrieve_run_usage(run_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's UsageStatistics of the run: the tokens of every model answer
    its steps stored while it ran (a step that went on in a later run, after
    an approval, counts there for what it spent there)."""
    run = ctx.workspace.run(run_id, user)
    _, steps = run_steps(ctx, user, run)
    ended = run.completed_at or utcnow()
    records = [
        record
        for step in steps
        for record in ctx.workspace.step_usage(run.agent_id, step.step_id)
        if run.created_at <= record.created_at <= ended
    ]
    return {
        "prompt_tokens": sum(r.prompt_tokens for r in records),
        "completion_tokens": sum(r.completion_tokens for r in records),
        "total_tokens": sum(r.total_tokens for r in records),
        "prompt_tokens_details": None,
        "completion_tokens_details": None,
    }


@router.get("/v1/runs/{run_id}/metrics")
def retrieve_run_metrics(run_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's RunMetrics: when the run began, how long it took (once
    ended), its steps, and the ids of the agent's tools it called."""
    run = ctx.workspace.run(run_id, user)
    stored, steps = run_steps(ctx, user, run)
    state = ctx.agent_state(user, run.agent_id)
    tools = agent_tool_views(
        state,
        ctx.workspace.tools.tools_of(state.owner),
        ctx.workspace.settings.tools.result_max_chars,
    )
    ids = {view["name"]: view["id"] for view in tools}
    called = dict.fromkeys(call.name for m in stored for call in m.tool_calls)
    began = nanoseconds(run.created_at)
    return {
        "id": run.id,
        "agent_id": run.agent_id,
        "run_start_ns": began,
        "run_ns": None if run.completed_at is None else nanoseconds(run.completed_at) - began,
        "num_steps": len(steps),
        "tools_used": [ids[name] for name in called if name in ids],
    }


@router.get("/v1/runs/{run_id}/trace")
def retrieve_run_trace(
    run_id: str, ctx: Context, user: User, limit: Annotated[int, Query(ge=1, le=5000)] = 1000
) -> list[dict[str, Any]]:
    """Letta's retrieve_trace_for_run: empty, no OpenTelemetry spans are kept."""
    ctx.workspace.run(run_id, user)
    return []
