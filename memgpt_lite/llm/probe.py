"""Diagnosis of a model endpoint: the checks `memgpt-lite doctor` runs, and
the model list `memgpt-lite models` prints. Nothing here prints.

Each check is one `CheckResult`: ok, a warning (the agent copes, as with the
tool_choice and streaming fallbacks), a failure (the agent cannot work), or
skipped because a check it needs did not pass. Every problem is one line that
says what to fix. Requests go through the same code as the agent's
(`OpenAIChatModel`, `EndpointCall`, and the `EndpointEmbedder` behind the
`EmbeddingProbe` the caller passes: embeddings/ builds on llm/, not the
reverse), so the doctor sees what a step would see, with no retries: a
diagnosis reports, never masks.

Servers report a model's context window on its `GET /models` entry under
different names: `context_length` (OpenRouter, LM Studio),
`max_context_length` (LM Studio's own API), `max_model_len` (vLLM), and
`meta.n_ctx_train` (llama.cpp server: the window the model was trained with;
the one it runs, `-c`, is not listed). Local servers also report the window
they run the model with on their own routes (llama.cpp's /props, Ollama's
/api/ps and /api/show: server_reports.py), which wins over the list. Each is
an upper bound: a window of ours above it is a failure, naming our setting
and the server's; one below it is fine.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import httpx2

from memgpt_lite.errors import LLMError
from memgpt_lite.llm.endpoint import (
    AsyncClients,
    EndpointCall,
    background_loop,
    client_timeout,
    error_text,
    json_answer,
    run_sync,
)
from memgpt_lite.llm.model import Completion
from memgpt_lite.llm.openai_chat import TIMEOUT_HINT, OpenAIChatModel
from memgpt_lite.llm.server_reports import ask_server
from memgpt_lite.llm.server_window import VLLM, ServerWindow, raise_setting
from memgpt_lite.models import LLMConfig
from memgpt_lite.settings.endpoint import URL_EXAMPLE
from memgpt_lite.text import parse_json

CheckStatus = Literal["ok", "warn", "fail", "skip"]
# The dimension of one vector from an endpoint's embedding model, asked with no
# retries: (model, base URL, API key, timeout) -> dimension, or an LLMError.
EmbeddingProbe = Callable[[str, str, str, float], int]
# Every check, in the order they run.
CHECK_NAMES = (
    "reachable",
    "OpenAI-compatible",
    "model",
    "tool call",
    'tool_choice "required"',
    "streaming",
    "embeddings",
    "context window",
)

# Where servers put a model's context window on its /models entry, as paths of keys.
WINDOW_FIELDS: tuple[tuple[str, ...], ...] = (
    ("context_length",),
    ("max_context_length",),
    ("max_model_len",),
    ("meta", "n_ctx_train"),
)
_PROBE_MESSAGES = [
    {"role": "system", "content": "You are a connection test. Always answer by calling a tool."},
    {"role": "user", "content": "Call send_message with the message 'ok'."},
]
_PROBE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "send_message",
            "description": "Send a message to the user.",
            "parameters": {
                "type": "object",
                "properties": {"message": {"type": "string", "description": "The message."}},
                "required": ["message"],
            },
        },
    }
]
_TOOL_CALL_FIXES = (
    "the agent then takes the text as its reply and cannot use its memory; "
    "turn on tool calls (llama.cpp: --jinja; vLLM: --enable-auto-tool-choice "
    "--tool-call-parser PARSER) or use a model trained for them"
)


@dataclass(frozen=True)
class CheckResult:
    """One check: its name, how it went, and one line saying what was seen
    or what to fix."""

    name: str
    status: CheckStatus
    detail: str


@dataclass(frozen=True)
class ModelEntry:
    """One model a server lists, with the context window it reports, if any,
    and the field that said so."""

    id: str
    context_window: int | None = None
    window_field: str | None = None


@dataclass(frozen=True)
class ProbeTarget:
    """What to check: an endpoint, the model and window we use with it, and
    the embedder ("endpoint:MODEL", "local" or None)."""

    base_url: str
    api_key: str
    model: str | None
    context_window: int
    window_source: str  # where our window comes from, e.g. "the model's name"
    embedder: str | None
    timeout: float
    agent: str | None = None  # the agent whose endpoint this is, if any


class Endpoint:
    """The clients of one base URL, for requests that are not chat steps."""

    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        self.base_url = base_url
        self.name = f"the model endpoint {base_url}"
        self.timeout = timeout
        self.clients = AsyncClients(
            base_url=base_url, api_key=api_key, max_retries=0, timeout=client_timeout(timeout)
        )

    def close(self) -> None:
        self.clients.close()

    def models_answer(self) -> httpx2.Response:
        """The answer to GET /models, whatever its status; an LLMError when
        there is none (the server cannot be reached, or never answers)."""
        self.clients.for_loop(background_loop())
        return run_sync(self._models_answer())

    async def _models_answer(self) -> httpx2.Response:
        call = EndpointCall(self.name, self.timeout, 0, TIMEOUT_HINT)
        client = self.clients.get()

        async def attempt() -> httpx2.Response:
            raw = await client.models.with_raw_response.list()
            return raw.http_response

        import openai  # loaded by the client `attempt` used: only its name is bound here

        try:
            return await call.run(attempt)
        except openai.APIStatusError as exc:
            return exc.response


def window_of(entry: dict[str, Any]) -> tuple[int | None, str | None]:
    """The context window a /models entry reports, and the field it is in."""
    for path in WINDOW_FIELDS:
        value: Any = entry
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, ".".join(path)
    return None, None


def read_models(response: httpx2.Response, name: str) -> list[ModelEntry]:
    """The models listed in a GET /models answer, or an LLMError saying why
    the answer is not an OpenAI-compatible model list."""
    if response.status_code >= 400:
        raise _status_error(response, name)
    data = json_answer(response, name, parse_json)
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise LLMError(
            f'{name} answered GET /models without a list of models (no "data" array): '
            f"is the URL the API's, ending in /v1 (like {URL_EXAMPLE})?"
        )
    entries = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            window, field = window_of(item)
            entries.append(ModelEntry(item["id"], window, field))
    return entries


def _status_error(response: httpx2.Response, name: str) -> LLMError:
    """The LLMError for an error status to GET /models."""
    status = response.status_code
    try:
        response.read()
        body: Any = parse_json(response.text)
    except (ValueError, RecursionError, httpx2.HTTPError):
        body = response.text
    # Imported here, not with the module: the server imports this module at
    # start, and openai's import costs about 0.4 s of CPU (llm/endpoint.py).
    import openai

    exc = openai.APIStatusError(f"HTTP {status}", response=response, body=body)
    if status == 401:
        return LLMError(f"{name} refused the API key: {error_text(exc)} (set OPENAI_API_KEY)")
    hint = ""
    if status == 404 and not response.url.path.rstrip("/").endswith("/v1/models"):
        hint = f" (the URL usually ends in /v1, like {URL_EXAMPLE})"
    return LLMError(f"{name} answered GET /models with {status}: {error_text(exc)}{hint}")


def list_models(base_url: str, api_key: str, timeout: float) -> list[ModelEntry]:
    """The models the endpoint lists; an LLMError line when it cannot say."""
    endpoint = Endpoint(base_url, api_key, timeout)
    try:
        return read_models(endpoint.models_answer(), endpoint.name)
    finally:
        endpoint.close()


def model_listed(model: str, entries: list[ModelEntry]) -> ModelEntry | None:
    """The entry of `model`, counting Ollama's "NAME:latest" as NAME."""
    for entry in entries:
        if entry.id in (model, f"{model}:latest"):
            return entry
    return None


def close_names(model: str, entries: list[ModelEntry]) -> list[str]:
    """Listed names like `model`: typos, and names that contain it."""
    ids = [entry.id for entry in entries]
    close = difflib.get_close_matches(model, ids, n=3, cutoff=0.6)
    close += [i for i in ids if model.lower() in i.lower() and i not in close]
    return close[:3]


def _ok(name: str, detail: str) -> CheckResult:
    return CheckResult(name, "ok", detail)


def _fail(name: str, detail: str) -> CheckResult:
    return CheckResult(name, "fail", detail)


def _skip(name: str, needs: str) -> CheckResult:
    return CheckResult(name, "skip", needs)


class _Checks:
    """The checks against one target, in order; each may leave what later
    ones need (the model list, whether the chat works)."""

    def __init__(self, target: ProbeTarget, embedding_dimension: EmbeddingProbe) -> None:
        self.target = target
        self.embedding_dimension = embedding_dimension
        self.endpoint = Endpoint(target.base_url, target.api_key, target.timeout)
        self.models_response: httpx2.Response | None = None
        self.entries: list[ModelEntry] | None = None  # None: not listed
        self.entry: ModelEntry | None = None
        self.chat_works = False

    def close(self) -> None:
        self.endpoint.close()

    def reachable(self) -> CheckResult:
        try:
            self.models_response = self.endpoint.models_answer()
        except LLMError as exc:
            detail = str(exc)
            if "host not found" in detail:
                detail += ": check the host name in the URL"
            return _fail("reachable", detail)
        return _ok("reachable", f"GET /models answered {self.models_response.status_code}")

    def compatible(self) -> CheckResult:
        name = "OpenAI-compatible"
        if self.models_response is None:
            raise RuntimeError("compatible() runs after reachable() succeeded")
        try:
            self.entries = read_models(self.models_response, self.endpoint.name)
        except LLMError as exc:
            if self.models_response.status_code in (404, 405) and _is_json(self.models_response):
                # An API that answers in JSON but does not list its models.
                return _ok(name, "JSON answers (the server does not list its models)")
            return _fail(name, str(exc))
        return _ok(name, f"GET /models lists {_count(len(self.entries), 'model')}")

    def model_present(self) -> CheckResult:
        name, model = "model", self.target.model
        if model is None:
            return _fail(
                name, "no model configured: give an agent's NAME, --model, or model in config.toml"
            )
        if self.entries is None:
            return _skip(name, "the server lists no models")
        self.entry = model_listed(model, self.entries)
        if self.entry is not None:
            return _ok(name, f"{model!r} is listed")
        close = close_names(model, self.entries)
        if close:
            hint = f"did you mean {', '.join(repr(c) for c in close)}?"
        else:
            shown = ", ".join(e.id for e in self.entries[:5]) or "none"
            hint = f"the server lists: {shown}{'…' if len(self.entries) > 5 else ''}"
        return _fail(name, f"{model!r} is not among the models the server lists; {hint}")

    def _ask(self, name: str, **options: Any) -> Completion | CheckResult:
        """The answer to the probe request with these LLMConfig `options`, or
        the failed check `name` when there is none."""
        config = LLMConfig(model=self.target.model or "", max_retries=0, **options)
        target = self.target
        model = OpenAIChatModel(config, target.base_url, target.api_key, target.timeout)
        try:
            return model.complete(config, _PROBE_MESSAGES, _PROBE_TOOLS)
        except LLMError as exc:
            return _fail(name, str(exc))
        finally:
            model.close()

    def tool_call(self) -> CheckResult:
        name = "tool call"
        completion = self._ask(name, tool_choice="auto", stream=False)
        if isinstance(completion, CheckResult):
            return completion
        self.chat_works = True
        if not completion.tool_calls:
            return _fail(
                name, f"the model answered in text, not with a tool call: {_TOOL_CALL_FIXES}"
            )
        return _ok(name, f"the model called {completion.tool_calls[0].name}")

    def tool_choice_required(self) -> CheckResult:
        name = 'tool_choice "required"'
        completion = self._ask(name, tool_choice="required", stream=False)
        if isinstance(completion, CheckResult):
            return completion
        if completion.tool_choice != "required":
            return CheckResult(
                name,
                "warn",
                'refused: the agent falls back to "auto", where the model may answer in '
                "plain text (taken as its reply)",
            )
        return _ok(name, "accepted")

    def streaming(self) -> CheckResult:
        name = "streaming"
        completion = self._ask(name, tool_choice="auto", stream=True)
        if isinstance(completion, CheckResult):
            return completion
        if not completion.streamed:
            return CheckResult(
                name,
                "warn",
                "the server does not stream: the agent asks without, and replies arrive whole",
            )
        if completion.usage.total_tokens == 0:
            return CheckResult(
                name,
                "warn",
                "streams, but reports no token usage (stream_options.include_usage "
                "ignored): the agent counts tokens itself",
            )
        return _ok(name, f"streams, with usage ({completion.usage.total_tokens} tokens)")

    def embeddings(self) -> CheckResult:
        name, spec = "embeddings", self.target.embedder
        if not spec or not spec.startswith("endpoint:"):
            used = (
                f"the agent uses the {spec} embedder" if spec else "no embedder: word search only"
            )
            return _skip(name, f"not used ({used})")
        model, target = spec.removeprefix("endpoint:"), self.target
        try:
            dimension = self.embedding_dimension(
                model, target.base_url, target.api_key, target.timeout
            )
        except LLMError as exc:
            return _fail(name, f"{model!r}: {exc}")
        return _ok(name, f"{model!r} gives {dimension}-dimensional vectors")

    def context_window(self) -> CheckResult:
        name, ours = "context window", self.target.context_window
        used = f"{ours:,} tokens ({self.target.window_source})"
        running = self._running_window()
        if running is None and self.entry is not None and self.entry.context_window:
            server = VLLM if self.entry.window_field == "max_model_len" else "the server"
            running = ServerWindow(self.entry.context_window, server, self.entry.window_field or "")
        if running is None:
            return CheckResult(
                name,
                "ok",
                f"we use {used}; the server does not say its own: make sure it runs at least that",
            )
        theirs = running.tokens
        if ours > theirs:
            fix = (
                f"--context-window {theirs} on create, or context_window = {theirs} in config.toml"
            )
            if self.target.agent is not None:
                chat = f"memgpt-lite chat {self.target.agent}"
                fix = f"`/model {self.target.model} {theirs}` in `{chat}`"
            return _fail(
                name,
                f"we use {used} but the server reports {theirs:,} ({running.source}): set {fix}; "
                f"or give the server {ours:,}: {raise_setting(running, ours)}",
            )
        return _ok(name, f"we use {used}; the server reports {theirs:,} ({running.source})")

    def _running_window(self) -> ServerWindow | None:
        """The window a local server reports running the model with."""
        target, clients = self.target, self.endpoint.clients
        clients.for_loop(background_loop())

        async def ask() -> ServerWindow | None:
            model = target.model or ""
            return await ask_server(clients.get(), target.base_url, model, target.timeout)

        return run_sync(ask())


def run_checks(target: ProbeTarget, embedding_dimension: EmbeddingProbe) -> Iterator[CheckResult]:
    """The checks, one by one as each finishes; a check whose prerequisite
    did not pass is skipped. `embedding_dimension` asks the endpoint's
    embedding model, for an endpoint embedder."""
    checks = _Checks(target, embedding_dimension)
    try:
        reachable = checks.reachable()
        yield reachable
        if reachable.status != "ok":
            yield from _skipped(CHECK_NAMES[1:], "the server cannot be reached")
            return
        compatible = checks.compatible()
        yield compatible
        if compatible.status != "ok":
            yield from _skipped(CHECK_NAMES[2:], "needs an OpenAI-compatible API at this URL")
            return
        present = checks.model_present()
        yield present
        # A server that lists no models may still serve ours: the chat tells.
        yield from _chat_checks(checks, present.status == "ok" or present.status == "skip")
        yield checks.embeddings()
        if present.status == "fail":
            yield from _skipped(CHECK_NAMES[-1:], "needs the model")
        else:
            yield checks.context_window()
    finally:
        checks.close()


def _skipped(names: tuple[str, ...], needs: str) -> Iterator[CheckResult]:
    for name in names:
        yield _skip(name, needs)


def _chat_checks(checks: _Checks, chat_ready: bool) -> Iterator[CheckResult]:
    names = CHECK_NAMES[3:6]
    if not chat_ready:
        yield from _skipped(names, "needs the model")
        return
    yield checks.tool_call()
    if not checks.chat_works:
        yield from _skipped(names[1:], "needs a chat request that works")
        return
    yield checks.tool_choice_required()
    yield checks.streaming()


def _is_json(response: httpx2.Response) -> bool:
    return "json" in response.headers.get("content-type", "").lower()


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
