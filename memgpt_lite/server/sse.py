"""Server-sent events: a step's events as `event:`/`data:` frames.

A stream's first event is awaited before the response starts, so an error
that stops a step before it begins (an unknown agent, an empty message) is an
ordinary JSON error with its status, not a 200 stream that breaks.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi.responses import StreamingResponse

# Proxies (nginx) buffer responses unless told not to; a stream must not wait.
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def frame(data: str | dict[str, Any], event: str | None = None) -> str:
    """One server-sent event; `data` as given, or as JSON."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    if "\n" not in text:  # JSON as pydantic and json.dumps write it: one line
        return f"event: {event}\ndata: {text}\n\n" if event else f"data: {text}\n\n"
    lines = [f"event: {event}"] if event else []
    lines += [f"data: {line}" for line in text.split("\n")]
    return "\n".join(lines) + "\n\n"


async def _chained(first: str, rest: AsyncIterator[str]) -> AsyncIterator[str]:
    yield first
    async for item in rest:
        yield item


async def sse_response(frames: AsyncIterator[str]) -> StreamingResponse:
    """A streaming response of `frames`, started once the first is ready:
    an error raised before it propagates to the route's error handler."""
    try:
        first = await anext(frames)
    except StopAsyncIteration:
        first = ""
    return StreamingResponse(
        _chained(first, frames), media_type="text/event-stream", headers=SSE_HEADERS
    )
