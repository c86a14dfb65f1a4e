"""One request to an OpenAI-compatible endpoint, bounded as a whole.

The `openai` client's own timeouts apply to each read, so a server that sends
a byte every few seconds is never timed out, and its retries multiply any
wait. Here the client only connects and sends (max_retries=0, a connect
timeout and no other); `EndpointCall` does the rest:

- its `timeout` bounds the whole request: every attempt, every backoff, every
  byte of the answer, headers included. It is an asyncio deadline, so a hung or
  dripping server is cut off wherever it is;
- 408, 409, 429 and 5xx answers, connect timeouts and lost connections are
  retried with exponential backoff (0.5 s doubling up to 8 s, less up to 25%
  jitter), or after the wait the server asks for (`retry-after-ms`,
  `Retry-After`). A wait longer than the time left fails at once;
- a streamed body is read one await at a time, each under the same deadline
  (`within_deadline`); a body lost before any of it was used may be retried
  (`can_retry`, `pause_before_retry`) from the same budget of retries;
- every failure is one `LLMError` line naming the endpoint and what was wrong.

`run_sync` runs such a coroutine for synchronous callers on one private event
loop in a daemon thread, shared by the process: it works from many threads at
once and inside a running event loop (Jupyter), and Ctrl-C in the caller
cancels the request and closes its connection.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import math
import os
import random
import re
import socket
import ssl
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import httpx2

from memgpt_lite.errors import LLMError
from memgpt_lite.llm.answer import body_summary, html_title, looks_like_html, one_line
from memgpt_lite.llm.blocking_io import (
    IO_DEADLINE,
    BlockingTransport,
    blocking_allowed,
    blocking_transport,
)
from memgpt_lite.settings.endpoint import URL_EXAMPLE

# openai is imported where first used: its import takes ~0.5 s, which a
# command that never calls a model (`memgpt-lite agents`) need not pay.
if TYPE_CHECKING:
    import openai

    ClientsByLoop = weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, openai.AsyncOpenAI]

T = TypeVar("T")

CONNECT_TIMEOUT_SECONDS = 10.0
INITIAL_BACKOFF_SECONDS = 0.5
MAX_BACKOFF_SECONDS = 8.0
_RETRIED_STATUSES = {408, 409, 429}
# How long a cancelled request may take to close its connection after Ctrl-C.
_CANCEL_GRACE_SECONDS = 5.0
# How often a waiting caller wakes up, so Ctrl-C is seen on every platform.
_WAKE_SECONDS = 0.25


# ------------------------------------------------------------ what came back


def error_text(exc: openai.APIStatusError) -> str:
    """The endpoint's own error message, on one line, without the client's decoration."""
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return one_line(inner["message"])
        if isinstance(body.get("message"), str):
            return one_line(body["message"])
    if isinstance(body, str) and body.strip():
        return body_summary(body, exc.response.headers.get("content-type", ""))
    return one_line(exc.message)


def json_answer(response: httpx2.Response, name: str, parse: Callable[[str], Any]) -> Any:
    """The JSON value of a 2xx answer, parsed with `parse` (which raises
    ValueError or RecursionError for what it refuses), or an LLMError that says
    what came instead."""
    content_type = response.headers.get("content-type", "")
    text = response.content.decode("utf-8", errors="replace")
    if looks_like_html(content_type, text):
        raise LLMError(
            f"{name} answered with an HTML page{html_title(text)}, not JSON: check the "
            f"port, and that the URL is the API's, usually ending in /v1 (like {URL_EXAMPLE})"
        )
    if not text.strip():
        raise LLMError(f"{name} answered {response.status_code} with an empty body, not JSON")
    try:
        return parse(text)
    except json.JSONDecodeError as exc:
        reason = f"{exc.msg} at position {exc.pos}"
    except RecursionError:
        reason = "nested too deeply"
    except ValueError as exc:  # text.JSONProblem says "not valid JSON (why)"
        reason = re.sub(r"^not valid JSON \((.*)\)$", r"\1", str(exc))
    hint = "" if "json" in content_type.lower() else "; is the URL the API's, ending in /v1?"
    raise LLMError(
        f"{name} answered invalid JSON ({one_line(reason, 100)}): {body_summary(text)}{hint}"
    )


def connection_problem(exc: openai.APIConnectionError) -> str:
    """Why a connection failed, in a few words."""
    causes: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and len(causes) < 10:
        causes.append(cause)
        cause = cause.__cause__ or cause.__context__
    for cause in causes:
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused (is the server running, on this port?)"
        if isinstance(cause, socket.gaierror):
            return "host not found"
        if isinstance(cause, httpx2.ConnectTimeout):
            return "no connection within the connect timeout"
        if isinstance(cause, ssl.SSLError):
            return f"TLS failed (an https:// URL for an http:// server?): {one_line(str(cause))}"
        if isinstance(cause, httpx2.RemoteProtocolError | httpx2.ReadError | httpx2.WriteError):
            return "the connection was closed without an answer"
    for cause in causes[1:]:
        if str(cause):
            return one_line(str(cause))
    return one_line(str(exc))


# ------------------------------------------------------------------- retries


def retry_after(headers: httpx2.Headers) -> float | None:
    """The wait the server asks for, in seconds (inf for an absurd one), if any."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue
        if not math.isnan(seconds):
            return max(0.0, seconds)
    date = headers.get("retry-after")
    try:
        parsed = email.utils.parsedate_tz(date) if date else None
        return None if parsed is None else max(0.0, email.utils.mktime_tz(parsed) - time.time())
    except (ValueError, OverflowError):
        return None


def should_retry(response: httpx2.Response) -> bool:
    verdict = response.headers.get("x-should-retry")  # OpenAI's own hint wins
    if verdict in ("true", "false"):
        return verdict == "true"
    return response.status_code in _RETRIED_STATUSES or response.status_code >= 500


def backoff(retry: int) -> float:
    """The wait before retry number `retry` (0 for the first)."""
    return min(INITIAL_BACKOFF_SECONDS * 2.0 ** min(retry, 32), MAX_BACKOFF_SECONDS) * (
        1 - 0.25 * random.random()
    )


def client_timeout(timeout: float) -> httpx2.Timeout:
    """The client's own timeouts: connecting only. The rest is the deadline's."""
    return httpx2.Timeout(None, connect=min(CONNECT_TIMEOUT_SECONDS, timeout))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


class EndpointCall:
    """One request to `name` (e.g. "the model endpoint http://..."), as a whole:
    its attempts share one deadline, `timeout` seconds after the first starts.
    `hint` ends the message when the deadline passes."""

    def __init__(self, name: str, timeout: float, max_retries: int, hint: str = "") -> None:
        self.name = name
        self.timeout = timeout
        self.max_retries = max_retries
        self.hint = hint
        self.attempts = 0
        self.retries = 0
        self.last_failure = ""
        self._deadline: float | None = None

    def attempts_note(self) -> str:
        """How many attempts were made, as " (N attempts)", when more than one."""
        return f" ({_plural(self.attempts, 'attempt')})" if self.attempts > 1 else ""

    async def run(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """Await `attempt()` until it succeeds, retrying what is worth retrying.
        Raises the last openai.APIStatusError when the answer is an error that is
        not retried, or when the retries run out; LLMError for everything else."""
        return await self.within_deadline(self._attempts(attempt))

    async def within_deadline(self, awaitable: Awaitable[T]) -> T:
        """Await `awaitable` (an attempt, or the next piece of a streamed
        answer) before the request's deadline, or raise the LLMError that says
        it passed. Each await is bounded on its own, never a stretch that
        yields to a caller: a deadline scope left open across a yield would
        cancel the caller's code instead."""
        loop = asyncio.get_running_loop()
        if self._deadline is None:
            self._deadline = loop.time() + self.timeout
        # Blocking waits end by IO_DEADLINE; on a loop that blocks there are
        # no others (a retry's pause checks the deadline itself), and the
        # scope, set up for every piece of a streamed answer, would only cost.
        token = IO_DEADLINE.set(time.monotonic() + self._left(loop))
        try:
            if blocking_allowed(loop):
                return await awaitable
            return await self._within_scope(awaitable)
        except httpx2.TimeoutException:
            if self._left(loop) > 0:
                raise
            raise self._timed_out() from None
        finally:
            IO_DEADLINE.reset(token)

    async def _within_scope(self, awaitable: Awaitable[T]) -> T:
        scope = asyncio.timeout_at(self._deadline)
        try:
            async with scope:
                return await awaitable
        except TimeoutError:
            if not scope.expired():
                raise
            raise self._timed_out() from None

    def can_retry(self) -> bool:
        return self.retries < self.max_retries

    async def pause_before_retry(self, failure: str) -> None:
        """Wait the backoff before another attempt, after `failure` (an answer
        lost before any of it was used); the deadline's error if it would pass."""
        self.last_failure = failure
        await self.within_deadline(self._pause(None))

    def seconds_left(self) -> float:
        return self._left(asyncio.get_running_loop())

    async def _attempts(self, attempt: Callable[[], Awaitable[T]]) -> T:
        import openai  # loaded by the client `attempt` uses: only its name is bound here

        while True:
            self.attempts += 1
            try:
                return await attempt()
            except openai.APIStatusError as exc:
                if not self.can_retry() or not should_retry(exc.response):
                    raise
                self.last_failure = f"answered {exc.status_code}: {error_text(exc)}"
                asked = retry_after(exc.response.headers)
            except openai.APIConnectionError as exc:
                if self._left(asyncio.get_running_loop()) <= 0:  # a blocking wait ran out
                    raise self._timed_out() from None
                self.last_failure = connection_problem(exc)
                if not self.can_retry():
                    raise LLMError(
                        f"cannot reach {self.name}: {self.last_failure}{self.attempts_note()}"
                    ) from None
                asked = None
            await self._pause(asked)

    async def _pause(self, asked: float | None) -> None:
        """Sleep before the next retry: the wait the server `asked` for, else the backoff."""
        wait = backoff(self.retries) if asked is None else asked
        left = self._left(asyncio.get_running_loop())
        if asked is not None and wait > left:
            raise LLMError(
                f"{self.name} {self.last_failure} and asked to retry after {wait:g} s, "
                f"more than the {left:.2g} s left of the {self.timeout:g} s limit"
                f"{self.attempts_note()}"
            )
        if wait >= left:
            raise self._timed_out()
        self.retries += 1
        await asyncio.sleep(wait)

    def _left(self, loop: asyncio.AbstractEventLoop) -> float:
        return max(0.0, (self._deadline or 0.0) - loop.time())

    def _timed_out(self) -> LLMError:
        last = f"; last: {self.last_failure}" if self.last_failure else ""
        return LLMError(
            f"{self.name} did not answer within {self.timeout:g} s "
            f"({_plural(self.attempts, 'attempt')}{last}){self.hint}"
        )


def stream_problem(exc: httpx2.RequestError) -> str:
    """Why reading an answer's body failed, in a few words."""
    if isinstance(exc, httpx2.RemoteProtocolError):
        return "the connection was closed"
    if isinstance(exc, httpx2.ReadError):
        return "the connection was lost"
    if isinstance(exc, httpx2.DecodingError):
        return f"the body could not be decoded: {one_line(str(exc), 100)}"
    return one_line(str(exc), 100) or type(exc).__name__


# ------------------------------------------------------------ clients, loops


def _close_clients(clients: ClientsByLoop, blocking: list[BlockingTransport]) -> None:
    for loop, client in list(clients.items()):
        # A loop that is not running (a thread's own loop between two steps)
        # would never run the close: its sockets close when they are collected.
        if loop.is_running():
            asyncio.run_coroutine_threadsafe(client.close(), loop)
    clients.clear()
    for transport in blocking:  # blocking sockets: closed here, in any thread
        transport.close()
    blocking.clear()


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One TLS context (certificates loaded) for every client of the process:
    making one is most of the ~60 ms a new client costs, and each agent has its
    own client, so 50 agents would spend 3 s on it."""
    return httpx2.create_ssl_context()


class AsyncClients:
    """An `openai.AsyncOpenAI` per event loop, made on first use: a client's
    pooled connections belong to the loop that opened them. The loops that
    block (blocking_io.py: each thread's own loop, runner.py) share one
    client instead, whose pool of blocking sockets any thread may use: an
    agent's steps land on whichever worker thread is free (a server's), and
    a client per thread would make a client and a connection anew each time
    a step lands on a thread it has not run on. They are closed by
    `close()`, or when this object is garbage collected."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._clients: ClientsByLoop = weakref.WeakKeyDictionary()
        self._blocking: openai.AsyncOpenAI | None = None
        # What `close` closes of the shared client: its blocking transport.
        self._blocking_transports: list[BlockingTransport] = []
        self._lock = threading.Lock()
        self.close = weakref.finalize(
            self, _close_clients, self._clients, self._blocking_transports
        )
        self.close.atexit = False  # the process is ending: its sockets go with it

    async def aclose(self) -> None:
        """Close every client now, the running loop's awaited: its close
        needs turns of that loop, which a loop that only runs during a call
        (runner.py's) may not take again."""
        with self._lock:
            own = self._clients.pop(asyncio.get_running_loop(), None)
            self._blocking = None
        self.close()  # the others, on their own loops, and the shared one
        if own is not None:
            await own.close()

    def get(self) -> openai.AsyncOpenAI:
        """The client for the running loop."""
        return self.for_loop(asyncio.get_running_loop())

    def for_loop(self, loop: asyncio.AbstractEventLoop) -> openai.AsyncOpenAI:
        """The client for `loop`, made now if need be: from another thread, this
        keeps the cost of making one (tens of ms: TLS setup) off the loop."""
        import openai  # the first client of the process pays for loading it

        with self._lock:
            if blocking_allowed(loop):
                if self._blocking is None:
                    self._blocking = self._shared_blocking_client()
                if self._blocking is not None:
                    return self._blocking
            client = self._clients.get(loop)
            if client is None:
                http_client = openai.DefaultAsyncHttpxClient(verify=_ssl_context())
                client = openai.AsyncOpenAI(**self._options, http_client=http_client)
                self._clients[loop] = client
            return client

    def _shared_blocking_client(self) -> openai.AsyncOpenAI | None:
        """The client the blocking loops share, or None when the environment
        names proxies (each loop then gets httpx's own client)."""
        import openai  # loaded already by for_loop: only its name is bound here

        transport = blocking_transport(_ssl_context())
        if transport is None:
            return None
        self._blocking_transports.append(transport)
        http_client = httpx2.AsyncClient(transport=transport, follow_redirects=True)
        return openai.AsyncOpenAI(**self._options, http_client=http_client)


class _LoopThread:
    """An event loop running in a daemon thread."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="memgpt-lite-endpoint", daemon=True
        )
        self.thread.start()


_loop_thread: _LoopThread | None = None
_loop_lock = threading.Lock()


def background_loop() -> asyncio.AbstractEventLoop:
    """The private event loop that `run_sync` uses (a new one after a fork)."""
    global _loop_thread
    with _loop_lock:
        if _loop_thread is None or _loop_thread.pid != os.getpid():
            _loop_thread = _LoopThread()
        return _loop_thread.loop


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` on the private event loop and wait for its result. If the
    wait is interrupted (Ctrl-C), the coroutine is cancelled, its connection
    closed, and the interruption goes on."""
    loop = background_loop()
    if threading.current_thread() is getattr(_loop_thread, "thread", None):
        coro.close()
        raise RuntimeError("run_sync cannot be called from the endpoint loop itself")
    finished = threading.Event()
    tasks: list[asyncio.Task[T]] = []

    def start() -> None:
        task = loop.create_task(coro)
        task.add_done_callback(lambda _: finished.set())
        tasks.append(task)

    loop.call_soon_threadsafe(start)
    try:
        while not finished.wait(_WAKE_SECONDS):
            pass
    except BaseException:
        # Runs after start(): the loop takes callbacks in order.
        loop.call_soon_threadsafe(lambda: tasks[0].cancel())
        if finished.wait(_CANCEL_GRACE_SECONDS) and not tasks[0].cancelled():
            tasks[0].exception()  # retrieved, so asyncio does not log it as lost
        raise
    return tasks[0].result()
