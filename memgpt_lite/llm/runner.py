"""Running the async step core (and a tool's coroutine) from synchronous code.

Here, beside the event loops of the model client (endpoint.py, blocking_io.py)
it shares, so that the loop, the tools and the agent above all reach it.

`run(coro)` runs a coroutine to its end for a synchronous caller. In a thread
with no running event loop (a script, the CLI, a worker thread) it runs on
that thread's own event loop, kept for the next call so that the model
client's pooled connections are reused; everything stays in the caller's
thread. Since nothing else runs on that loop, its HTTP may block the thread
(blocking_io.py), which is cheaper. Inside a running loop (Jupyter), it
runs on the private background loop of endpoint.py instead, since a loop
cannot be re-entered.

Ctrl-C, wherever it lands, cancels the coroutine and lets it unwind (the step
lock is released, and what was stored stays consistent) before the
KeyboardInterrupt goes on to the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncGenerator, Callable, Coroutine, Iterator
from typing import Any, TypeVar

from memgpt_lite.llm.blocking_io import allow_blocking
from memgpt_lite.llm.endpoint import run_sync

T = TypeVar("T")

_thread = threading.local()


def _thread_loop() -> asyncio.AbstractEventLoop:
    loop = getattr(_thread, "loop", None)
    if loop is None or loop.is_closed():
        loop = _thread.loop = asyncio.new_event_loop()
        allow_blocking(loop)  # only this thread's synchronous calls run on it
    return loop


def _in_running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def run(coro: Coroutine[Any, Any, T]) -> T:
    """The result of `coro`, run from synchronous code (see the module's doc)."""
    if _in_running_loop():
        return run_sync(coro)
    loop = _thread_loop()
    task = loop.create_task(coro)
    try:
        return loop.run_until_complete(task)
    except BaseException:
        if not task.done():  # interrupted outside the coroutine: let it unwind
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                loop.run_until_complete(task)
        elif not task.cancelled():
            task.exception()  # retrieved, so asyncio does not report it as lost
        # One more turn of the loop: what the failure left scheduled (the
        # close of a timed-out request's socket, say) happens now, not at the
        # next call, which may come much later.
        loop.run_until_complete(asyncio.sleep(0))
        raise


def iterate(events: AsyncGenerator[T, None]) -> Iterator[T]:
    """The items of an async generator, for a synchronous `for` loop. A caller
    that stops early (break, an exception) closes the generator, so its
    cleanup runs before this returns."""
    try:
        while True:
            try:
                item = run(events.__anext__())
            except StopAsyncIteration:
                return
            yield item
    finally:
        run(events.aclose())


def drive(events: AsyncGenerator[T, None], on_item: Callable[[T], None]) -> None:
    """Run an async generator to its end from synchronous code, handing each
    item to `on_item` as it comes: `iterate` for a caller that only passes the
    items on. It is one `run`, not one per item (each of which is a task and
    a turn of the loop). If `on_item` raises, the generator is closed (its
    cleanup runs) and the error goes on to the caller."""

    async def each() -> None:
        async with contextlib.aclosing(events) as items:
            async for item in items:
                on_item(item)

    run(each())
