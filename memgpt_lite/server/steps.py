"""Running agents' steps for the server, off its event loop.

A step does blocking work (the database, the model's HTTP), so each runs in a
worker thread through the synchronous `agent.stream()` (the agent's own
runner, agent/runner.py, runs it), and its events cross to the event loop
through a queue. Two rules hold here, in one place:

- Sends to one agent run one at a time, in the order they arrived: an
  `asyncio.Lock` per agent (FIFO) is taken before the step goes to a thread.
  The step lock in the database still orders them against other processes.
- A step, once started, runs to its end even if the client goes away: the
  events are dropped, but the agent's lock is released only when the thread
  is done, so what the step stored is complete and the next send waits for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

from memgpt_lite.agent import Agent
from memgpt_lite.errors import MemGPTError
from memgpt_lite.events import StepEvent, StepFailed, StepStarted
from memgpt_lite.models import StepInput, StepResult

T = TypeVar("T")

# Told, in the worker thread, how a step ended: its result, its last event,
# or the error it raised (sendonce.py records a keyed send's answer).
Ended = Callable[[StepResult | StepEvent | BaseException | None], None]

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

    async def _start(self, agent_id: str, work: Callable[[], T]) -> asyncio.Future[T]:
        """Run `work` in a worker thread once the agent's earlier sends are
        done; the agent's lock is released when `work` ends, whoever waits."""
        lock = await self._acquire(agent_id)
        try:
            future = asyncio.get_running_loop().run_in_executor(self._pool, work)
        except BaseException:
            self._release(agent_id, lock)
            raise
        future.add_done_callback(lambda _: self._release(agent_id, lock))
        return future

    async def result(
        self,
        agent_id: str,
        load: Callable[[], Agent],
        message: StepInput,
        ended: Ended | None = None,
    ) -> StepResult:
        """The result of one step of the agent `load()` opens, run in a worker
        thread through `agent.step` (lighter than its events: no hand-over per
        event); its error raised. The step goes on if the caller is cancelled.
        `message` is what the core's step takes: the user's message, or the
        user's answer (`Approval`s) to the calls waiting for approval.
        `ended` is called in the thread with the result or the error."""

        def work() -> StepResult:
            try:
                result = load().step(message)
            except BaseException as exc:
                if ended is not None:
                    ended(exc)
                raise
            if ended is not None:
                ended(result)
            return result

        return await asyncio.shield(await self._start(agent_id, work))

    async def events(
        self,
        agent_id: str,
        load: Callable[[], Agent],
        message: StepInput,
        ended: Ended | None = None,
    ) -> AsyncIterator[StepEvent]:
        """The events of one step of the agent `load()` opens (in the worker
        thread), as they happen. An error that stops the step before it
        starts is raised here, not sent as an event: one raised before the step
        runs (an empty message, no API key) and a step that fails before its
        `StepStarted` (a message while a call waits for approval, an answer
        that fits no waiting call), so a route answers it with its status.
        `ended` is called in the thread with the last event or the error,
        whether or not anyone still reads the events."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[StepEvent | BaseException | _End] = asyncio.Queue()

        def put(item: StepEvent | BaseException | _End) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def produce() -> None:
            last: StepEvent | BaseException | None = None
            try:
                for last in load().stream(message):
                    put(last)
            except BaseException as exc:  # noqa: BLE001 - the request that waits re-raises it
                last = exc
                put(exc)
            finally:
                if ended is not None:
                    ended(last)
                put(_END)

        await self._start(agent_id, produce)
        started = False
        while not isinstance(item := await queue.get(), _End):
            if isinstance(item, BaseException):
                raise item
            if isinstance(item, StepFailed) and not started:
                raise item.error or MemGPTError(item.message)
            started = started or isinstance(item, StepStarted)
            yield item
