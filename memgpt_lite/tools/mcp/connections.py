"""The MCP connections of a process: servers started on first use and kept.

The official `mcp` SDK is async (anyio), while tools run from synchronous
code and from the step's own event loop alike, in any thread. So one
background thread runs an event loop that owns every session
(session.py): each method here hands a coroutine to that loop and waits
for it, synchronously (`list_tools`, `call_tool`) or awaiting
(`acall_tool`). A server is a `models.MCPServer`; its session is keyed by
its owner and name (two users may each have a server of one name), and a
configuration that changed starts the server anew.

- A server starts at its first use, bounded by `start_timeout`, and is kept.
- A server that went away (a stdio process that exited, an HTTP server that
  hung up) is started again at the next call. A call that was in flight when
  it went away fails: it is not sent twice, since the server may have acted.
- A call that outlasts its timeout fails with a clear error, and its session
  is reset (a stdio server is stopped), so the next call starts afresh. So
  does an HTTP server's protocol error (such as a session it no longer knows,
  after a restart).
- `close()` stops every server; it runs at exit too (atexit).

Failures to reach or start a server raise `MCPServerError` for a listing;
for a call they are the call's result (`MCPCallResult(ok=False)`), as every
tool error is.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import threading
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

import anyio
from mcp import MCPError
from mcp.types import CONNECTION_CLOSED
from pydantic import ValidationError

from memgpt_lite.errors import RemoteError
from memgpt_lite.models import MCPServer
from memgpt_lite.tools.mcp.config import ServerKey, same_server, server_key
from memgpt_lite.tools.mcp.results import MCPCallResult, MCPToolInfo, call_result, tool_info
from memgpt_lite.tools.mcp.session import Session

log = logging.getLogger(__name__)

T = TypeVar("T")

# The default limit on one tool call, in seconds.
DEFAULT_CALL_TIMEOUT = 60.0
# The default limit on starting a server (its process and the handshake).
DEFAULT_START_TIMEOUT = 30.0
# How long `close()` waits for the servers to stop (each stop is bounded by
# the SDK too: a stdio server gets its stdin closed, then SIGTERM, SIGKILL).
CLOSE_TIMEOUT = 30.0
# The most pages of a server's tool list read.
MAX_TOOL_PAGES = 100


class MCPServerError(RemoteError):
    """An MCP server could not be started, reached or understood."""


class MCPConnections:
    """The sessions of this process's MCP servers (see the module's doc)."""

    def __init__(self, start_timeout: float = DEFAULT_START_TIMEOUT) -> None:
        self.start_timeout = start_timeout
        self._guard = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        # Touched on the loop only.
        self._sessions: dict[ServerKey, Session] = {}
        self._starting: dict[ServerKey, asyncio.Lock] = {}
        self._stopping: set[asyncio.Task[None]] = set()

    # What callers use, from any thread but the loop's

    def list_tools(
        self, server: MCPServer, timeout: float = DEFAULT_CALL_TIMEOUT
    ) -> list[MCPToolInfo]:
        """The server's tools, as it lists them; `MCPServerError` if it cannot."""
        return self._wait(self._list_tools(server, timeout))

    def call_tool(
        self,
        server: MCPServer,
        tool: str,
        arguments: Mapping[str, Any],
        timeout: float = DEFAULT_CALL_TIMEOUT,
    ) -> MCPCallResult:
        """Call one tool of the server; its result or error, never raised."""
        return self._wait(self._call_tool(server, tool, dict(arguments), timeout))

    async def acall_tool(
        self,
        server: MCPServer,
        tool: str,
        arguments: Mapping[str, Any],
        timeout: float = DEFAULT_CALL_TIMEOUT,
    ) -> MCPCallResult:
        """`call_tool`, awaited from another event loop (a step's)."""
        future = self._submit(self._call_tool(server, tool, dict(arguments), timeout))
        return await asyncio.wrap_future(future)

    def is_running(self, server: MCPServer) -> bool:
        """Whether `server` (its owner's server of its name) has a live session now."""
        if self._loop is None:
            return False
        return self._wait(self._is_running(server_key(server)))

    def stop(self, server: MCPServer) -> None:
        """Stop `server` (its owner's server of its name), if it runs; it
        starts again when used. Returns once it has stopped."""
        if self._loop is not None:
            self._wait(self._stop_server(server_key(server)))

    def close(self) -> None:
        """Stop every server and the background loop. Using this object
        again afterwards starts a new loop."""
        with self._guard:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        atexit.unregister(self.close)
        done = asyncio.run_coroutine_threadsafe(self._stop_all(), loop)
        try:
            done.result(CLOSE_TIMEOUT)
        except concurrent.futures.TimeoutError:
            log.warning("MCP servers still stopping after %s s; leaving them", CLOSE_TIMEOUT)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(CLOSE_TIMEOUT)
        if not thread.is_alive():
            loop.close()

    def __enter__(self) -> MCPConnections:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # The bridge to the loop

    def _submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        with self._guard:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=self._loop.run_forever, name="memgpt-mcp", daemon=True
                )
                self._thread.start()
                atexit.register(self.close)
            return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def _wait(self, coro: Coroutine[Any, Any, T]) -> T:
        future = self._submit(coro)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # Ctrl-C while waiting: the call is abandoned too
            raise

    # On the loop

    async def _session(self, server: MCPServer) -> Session:
        """The server's live session, started (or started again) if needed."""
        key = server_key(server)
        lock = self._starting.setdefault(key, asyncio.Lock())
        async with lock:
            session = self._sessions.get(key)
            if session is not None and session.alive and same_server(session.server, server):
                return session
            if session is not None:
                self._retire(session)
            session = Session(server)
            try:
                with anyio.fail_after(self.start_timeout):
                    await session.start()
            except TimeoutError:
                await session.stop()
                raise MCPServerError(
                    f"MCP server {server.name!r} did not start within {self.start_timeout:g} s"
                    f"{session.last_words()}"
                ) from None
            except Exception as exc:  # noqa: BLE001 - logged by the session; told in one line
                await session.stop()
                raise MCPServerError(
                    f"MCP server {server.name!r} could not start: {describe(exc)}"
                    f"{session.last_words()}"
                ) from None
            self._sessions[key] = session
            return session

    def _retire(self, session: Session) -> None:
        """Forget `session` (if it is still its server's) and stop it in the
        background (a stdio server may take seconds to stop; nobody waits
        for that but `close`). A call that failed on an old session never
        stops the new one another call started meanwhile."""
        key = server_key(session.server)
        if self._sessions.get(key) is session:
            del self._sessions[key]
        if session.retired:
            return
        session.retired = session.ended = True
        task = asyncio.get_running_loop().create_task(session.stop())
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)

    async def _list_tools(self, server: MCPServer, timeout: float) -> list[MCPToolInfo]:
        session = await self._session(server)
        client = session.client
        if client is None:
            raise MCPServerError(f"MCP server {server.name!r} went away{session.last_words()}")
        found: list[MCPToolInfo] = []
        cursor: str | None = None
        try:
            with anyio.fail_after(timeout):
                for _ in range(MAX_TOOL_PAGES):
                    page = await client.list_tools(cursor=cursor)
                    found += [tool_info(tool) for tool in page.tools]
                    cursor = page.next_cursor
                    if cursor is None:
                        break
        except TimeoutError:
            self._retire(session)
            raise MCPServerError(
                f"MCP server {server.name!r} did not list its tools within {timeout:g} s"
            ) from None
        except (MCPError, ValidationError) as exc:
            if _closed(exc):
                self._retire(session)
            raise MCPServerError(
                f"MCP server {server.name!r} could not list its tools: {describe(exc)}"
                f"{session.last_words()}"
            ) from None
        return found

    async def _call_tool(
        self, server: MCPServer, tool: str, arguments: dict[str, Any], timeout: float
    ) -> MCPCallResult:
        try:
            session = await self._session(server)
        except MCPServerError as exc:
            return MCPCallResult(f"Error: {exc}", ok=False)
        client = session.client
        if client is None:
            return MCPCallResult(f"Error: MCP server {server.name!r} went away", ok=False)
        where = f"{tool} (MCP server {server.name!r})"
        try:
            with anyio.fail_after(timeout):
                result = await client.call_tool(tool, arguments)
        except TimeoutError:
            self._retire(session)
            return MCPCallResult(
                f"Error: {where} did not answer within {timeout:g} s; the server's session "
                "was reset, and the next call starts it again.",
                ok=False,
            )
        except (MCPError, ValidationError) as exc:
            if not _closed(exc):
                if server.transport == "http":
                    # An HTTP server answers a session it no longer knows (it
                    # restarted) with an error too; a new session costs only
                    # a handshake, so the next call starts one.
                    self._retire(session)
                return MCPCallResult(f"Error: {where} refused the call: {describe(exc)}", ok=False)
            words = session.last_words()
            self._retire(session)
            return MCPCallResult(
                f"Error: {where}: the server went away during the call{words}; "
                "the next call starts it again.",
                ok=False,
            )
        finally:
            if session.stderr is not None:
                session.stderr.trim()
        return call_result(result)

    async def _is_running(self, key: ServerKey) -> bool:
        session = self._sessions.get(key)
        return session is not None and session.alive

    async def _stop_server(self, key: ServerKey) -> None:
        session = self._sessions.get(key)
        if session is not None:
            self._retire(session)
        if self._stopping:  # this one's stop, and any other under way
            await asyncio.wait(set(self._stopping))

    async def _stop_all(self) -> None:
        for session in list(self._sessions.values()):
            self._retire(session)
        self._starting.clear()  # its locks belong to this loop, which is ending
        if self._stopping:
            await asyncio.wait(set(self._stopping))


def _closed(exc: BaseException) -> bool:
    """Whether an SDK error says the connection is gone."""
    return isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED


def describe(exc: BaseException) -> str:
    """An error of the SDK or of its transport in one line: an exception
    group by its first leaf, an MCP error by its message."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return exc.message
    if isinstance(exc, ValidationError):
        return f"its answer is not valid MCP ({exc.error_count()} problems)"
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


_shared: MCPConnections | None = None
_shared_guard = threading.Lock()


def shared_connections() -> MCPConnections:
    """The process's connections, made on first use (closed at exit)."""
    global _shared
    with _shared_guard:
        if _shared is None:
            _shared = MCPConnections()
        return _shared
