"""The model endpoint, through the `openai` package: `OpenAIChatModel`.

Any OpenAI-compatible server works. One request is bounded as a whole by the
timeout, its retries of 429, 5xx, timeouts and dropped connections included
(see endpoint.py), and a streamed answer to its last byte.

Requests go out through the client's low-level `post`, not
`chat.completions.create`: the latter walks every message through its type
annotations first (about 0.2 ms a message, over half a second for a long
window), while `post` sends the same JSON with the same auth headers, base URL
and `openai.APIStatusError` classes in a few ms. The body is encoded here
(request_body.py), each read-only message of the window from the JSON it
keeps, so a long window costs a join, not an encoding, per turn.

Answers stream when `LLMConfig.stream` is set: the deltas are yielded as each
event arrives, then the whole `Completion` (read in answer.py, with the same
repairs as a whole answer). A server that refuses `stream` (400/422 naming it)
is asked again without; one that ignores it and sends a plain completion is
read as one. Either way `Completion.streamed` is False, so the caller can
stop asking. Likewise tool_choice "required" falls back to "auto", and
`Completion.tool_choice` says which one worked.

Retries happen only before anything was yielded: an answer that breaks off
after its first deltas were shown is one LLMError line, never shown twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import httpx2  # the HTTP library the installed openai client is built on

from memgpt_lite.errors import LLMError
from memgpt_lite.llm.answer import (
    Delta,
    SSEDecoder,
    StreamedAnswer,
    body_summary,
    completion_from,
    is_context_length_error,
    merge_deltas,
)
from memgpt_lite.llm.blocking_io import io_deadline
from memgpt_lite.llm.endpoint import (
    AsyncClients,
    EndpointCall,
    background_loop,
    client_timeout,
    error_text,
    json_answer,
    run_sync,
    stream_problem,
)
from memgpt_lite.llm.model import (
    Completion,
    ContextWindowExceeded,
    ModelChunk,
    complete,
)
from memgpt_lite.llm.request_body import BodyEncoder
from memgpt_lite.llm.server_reports import ask_server
from memgpt_lite.llm.server_window import ServerWindow, stated_window
from memgpt_lite.models import LLMConfig, ToolChoice
from memgpt_lite.settings.endpoint import URL_EXAMPLE, choose_endpoint, choose_timeout
from memgpt_lite.text import parse_json

if TYPE_CHECKING:
    import openai  # loaded where a client is made (llm/endpoint.py), not by importing this

# Re-exported: the loop and the tests import these from here.
__all__ = [
    "Completion",
    "ContextWindowExceeded",
    "LLMClient",
    "OpenAIChatModel",
    "completion_from",
]

TIMEOUT_HINT = (
    "; a slow model may need a longer limit (--timeout, timeout=, or timeout in config.toml)"
)
# How long the end of a body is awaited after [DONE], so the connection goes
# back to the pool; a server that keeps it open after that is not waited for.
DRAIN_SECONDS = 1.0
_STREAM_WORD = re.compile(r"\bstream")  # stream, streaming, stream_options; not "upstream"


class _BrokenOff(Exception):
    """Reading the body of an answer failed; `problem` says how."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def _is_stream_error(exc: openai.APIStatusError) -> bool:
    return exc.status_code in (400, 422) and bool(_STREAM_WORD.search(str(exc).lower()))


def _is_tool_choice_error(exc: openai.APIStatusError) -> bool:
    return exc.status_code in (400, 422) and "tool_choice" in str(exc).lower()


def chat_request(
    config: LLMConfig,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    tool_choice: ToolChoice,
    stream: bool,
) -> dict[str, Any]:
    """The body of a chat completions request, as sent (a preview shows it)."""
    request: dict[str, Any] = {"model": config.model, "messages": messages}
    if tools:
        request["tools"] = tools
        request["tool_choice"] = tool_choice
    if config.temperature is not None:
        request["temperature"] = config.temperature
    if stream:
        request["stream"] = True
        request["stream_options"] = {"include_usage": True}
    return request


def _is_event_stream(response: httpx2.Response) -> bool:
    return "text/event-stream" in response.headers.get("content-type", "").lower()


class OpenAIChatModel:
    """The `Model` (llm/model.py) of one OpenAI-compatible endpoint. `stream`
    answers in a running event loop; `complete` and `acomplete` give the whole
    answer (for the current loop, until it consumes `stream`). Each answer is
    one request bounded by `timeout` seconds as a whole.

    The base URL, key and timeout are the arguments, else the agent's own
    (`config`), else the defaults (settings/endpoint.py): the edges resolve
    the environment's and config.toml's (settings/resolve.py) and pass them."""

    def __init__(
        self,
        config: LLMConfig,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
    ) -> None:
        self.base_url, key = choose_endpoint(config, base_url, api_key)
        self.name = f"the model endpoint {self.base_url}"
        self.timeout = choose_timeout(config, timeout)
        self._clients = AsyncClients(
            base_url=self.base_url, api_key=key, max_retries=0, timeout=client_timeout(self.timeout)
        )
        self.seconds_in_calls = 0.0  # so callers can tell their own time from the endpoint's
        self._bodies = BodyEncoder()  # a turn's body is mostly the last one's messages
        self._seconds_lock = threading.Lock()

    def close(self) -> None:
        """Close the pooled connections now (otherwise when the model is collected)."""
        self._clients.close()

    async def aclose(self) -> None:
        """`close`, from inside an event loop, for a model used once there:
        the close of that loop's connections is awaited, not left to it."""
        await self._clients.aclose()

    async def stream(
        self, config: LLMConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> AsyncIterator[ModelChunk]:
        """Answer one request with the model and options in `config`: the
        deltas as they arrive (when it streams), then one `Completion`."""
        call = EndpointCall(self.name, self.timeout, config.max_retries, TIMEOUT_HINT)
        # Only the time spent waiting on the endpoint counts, not the caller's
        # time between chunks; None while the caller has a chunk.
        resumed: float | None = time.perf_counter()
        try:
            async with aclosing(self._answer(call, config, messages, tools)) as chunks:
                async for chunk in chunks:
                    self._count(resumed)
                    resumed = None
                    yield chunk
                    resumed = time.perf_counter()
        finally:
            self._count(resumed)

    def complete(
        self, config: LLMConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> Completion:
        """The whole answer, from synchronous code (see `run_sync`)."""
        self._clients.for_loop(background_loop())
        return run_sync(self.acomplete(config, messages, tools))

    async def acomplete(
        self, config: LLMConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> Completion:
        """The whole answer, awaited in the caller's event loop."""
        return await complete(self, config, messages, tools)

    async def server_window(self, model: str) -> ServerWindow | None:
        """The context the server reports running `model` with (local
        servers), or None: see server_reports.py. A `WindowReporter`."""
        return await ask_server(self._clients.get(), self.base_url, model, self.timeout)

    def _count(self, since: float | None) -> None:
        if since is not None:
            with self._seconds_lock:
                self.seconds_in_calls += time.perf_counter() - since

    async def _answer(
        self,
        call: EndpointCall,
        config: LLMConfig,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
    ) -> AsyncIterator[ModelChunk]:
        """The answer, with the fallbacks: without streaming when the endpoint
        refuses it, with tool_choice "auto" when it refuses "required". An
        error status comes before any chunk, so asking again repeats nothing."""
        import openai  # loaded by the client that asks: only its name is bound here

        stream, tool_choice = config.stream, config.tool_choice
        while True:
            request = chat_request(config, messages, tools, tool_choice, stream)
            try:
                async with aclosing(self._attempts(call, request, tool_choice)) as chunks:
                    async for chunk in chunks:
                        yield chunk
                return
            except openai.APIStatusError as exc:
                if stream and _is_stream_error(exc):
                    stream = False
                elif tools and tool_choice == "required" and _is_tool_choice_error(exc):
                    tool_choice = "auto"
                else:
                    raise self._error(exc, config, call) from exc

    async def _attempts(
        self, call: EndpointCall, request: dict[str, Any], tool_choice: ToolChoice
    ) -> AsyncIterator[ModelChunk]:
        """One request's answer. `call.run` retries errors and lost
        connections; a body that breaks off is retried here, if nothing of it
        was yielded yet."""
        client = self._clients.get()
        stream = "stream" in request
        body = self._bodies.encode(request)  # once, for every retry

        async def send() -> httpx2.Response:
            return await client.post(
                "/chat/completions", content=body, cast_to=httpx2.Response, stream=stream
            )

        while True:
            response = await call.run(send)
            answer = StreamedAnswer(call.name)
            yielded = 0
            try:
                async with aclosing(self._read(call, response, answer)) as chunks:
                    async for chunk in chunks:
                        if isinstance(chunk, Completion):
                            chunk.tool_choice = tool_choice
                        yielded += 1
                        yield chunk
                return
            except _BrokenOff as broken:
                problem = f"the answer broke off after {_chunks(answer.chunks)} ({broken.problem})"
                if yielded == 0 and call.can_retry():
                    await call.pause_before_retry(problem)
                    continue
                note = call.attempts_note()
                raise LLMError(f"{call.name} stopped mid-answer: {problem}{note}") from None
            finally:
                await response.aclose()

    async def _read(
        self, call: EndpointCall, response: httpx2.Response, answer: StreamedAnswer
    ) -> AsyncIterator[ModelChunk]:
        """The chunks of one answer: its deltas as its events arrive, then the
        Completion; or the Completion alone, for a plain JSON answer."""
        if not _is_event_stream(response):
            await _within(call, response.aread())
            text = response.content.decode("utf-8", errors="replace")
            if not text.lstrip().startswith("data:"):  # SSE under another content type
                yield completion_from(json_answer(response, call.name, parse_json), call.name)
                return
        decoder = SSEDecoder()
        async with aclosing(response.aiter_bytes()) as pieces:
            while not answer.done:
                data = await _within(call, anext(pieces, None))
                events = decoder.end() if data is None else decoder.feed(data)
                deltas: list[Delta] = []
                for event in events:
                    deltas += answer.take(event)
                    if answer.done:
                        break
                for delta in merge_deltas(deltas):
                    yield delta
                if data is None:
                    break
            if answer.done:
                await _drain(call, pieces)
        if not (answer.done or answer.finished):
            problem = "the stream ended without [DONE] or a finish_reason"
            if not answer.chunks and decoder.other_line:
                problem = f"no data in the stream: {body_summary(decoder.other_line)}"
            raise _BrokenOff(problem)
        yield answer.completion()

    def _error(self, exc: openai.APIStatusError, config: LLMConfig, call: EndpointCall) -> LLMError:
        import openai  # loaded already: `exc` is one of its errors

        message = error_text(exc)
        if is_context_length_error(getattr(exc, "code", None), str(exc)):
            return ContextWindowExceeded(
                f"{call.name} refused the request as too long: {message}",
                stated_window(message, exc.body),
            )
        if isinstance(exc, openai.AuthenticationError):
            return LLMError(f"{call.name} refused the API key: {message}")
        if isinstance(exc, openai.NotFoundError):
            hint = ""
            if not self.base_url.rstrip("/").endswith("/v1"):
                hint = f" (the URL usually ends in /v1, like {URL_EXAMPLE})"
            return LLMError(
                f"{call.name} does not know model {config.model!r} or the path: {message}{hint}"
            )
        return LLMError(f"{call.name} answered {exc.status_code}: {message}{call.attempts_note()}")


# The name of this class before the Model seam (0.1), kept for code that uses it.
LLMClient = OpenAIChatModel


async def _within(call: EndpointCall, awaitable: Any) -> Any:
    """`awaitable` (a read of the body) within the deadline; a failed read is _BrokenOff."""
    try:
        return await call.within_deadline(awaitable)
    except httpx2.RequestError as exc:
        raise _BrokenOff(stream_problem(exc)) from None


async def _drain(call: EndpointCall, pieces: AsyncIterator[bytes]) -> None:
    """Read what follows [DONE], normally only the end of the body, so the
    connection can serve the next request instead of being closed."""
    wait = min(DRAIN_SECONDS, call.seconds_left())
    with contextlib.suppress(TimeoutError, httpx2.RequestError), io_deadline(wait):
        async with asyncio.timeout(wait):
            async for _ in pieces:
                pass


def _chunks(n: int) -> str:
    return f"{n} chunk" if n == 1 else f"{n} chunks"
