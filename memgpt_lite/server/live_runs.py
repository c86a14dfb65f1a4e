"""The runs whose steps this server process runs (one `LiveRuns` per app,
on its `ServerContext`), and the keeper that looks after every run of the
database while the app serves.

A run is a row of the database (storage/protocols/runs.py), so any server
process on it answers for any run; what only the process that runs a run's
step has is kept here: the request that stops the step (a cancel that
reaches this process stops it at once; one that reaches another is read
from the run's row at the step's next safe point), the tasks that drive
background runs, and a wake-up for those who follow a background run's
chunks in this process (others poll).

`keep_runs` runs beside the app: at its start and every `RENEW_SECONDS`
after, it renews this process's open runs, ends as abandoned every open run
no process renewed for `RUN_LEASE` (its server was stopped or killed:
`failed`, or still `cancelled`), and deletes the chunks kept longer than
`CHUNKS_KEPT`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from datetime import timedelta

from fastapi.concurrency import run_in_threadpool

from memgpt_lite.agent.agent import StopRequest
from memgpt_lite.agent.workspace import Workspace
from memgpt_lite.errors import StoreError
from memgpt_lite.models import utcnow

log = logging.getLogger(__name__)

# How often a server renews its runs, and how long an open run may go
# unrenewed before it counts as abandoned: several renewals missed.
RENEW_SECONDS = 15.0
RUN_LEASE = timedelta(seconds=75)
# How long a background run's chunks are kept (as Letta keeps them).
CHUNKS_KEPT = timedelta(hours=3)
ABANDONED = "the server running its step stopped before the step ended"
# How long a streamed send may go without a chunk before a ping is sent.
PING_SECONDS = 30.0


class LiveRuns:
    """The runs this server process runs the steps of (see the module's doc)."""

    def __init__(self) -> None:
        self._stops: dict[str, StopRequest] = {}
        self._lock = threading.Lock()  # steps end in worker threads
        self._written: dict[str, asyncio.Event] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.ping_seconds = PING_SECONDS

    def add(self, run_id: str, stop: StopRequest) -> None:
        with self._lock:
            self._stops[run_id] = stop

    def forget(self, run_id: str) -> None:
        with self._lock:
            self._stops.pop(run_id, None)

    def has(self, run_id: str) -> bool:
        with self._lock:
            return run_id in self._stops

    def ids(self) -> list[str]:
        with self._lock:
            return list(self._stops)

    def stop(self, run_id: str) -> None:
        """Stop the run's step now, if this process runs it."""
        with self._lock:
            stop = self._stops.get(run_id)
        if stop is not None:
            stop.stop()

    def keep(self, task: asyncio.Task[None]) -> None:
        """Hold a background run's task until it ends (the event loop keeps
        only a weak reference)."""
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def written(self, run_id: str) -> asyncio.Event:
        """Set the next time a chunk of the run is kept by this process
        (`wrote`); take it before reading, so no write is missed."""
        return self._written.setdefault(run_id, asyncio.Event())

    def wrote(self, run_id: str) -> None:
        event = self._written.pop(run_id, None)
        if event is not None:
            event.set()

    def stopped_following(self, run_id: str, event: asyncio.Event) -> None:
        """A follower leaves: its wake-up goes unless written (another
        follower of the run, if any, then polls)."""
        if self._written.get(run_id) is event:
            del self._written[run_id]

    async def drain(self) -> None:
        """Wait for the background runs' tasks to end (as the server stops,
        once their steps end)."""
        await asyncio.gather(*self._tasks, return_exceptions=True)


def _look_after(workspace: Workspace, runs: LiveRuns) -> None:
    store, now = workspace.store, utcnow()
    store.renew_runs(runs.ids())
    ended = store.end_abandoned_runs(now - RUN_LEASE, ABANDONED)
    if ended:
        log.warning("%d run(s) ended as abandoned: %s", ended, ABANDONED)
    store.delete_run_chunks(now - CHUNKS_KEPT)


async def keep_runs(workspace: Workspace, runs: LiveRuns, closing: asyncio.Event) -> None:
    """Look after the database's runs until `closing` is set (see the
    module's doc); a look in progress then ends first."""
    while not closing.is_set():
        try:
            await run_in_threadpool(_look_after, workspace, runs)
        except StoreError as exc:  # the database is busy or away: next time
            log.warning("could not look after the runs: %s", exc)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(closing.wait(), RENEW_SECONDS)
