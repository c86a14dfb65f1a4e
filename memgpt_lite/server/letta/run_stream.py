"""A run's stream: its chunks numbered, kept for a background run, and read
again from any `seq_id` (Letta's retrieve_stream, POST /v1/runs/{id}/stream).

Every chunk of a streamed send (each Letta message, `stop_reason`,
`usage_statistics`, `error_message`, `ping`) carries the run's `run_id` and
a `seq_id`: 1, 2, 3... in the order sent. A ping is not a step's chunk: it
carries the `seq_id` of the chunk before it, so resuming after a ping's
seq_id misses nothing.

A background send (`background: true`) runs its step apart from the HTTP
connection. Its writer, a task of the server, keeps each batch of chunks in
the database as the step makes them (`letta_run_chunks`), then the stream's
end (`[DONE]`, under the next seq_id) together with the run's end. The
client's stream, and any later one, follows the kept chunks from a seq_id
(`follow`): what is kept, then what comes, woken at once by a write of this
process and polling for another's, until `[DONE]`. A run whose server went
away without its end (ended as abandoned, live_runs.py) ends its stream
with its stop reason. Chunks are kept three hours (`CHUNKS_KEPT`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse

from memgpt_lite.agent.workspace import Run
from memgpt_lite.errors import ConfigError, MemGPTError
from memgpt_lite.events import StepEvent
from memgpt_lite.models import utcnow
from memgpt_lite.server.context import ServerContext
from memgpt_lite.server.letta.run_life import LiveRun, StepEnd
from memgpt_lite.server.live_runs import CHUNKS_KEPT
from memgpt_lite.server.sse import SSE_HEADERS

log = logging.getLogger(__name__)

T = TypeVar("T")
Chunk = dict[str, Any]

DONE = "[DONE]"
# How often a follower with nothing new reads whether its run ended.
RUN_CHECK_SECONDS = 1.0
# How long a follower of a run this process writes waits for a write.
LOCAL_WAIT_SECONDS = 1.0


def chunk_json(chunk: Chunk) -> str:
    return json.dumps(chunk, default=str, ensure_ascii=False)


class RunChunks:
    """A run's stream, numbered (see the module's doc)."""

    def __init__(self, run_id: str, seq_id: int = 0) -> None:
        self.run_id, self.seq_id = run_id, seq_id

    def stamp(self, chunk: Chunk) -> Chunk:
        self.seq_id += 1
        chunk["run_id"], chunk["seq_id"] = self.run_id, self.seq_id
        return chunk

    def ping(self) -> Chunk:
        return {
            "id": f"ping-{uuid.uuid4().hex}",
            "date": utcnow(),
            "message_type": "ping",
            "run_id": self.run_id,
            "seq_id": self.seq_id,
        }


async def pinged(items: AsyncIterator[T], seconds: float | None) -> AsyncIterator[T | None]:
    """`items`, with None each time `seconds` pass without one (a ping's
    turn); no pings when `seconds` is None."""
    if seconds is None:
        async for item in items:
            yield item
        return
    waiting: asyncio.Future[T] | None = None
    try:
        while True:
            waiting = waiting or asyncio.ensure_future(anext(items))
            done, _ = await asyncio.wait({waiting}, timeout=seconds)
            if not done:
                yield None
                continue
            try:
                item = waiting.result()
            except StopAsyncIteration:
                return
            waiting = None
            yield item
    finally:
        if waiting is not None and not waiting.done():
            waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await waiting


# A background run (see the module's doc)

Turn = Callable[[StepEvent], Awaitable[list[Chunk]]]


async def run_in_background(
    ctx: ServerContext, live: LiveRun, batches: AsyncIterator[list[StepEvent]], turn: Turn
) -> None:
    """Start the background run's writer, which turns the step's `batches`
    of events into chunks (`turn`) and keeps them; return once the step
    began. An error that stopped it before it began is raised here, as a
    send answers it (the run ended failed)."""
    started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    started.add_done_callback(_retrieved)  # read even when its client has left
    ctx.runs.keep(asyncio.create_task(_write(ctx, live, batches, turn, started)))
    await asyncio.shield(started)  # a client that leaves does not stop the run


def _retrieved(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()


async def _write(
    ctx: ServerContext,
    live: LiveRun,
    batches: AsyncIterator[list[StepEvent]],
    turn: Turn,
    started: asyncio.Future[None],
) -> None:
    run_id, chunks = live.run.id, RunChunks(live.run.id)
    end: StepEnd = None
    try:
        async for batch in batches:
            end = batch[-1]
            made = [chunks.stamp(chunk) for event in batch for chunk in await turn(event)]
            if made:
                kept = [(chunk["seq_id"], chunk_json(chunk)) for chunk in made]
                await run_in_threadpool(ctx.workspace.store.add_run_chunks, run_id, kept)
                ctx.runs.wrote(run_id)
            if not started.done():
                started.set_result(None)
    except asyncio.CancelledError:  # the server stops: the keeper ends the run
        started.cancel()
        raise
    except MemGPTError as exc:  # refused before it began, or the database failed
        end = exc
    except Exception as exc:  # noqa: BLE001 - a bug: logged, and the run ended failed
        log.exception("the background run %s failed", run_id)
        end = exc
    if not started.done() and isinstance(end, BaseException):
        started.set_exception(end)
    elif not started.done():
        started.set_result(None)
    await run_in_threadpool(live.ended, end, (chunks.seq_id + 1, DONE))
    ctx.runs.wrote(run_id)


# Following a background run's kept chunks (see the module's doc)


def check_streamable(run: Run) -> None:
    """A ConfigError unless the run's stream is kept."""
    if not run.background:
        raise ConfigError(
            f"run {run.id!r} was not sent with background: true; its stream was not kept"
        )
    if run.created_at < utcnow() - CHUNKS_KEPT:
        hours = CHUNKS_KEPT.total_seconds() / 3600
        raise ConfigError(f"run {run.id!r} is over {hours:g} hours old: its stream is gone")


def follow_response(
    ctx: ServerContext, run: Run, after: int, *, batch_size: int, poll_seconds: float, pings: bool
) -> StreamingResponse:
    """The run's stream after seq_id `after`, as server-sent events."""
    frames = follow(ctx, run, after, batch_size=batch_size, poll_seconds=poll_seconds, pings=pings)
    return StreamingResponse(frames, media_type="text/event-stream", headers=SSE_HEADERS)


async def follow(
    ctx: ServerContext, run: Run, after: int, *, batch_size: int, poll_seconds: float, pings: bool
) -> AsyncIterator[str]:
    """The frames of the run's kept chunks after seq_id `after`, then of
    those that come, until its end (see the module's doc)."""
    cursor, over = after, False
    last_sent = next_check = time.monotonic()
    written = ctx.runs.written(run.id)
    try:
        while True:
            written = ctx.runs.written(run.id)  # before reading: a write after it sets it
            kept = await run_in_threadpool(
                ctx.workspace.store.run_chunks, run.id, cursor, batch_size
            )
            for seq_id, text in kept:
                if text == DONE:
                    yield f"data: {DONE}\n\n"
                    return
                cursor = seq_id
                yield f"data: {text}\n\n"
            now = time.monotonic()
            if kept:
                last_sent = now
                continue
            if over:  # ended without its last chunk: its server went away
                yield "".join(f"data: {chunk_json(c)}\n\n" for c in _abandoned(run, cursor))
                yield f"data: {DONE}\n\n"
                return
            if now >= next_check:
                next_check = now + RUN_CHECK_SECONDS
                run = await run_in_threadpool(ctx.workspace.run, run.id, run.owner)
                over = run.completed_at is not None
                if over:
                    continue  # its last chunk is kept with its end: read once more
            if pings and now - last_sent >= ctx.runs.ping_seconds:
                last_sent = now
                yield f"data: {chunk_json(RunChunks(run.id, cursor).ping())}\n\n"
            wait = LOCAL_WAIT_SECONDS if ctx.runs.has(run.id) else poll_seconds
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(written.wait(), wait)
    finally:
        ctx.runs.stopped_following(run.id, written)


def _abandoned(run: Run, cursor: int) -> list[Chunk]:
    """The end of the stream of a run whose server went away."""
    chunks = RunChunks(run.id, cursor)
    error = {
        "message_type": "error_message",
        "error_type": "RunAbandoned",
        "message": run.error or "the run ended without the end of its stream",
        "detail": None,
    }
    reason = {"message_type": "stop_reason", "stop_reason": run.stop_reason or "error"}
    return [chunks.stamp(error), chunks.stamp(reason)]
