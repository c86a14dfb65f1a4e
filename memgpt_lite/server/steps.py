"""Running agents' steps for the server, off its event loop.

A step does blocking work (the database, the model's HTTP), so each runs in a
worker thread through the synchronous `agent.stream_into()` (the agent's own
runner, agent/runner.py, runs it), and its events cross to the event loop in
batches: what the step produced while the loop was busy elsewhere comes in one
wake-up (`_Handover`). Two rules hold here, in one place:

- Sends to one agent run one at a time, in the order they arrived: an
  `asyncio.Lock` per agent (FIFO) is taken before the step goes to a thread.
  The step lock in the database still orders them against other processes.
  An agent's conversations other than its default one are each keyed by
  their own id (api_agents.py), so they step at once, as their step locks
  in the database let them.
- A step, once started, runs to its end even if the client goes away: the
  events are dropped, but the agent's lock is released only when the thread
  is done, so what the step stored is complete and the next send waits for it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

from memgpt_lite.agent import Agent
from memgpt_lite.agent.agent import StopRequest
from memgpt_lite.errors import MemGPTError
from memgpt_lite.events import StepEvent, StepFailed, StepStarted
from memgpt_lite.models import StepInput, StepResult

T = TypeVar("T")

# Told once how a step ended: in the worker thread, its result, its last
# event, or the error it raised; on the event loop, the error that kept it
# from starting (a cancelled wait for its turn among them). sendonce.py
# records a keyed send's answer so, server/letta/run_life.py a run's end.
Ended = Callable[[StepResult | StepEvent | BaseException | None], None]


@dataclass
class StepWatch:
    """What a route gives a step besides its message: a request that may
    stop it (loop/stopping.py), and whom to tell, once, how it ended
    (`Ended`; a send answered from the first send, as that one ended)."""

    stop: StopRequest | None = None
    ended: Ended | None = None

    def tell(self, end: StepResult | StepEvent | BaseException | None) -> None:
        if self.ended is not None:
            self.ended(end)


# Workers that run steps; more steps than this queue for a thread.
DEFAULT_STEP_THREADS = 32


class _End:
    """Put on the queue after a step's last event."""


_END = _End()


@dataclass
class StepRunner:
    """Runs steps in worker threads, one at a time per agent (see the module's doc)."""

    threads: int = DEFAULT_STEP_THREADS
    _pool: ThreadPoolExecutor = field(init=False)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    _users: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="memgpt-step")

    def close(self) -> None:
        """Wait for the steps in progress to end (they store their messages)."""
        self._pool.shutdown(wait=True)

    async def _acquire(self, agent_id: str) -> asyncio.Lock:
        lock = self._locks.setdefault(agent_id, asyncio.Lock())
        self._users[agent_id] = self._users.get(agent_id, 0) + 1
        try:
            await lock.acquire()
        except BaseException:
            self._release(agent_id, lock, held=False)
            raise
        return lock

    def _release(self, agent_id: str, lock: asyncio.Lock, *, held: bool = True) -> None:
        if held:
            lock.release()
        self._users[agent_id] -= 1
        if not self._users[agent_id]:  # nobody waits: forget the lock
            del self._users[agent_id], self._locks[agent_id]

    async def _start(
        self, agent_id: str, work: Callable[[], T], ended: Ended | None
    ) -> asyncio.Future[T]:
        """Run `work` in a worker thread once the agent's earlier sends are
        done; the agent's lock is released when `work` ends, whoever waits.
        If it never starts, `ended` is told why."""
        try:
            lock = await self._acquire(agent_id)
        except BaseException as exc:
            if ended is not None:
                ended(exc)
            raise
        try:
            future = asyncio.get_running_loop().run_in_executor(self._pool, work)
        except BaseException as exc:
            self._release(agent_id, lock)
            if ended is not None:
                ended(exc)
            raise
        future.add_done_callback(lambda _: self._release(agent_id, lock))
        return future

    async def result(
        self,
        agent_id: str,
        load: Callable[[], Agent],
        message: StepInput,
        ended: Ended | None = None,
        stop: StopRequest | None = None,
    ) -> StepResult:
        """The result of one step of the agent `load()` opens, run in a worker
        thread through `agent.step` (lighter than its events: no hand-over per
        event); its error raised. The step goes on if the caller is cancelled.
        `message` is what the core's step takes: the user's message, or the
        user's answer (`Approval`s) to the calls waiting for approval.
        `ended` is called once, in the thread with the result or the error
        (or as `Ended` says). `stop` may stop the step (loop/stopping.py)."""

        def work() -> StepResult:
            try:
                result = load().step(message, stop)
            except BaseException as exc:
                if ended is not None:
                    ended(exc)
                raise
            if ended is not None:
                ended(result)
            return result

        return await asyncio.shield(await self._start(agent_id, work, ended))

    async def events(
        self,
        agent_id: str,
        load: Callable[[], Agent],
        message: StepInput,
        ended: Ended | None = None,
        stop: StopRequest | None = None,
    ) -> AsyncIterator[StepEvent]:
        """The events of one step, one at a time (see `event_batches`)."""
        async for batch in self.event_batches(agent_id, load, message, ended, stop):
            for event in batch:
                yield event

    async def event_batches(
        self,
        agent_id: str,
        load: Callable[[], Agent],
        message: StepInput,
        ended: Ended | None = None,
        stop: StopRequest | None = None,
    ) -> AsyncIterator[list[StepEvent]]:
        """The events of one step of the agent `load()` opens (in the worker
        thread), as they happen: each batch is what the step produced since
        the last was taken, so a fast step costs the loop one wake-up and the
        client one write per batch, not per event. An error that stops the
        step before it starts is raised here, not sent as an event: one raised
        before the step runs (an empty message, no API key) and a step that
        fails before its `StepStarted` (a message while a call waits for
        approval, an answer that fits no waiting call), so a route answers it
        with its status. `ended` is called in the thread with the last event
        or the error, whether or not anyone still reads the events (or as
        `Ended` says, if the step never starts). `stop`: as in `result`."""
        handover = _Handover(asyncio.get_running_loop())

        def produce() -> None:
            last: StepEvent | BaseException | None = None

            def put(event: StepEvent) -> None:
                nonlocal last
                last = event
                handover.put(event)

            try:
                load().stream_into(message, put, stop)
            except BaseException as exc:  # noqa: BLE001 - the request that waits re-raises it
                last = exc
                handover.put(exc)
            finally:
                if ended is not None:
                    ended(last)
                handover.put(_END)

        await self._start(agent_id, produce, ended)
        started = False
        while True:
            events: list[StepEvent] = []
            for item in await handover.take():
                failed_early = isinstance(item, StepFailed) and not started
                if isinstance(item, _End | BaseException) or failed_early:
                    if events:
                        yield events
                    if isinstance(item, BaseException):
                        raise item
                    if isinstance(item, StepFailed):
                        raise item.error or MemGPTError(item.message)
                    return
                started = started or isinstance(item, StepStarted)
                events.append(item)
            yield events


class _Handover:
    """Items from a step's worker thread to the event loop. The thread wakes
    the loop only when the loop waits for items, and the loop takes all
    that came meanwhile at once."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._items: list[StepEvent | BaseException | _End] = []
        self._lock = threading.Lock()
        self._waiter: asyncio.Future[None] | None = None

    def put(self, item: StepEvent | BaseException | _End) -> None:
        """From the worker thread."""
        with self._lock:
            self._items.append(item)
            waiter, self._waiter = self._waiter, None
        if waiter is not None:
            self._loop.call_soon_threadsafe(_wake, waiter)

    async def take(self) -> list[StepEvent | BaseException | _End]:
        """On the loop: every item put since the last take, waiting for one."""
        with self._lock:
            if self._items:
                items, self._items = self._items, []
                return items
            self._waiter = waiter = self._loop.create_future()
        await waiter
        with self._lock:
            items, self._items = self._items, []
        return items


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():  # not cancelled: the request still waits
        waiter.set_result(None)
