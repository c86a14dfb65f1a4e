"""One MCP server's session, held by a task on the connections' event loop.

The SDK's client is an async context manager whose transport (a process
for stdio, an HTTP client for streamable HTTP) must be entered and left by
the same task, so one task (`_hold`) enters it and waits until the session
is stopped; calls are made from other tasks of the same loop meanwhile.

A session knows when its server went away: the transport's read stream is
watched, and its end (a stdio server that exited, an HTTP server that hung
up) marks the session `ended`, so the next call starts the server anew
instead of writing to a dead one. A stdio server's stderr goes to a
temporary file of its own (never to our terminal), whose last line is told
when the server fails to start or dies.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from importlib import metadata
from types import TracebackType
from typing import Any, TextIO

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
from mcp.types import Implementation

from memgpt_lite.models import MCPServer

log = logging.getLogger(__name__)

# A stdio server's stderr file is emptied when it grows past this, so a
# chatty server kept for days cannot fill the disk.
STDERR_CAP_BYTES = 1024 * 1024
# How much of the stderr file's end is read for its last line.
STDERR_TAIL_BYTES = 4096
# The HTTP client's limits for streamable HTTP (each call has its own
# timeout on top); the read limit is long, as a response may stream.
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


class StderrLog:
    """A stdio server's stderr: an unlinked temporary file opened for
    appending, so that emptying it (`trim`) leaves the server writing at its
    new end."""

    def __init__(self) -> None:
        fd, path = tempfile.mkstemp(prefix="memgpt-mcp-", suffix=".log")
        os.close(fd)
        self.file: TextIO = open(path, "a+", encoding="utf-8", errors="replace")  # noqa: SIM115 - kept open for the server's life
        os.unlink(path)

    def last_line(self) -> str:
        """The last line the server wrote, cut to a sensible length ("" if none)."""
        fd = self.file.fileno()
        size = os.fstat(fd).st_size
        tail = os.pread(fd, STDERR_TAIL_BYTES, max(0, size - STDERR_TAIL_BYTES))
        lines = [line.strip() for line in tail.decode("utf-8", "replace").splitlines()]
        said = [line for line in lines if line]
        return said[-1][:300] if said else ""

    def trim(self) -> None:
        if os.fstat(self.file.fileno()).st_size > STDERR_CAP_BYTES:
            self.file.truncate(0)

    def close(self) -> None:
        self.file.close()


class _WatchedReadStream:
    """The transport's read stream, telling `on_end` once it has ended (the
    server is gone). Everything else is the wrapped stream's."""

    def __init__(self, inner: Any, on_end: Any) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:  # read by the SDK's dispatcher when present
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._on_end()
            raise

    def __aiter__(self) -> _WatchedReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._on_end()
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedReadStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class Session:
    """A started server and its client (see the module's doc). Made, used
    and stopped on the connections' event loop only."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self.client: Client | None = None
        self.ended = False  # the server went away, or the session was stopped
        self.retired = False  # its stop is under way (connections.py)
        self.stderr = StderrLog() if server.transport == "stdio" else None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None
        self._said = ""  # the stderr's last line, kept when the file is closed

    @property
    def alive(self) -> bool:
        return self.client is not None and not self.ended

    async def start(self) -> None:
        """Start the server and open the session; its error raised if it cannot."""
        ready = asyncio.Event()
        self._task = asyncio.create_task(self._hold(ready), name=f"mcp:{self.server.name}")
        await ready.wait()
        if self._failure is not None:
            raise self._failure

    async def stop(self) -> None:
        """Close the session and stop the server (the SDK bounds every wait of
        a stdio server's shutdown: stdin closed, then SIGTERM, then SIGKILL)."""
        self.ended = True
        self._stop.set()
        task = self._task
        if task is not None:
            if self.client is None and not task.done():
                task.cancel()  # still starting (a handshake that hangs): abandoned
            await asyncio.wait([task])  # not its error: it was logged
        if self.stderr is not None:
            self._said = self.stderr.last_line()
            self.stderr.close()
            self.stderr = None

    def last_words(self) -> str:
        """'; its last output: ...' with the last line of a stdio server's
        stderr, or ''."""
        said = self.stderr.last_line() if self.stderr is not None else self._said
        return f"; its last output: {said}" if said else ""

    def _ended(self) -> None:
        self.ended = True

    async def _hold(self, ready: asyncio.Event) -> None:
        try:
            async with AsyncExitStack() as stack:
                transport = await stack.enter_async_context(self._transport())
                client = Client(transport, cache=None, client_info=_CLIENT_INFO)
                self.client = await stack.enter_async_context(client)
                ready.set()
                await self._stop.wait()
        # Whatever the SDK raises for a server that cannot start or breaks
        # (OSError, its MCPError, HTTP errors, an ExceptionGroup of them)
        # ends this session; the caller is told in one line, and the
        # traceback goes to the log.
        except Exception as exc:  # noqa: BLE001 - see above
            log.debug("MCP server %s: the session ended: %r", self.server.name, exc, exc_info=exc)
            if not ready.is_set():
                self._failure = exc
        finally:
            self.client = None
            self.ended = True
            ready.set()

    @asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        """The SDK's transport for this server, its read stream watched."""
        server = self.server
        async with AsyncExitStack() as stack:
            if server.transport == "stdio":
                params = StdioServerParameters(
                    command=server.command or "", args=list(server.args), env=dict(server.env)
                )
                assert self.stderr is not None
                inner = stdio_client(params, errlog=self.stderr.file)
            else:
                http = httpx2.AsyncClient(headers=dict(server.headers), timeout=HTTP_TIMEOUT)
                await stack.enter_async_context(http)
                inner = streamable_http_client(server.url or "", http_client=http)
            read, write = await stack.enter_async_context(inner)
            yield _StreamsTransport(_WatchedReadStream(read, self._ended), write)


class _StreamsTransport:
    """Streams already open, as the `Transport` the SDK's `Client` enters."""

    def __init__(self, read: Any, write: Any) -> None:
        self.streams = (read, write)

    async def __aenter__(self) -> tuple[Any, Any]:
        return self.streams

    async def __aexit__(self, *exc: object) -> None:
        return None


def _client_info() -> Implementation:
    try:
        version = metadata.version("memgpt-lite")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        version = "0"
    return Implementation(name="memgpt-lite", version=version)


_CLIENT_INFO = _client_info()
