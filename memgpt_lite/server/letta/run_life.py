"""A Letta run's life: every send of Letta's (synchronous, streamed or
asynchronous) is a run, a row of the database, from before its step starts
until after it ends.

- `begin_run` stores the run, `running`, and registers its `StopRequest`
  with the process's live runs (server/live_runs.py), which renew it.
- The step is run with the run's `watch`: its stop request, and `ended`,
  told once how the step ended (steps.py), which stores the run's end:
  `completed` with Letta's stop reason, `cancelled` for a step that stopped
  because it was asked to, `failed` with the error in one line. A step that
  never began because its client left while it waited for its turn is
  `cancelled`. A background run's end is stored by its writer instead,
  with the last of its chunks (run_stream.py).
- `cancel_runs` makes runs `cancelled` in the database (a run that ended is
  left as it is) and stops their steps: at once when this process runs
  them, else at their next safe point, where the step reads its row.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterable

from memgpt_lite.agent.agent import StopRequest
from memgpt_lite.agent.workspace import Run
from memgpt_lite.errors import LLMError, MemGPTError, NotFoundError
from memgpt_lite.events import StepEvent, StepFailed, StepFinished
from memgpt_lite.models import StepResult
from memgpt_lite.server.context import ServerContext
from memgpt_lite.server.steps import StepWatch

log = logging.getLogger(__name__)

# Our stop reasons as Letta's.
STOP_REASONS = {
    "send_message": "end_turn",
    "no_heartbeat": "end_turn",
    "text_reply": "end_turn",
    "step_limit": "max_steps",
    "context_full": "max_tokens_exceeded",
    "tool_rule": "tool_rule",
    "approval_required": "requires_approval",
    "cancelled": "cancelled",
}

# How often a step reads its run's row at most, for a cancel made elsewhere.
RECHECK_SECONDS = 0.25
# How many of an agent's newest runs a cancel without run ids looks at.
CANCEL_LOOKS_AT = 1000

StepEnd = StepResult | StepEvent | BaseException | None


class LiveRun:
    """A run whose step this process runs (see the module's doc)."""

    def __init__(self, ctx: ServerContext, run: Run) -> None:
        self.ctx, self.run = ctx, run
        self.stop = StopRequest(self._cancelled_elsewhere)
        self._ended = False
        self._lock = threading.Lock()
        self._next_read = 0.0  # when the run's row may be read again
        ctx.runs.add(run.id, self.stop)

    @property
    def watch(self) -> StepWatch:
        """What the step is run with; a background run's end is its writer's."""
        return StepWatch(stop=self.stop, ended=None if self.run.background else self.ended)

    def _cancelled_elsewhere(self) -> bool:
        """Whether the run's row says it was cancelled (by another process),
        read at most every `RECHECK_SECONDS` (a step of quick tool calls asks
        before each)."""
        now = time.monotonic()
        if now < self._next_read:
            return False
        self._next_read = now + RECHECK_SECONDS
        try:
            return self.ctx.workspace.run(self.run.id, self.run.owner).status == "cancelled"
        except MemGPTError as exc:  # a busy database, or the run deleted: the step goes on
            log.warning("could not read run %s: %s", self.run.id, exc)
            return False

    def ended(self, end: StepEnd, last_chunk: tuple[int, str] | None = None) -> None:
        """Store how the step ended, once, and forget the run; in the step's
        thread (or wherever the step was refused). `last_chunk`: a
        background run's, stored with the end."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
        try:
            self.run = self.ctx.workspace.end_run(run_end(self.run, end), last_chunk)
        except MemGPTError as exc:  # the answer still goes out; the keeper ends the run later
            log.warning("could not store the end of run %s: %s", self.run.id, exc)
        finally:
            self.ctx.runs.forget(self.run.id)


def begin_run(
    ctx: ServerContext,
    user: str,
    agent_id: str,
    conversation: str | None = None,
    background: bool = False,
) -> LiveRun:
    """A new run of the user's agent (in its `conversation`; None: its
    default one), `running`, whose step this process runs; from a worker
    thread (it writes the run's row)."""
    run = ctx.workspace.start_run(user, agent_id, conversation, background=background)
    return LiveRun(ctx, run)


def run_end(run: Run, end: StepEnd) -> Run:
    """`run` as the step's `end` leaves it (see the module's doc)."""
    ended = run.model_copy()
    if isinstance(end, StepFinished):
        end = end.result
    if isinstance(end, StepResult):
        cancelled = end.stop_reason == "cancelled"
        ended.status = "cancelled" if cancelled else "completed"
        ended.stop_reason = STOP_REASONS[end.stop_reason]
        ended.message_ids = [m.id for m in end.messages]
    elif isinstance(end, StepFailed):
        ended.status, ended.error = "failed", end.message
        ended.stop_reason = "llm_api_error" if isinstance(end.error, LLMError) else "error"
        ended.message_ids = [m.id for m in end.result.messages]
    elif isinstance(end, asyncio.CancelledError):  # its client left before the step began
        ended.status, ended.stop_reason = "cancelled", "cancelled"
        ended.error = "the client went away before the step began"
    elif isinstance(end, MemGPTError):
        ended.status, ended.error = "failed", str(end)
        ended.stop_reason = "llm_api_error" if isinstance(end, LLMError) else "error"
    else:  # a bug (logged where it was raised), or no end at all
        ended.status, ended.stop_reason, ended.error = "failed", "error", "the server failed"
    return ended


def cancel_runs(
    ctx: ServerContext, user: str, agent_id: str, run_ids: Iterable[str] | None
) -> dict[str, str]:
    """Cancel the agent's given runs, or all its open ones; each run's
    status after (`cancelled`, or how it had ended already). An id that is
    not one of the agent's runs is a 404, and nothing is cancelled."""
    if run_ids is None:
        chosen = [r.id for r in ctx.workspace.runs(user, CANCEL_LOOKS_AT, agent_id) if r.open]
    else:
        chosen = list(dict.fromkeys(run_ids))
        for run_id in chosen:
            if ctx.workspace.run(run_id, user).agent_id != agent_id:
                raise NotFoundError(f"no run with id {run_id!r} of agent {agent_id!r}")
    return _cancelled(ctx, user, chosen)


def cancel_conversation_runs(
    ctx: ServerContext, user: str, agent_id: str, conversation: str | None
) -> dict[str, str]:
    """Cancel the open runs of the agent's `conversation` (None: its
    default one), as `cancel_runs` does; each run's status after."""
    newest = ctx.workspace.runs(user, CANCEL_LOOKS_AT, agent_id)
    chosen = [r.id for r in newest if r.open and r.conversation_id == conversation]
    return _cancelled(ctx, user, chosen)


def _cancelled(ctx: ServerContext, user: str, chosen: list[str]) -> dict[str, str]:
    statuses = {}
    for run_id in chosen:
        run = ctx.workspace.store.cancel_run(run_id, user)
        if run.status == "cancelled":
            ctx.runs.stop(run_id)
        statuses[run_id] = run.status
    return statuses
