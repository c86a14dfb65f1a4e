"""Blocking HTTP for the event loops that run one synchronous call at a time.

`agent.step()` and `agent.stream()` run the async step core on their thread's
own event loop (runner.py), where nothing else runs while a step does.
There, the asyncio HTTP stack of the `openai` client costs 0.4-0.6 ms a
request more than plain blocking sockets (anyio streams, several turns of the
loop per request; benchmarks/step_overhead.py), about a fifth of a step's own
time. So the client of such a loop keeps everything of `openai.AsyncOpenAI`
(auth, errors, the request and response objects) but sends through httpx's
blocking transport, wrapped as an async one.

What the loop cannot do while a socket blocks is fire a timeout. So every
blocking connect, read and write is bounded by the request's deadline, which
`EndpointCall.within_deadline` publishes in `IO_DEADLINE`; past it, a read
raises httpx's ReadTimeout at once, and the caller reports the deadline. A
Ctrl-C interrupts the blocked read itself.

Loops elsewhere (astep in the caller's loop, the background loop) are not
touched, nor is any loop when proxies are configured in the environment:
httpx applies those only to the clients it builds itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import ssl
import time
import weakref
from collections.abc import AsyncIterator, Iterable, Iterator

import httpcore2  # the transport layer of httpx2
import httpx2

# The monotonic time by which the request in progress must be done, if any.
IO_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "memgpt_lite_io_deadline", default=None
)
_BLOCKING_LOOPS: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()


def allow_blocking(loop: asyncio.AbstractEventLoop) -> None:
    """Mark `loop` as one that runs a single synchronous call at a time, so
    its HTTP may block the thread instead of yielding to other tasks."""
    _BLOCKING_LOOPS.add(loop)


def blocking_allowed(loop: asyncio.AbstractEventLoop) -> bool:
    return loop in _BLOCKING_LOOPS


@contextlib.contextmanager
def io_deadline(seconds_left: float) -> Iterator[None]:
    """Bound the blocking I/O inside the block to `seconds_left` from now (or
    the deadline already set, if sooner)."""
    deadline = time.monotonic() + seconds_left
    outer = IO_DEADLINE.get()
    token = IO_DEADLINE.set(deadline if outer is None else min(outer, deadline))
    try:
        yield
    finally:
        IO_DEADLINE.reset(token)


def _bounded(timeout: float | None, on_expiry: type[Exception]) -> float | None:
    """`timeout`, shortened to what is left before the deadline."""
    deadline = IO_DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise on_expiry("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore2.NetworkStream):
    """A socket stream whose every wait ends by the deadline."""

    def __init__(self, stream: httpcore2.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _bounded(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _bounded(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore2.NetworkStream:
        timeout = _bounded(timeout, httpcore2.ConnectTimeout)
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> object:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore2.NetworkBackend):
    def __init__(self) -> None:
        self._backend = httpcore2.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.NetworkStream:
        timeout = _bounded(timeout, httpcore2.ConnectTimeout)
        stream = self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        return _DeadlineStream(stream)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class _AsyncView(httpx2.AsyncByteStream):
    """A blocking response body, read through the async interface."""

    def __init__(self, stream: httpx2.SyncByteStream) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for part in self._stream:
            yield part

    async def aclose(self) -> None:
        self._stream.close()


class BlockingTransport(httpx2.AsyncBaseTransport):
    """httpx's blocking transport behind the async transport interface."""

    def __init__(self, ssl_context: ssl.SSLContext) -> None:
        self._transport = httpx2.HTTPTransport(verify=ssl_context)
        # Its pool, rebuilt with the deadline's network backend (the one
        # thing HTTPTransport does not take as an argument).
        self._transport._pool = httpcore2.ConnectionPool(
            ssl_context=ssl_context,
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=_DeadlineBackend(),
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = self._transport.handle_request(request)
        assert isinstance(response.stream, httpx2.SyncByteStream)
        return httpx2.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_AsyncView(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        """Close the pooled sockets now, from any thread (they block)."""
        self._transport.close()


def blocking_transport(ssl_context: ssl.SSLContext) -> BlockingTransport | None:
    """httpx's blocking transport behind the async interface, or None when
    the environment names proxies (httpx's own clients apply them)."""
    import urllib.request  # only here: it costs start-up time

    if urllib.request.getproxies():
        return None
    return BlockingTransport(ssl_context)


def blocking_http_client(ssl_context: ssl.SSLContext) -> httpx2.AsyncClient | None:
    """An async httpx client that sends through blocking sockets, or None
    when the environment names proxies (httpx's own clients apply them)."""
    transport = blocking_transport(ssl_context)
    if transport is None:
        return None
    return httpx2.AsyncClient(transport=transport, follow_redirects=True)
