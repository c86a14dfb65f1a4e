"""The model endpoint, through the `openai` package.

Any OpenAI-compatible server works. One request is bounded as a whole by the
timeout, its retries of 429, 5xx, timeouts and dropped connections included
(see endpoint.py). What the endpoint sends back is checked here: it must be a
JSON chat completion with a message, or the request ends with one LLMError line
naming the endpoint and what was wrong. Text is made valid (lone surrogates
replaced), and tool calls with missing or repeated ids get fresh ids, so the
loop can always answer every call. An empty reply (no text and no tool call)
is returned as it is: `Completion.is_empty` tells the loop.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai

from memgpt_lite.config import check_timeout, config_path, configured_base_url, configured_timeout
from memgpt_lite.errors import ConfigError, LLMError
from memgpt_lite.llm.endpoint import (
    URL_EXAMPLE,
    AsyncClients,
    EndpointCall,
    background_loop,
    body_summary,
    check_base_url,
    client_timeout,
    error_text,
    json_answer,
    one_line,
    run_sync,
)
from memgpt_lite.llm.model import ContextWindowExceeded
from memgpt_lite.models import LLMConfig, ToolCall, ToolChoice, Usage
from memgpt_lite.text import clean_text, parse_json

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Sent to servers that ignore keys (Ollama, llama.cpp, vLLM, LM Studio).
PLACEHOLDER_KEY = "not-needed"
TIMEOUT_HINT = (
    "; a slow model may need a longer limit (--timeout, timeout=, or timeout in config.toml)"
)


@dataclass
class Completion:
    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    tool_choice: ToolChoice = "required"

    @property
    def is_empty(self) -> bool:
        """No tool call and no text (or only whitespace): nothing to act on or store."""
        return not self.tool_calls and not (self.content and self.content.strip())


def resolve_endpoint(
    config: LLMConfig, base_url: str | None = None, api_key: str | None = None
) -> tuple[str, str]:
    """The base URL and API key to use: from arguments, then the agent's
    config, then OPENAI_BASE_URL / OPENAI_API_KEY, then (the URL only)
    `base_url` in config.toml. A malformed URL is a ConfigError naming where it
    came from."""
    url, source = base_url, "the base_url argument"
    if not url:
        url, source = config.base_url, "the agent's stored base_url"
    if not url:
        url, source = os.environ.get("OPENAI_BASE_URL"), "$OPENAI_BASE_URL"
    if not url:  # the file is read only when needed
        url, source = configured_base_url(), f"base_url in {config_path()}"
    url = check_base_url(url or OPENAI_DEFAULT_BASE_URL, source)
    key = api_key or os.environ.get("OPENAI_API_KEY")
    if not key:
        if url.rstrip("/") == OPENAI_DEFAULT_BASE_URL:
            raise ConfigError(
                "no API key: set OPENAI_API_KEY, or point OPENAI_BASE_URL at a local server "
                f"(e.g. {URL_EXAMPLE} for Ollama)"
            )
        key = PLACEHOLDER_KEY
    return url, key


def resolve_timeout(config: LLMConfig, timeout: float | None = None) -> float:
    """The limit on one request, in seconds: the argument, then the agent's own
    (`llm.timeout_seconds`), then $MEMGPT_LITE_TIMEOUT, config.toml, the default."""
    if timeout is not None:
        return check_timeout(timeout, "timeout")
    if config.timeout_seconds is not None:
        return config.timeout_seconds
    configured = configured_timeout()
    return check_timeout(configured.value, configured.source)


def _is_context_length_error(exc: openai.APIStatusError) -> bool:
    code = getattr(exc, "code", None)
    text = str(exc).lower()
    return code == "context_length_exceeded" or any(
        phrase in text
        for phrase in (
            "maximum context length",
            "context length",
            "context_length_exceeded",
            "context window",
            "too many tokens",
            "prompt is too long",
        )
    )


def _is_tool_choice_error(exc: openai.APIStatusError) -> bool:
    return exc.status_code in (400, 422) and "tool_choice" in str(exc).lower()


class LLMClient:
    """Calls chat completions on one endpoint: `complete` from synchronous
    code, `acomplete` in a running event loop. Each call is one request bounded
    by `timeout` seconds as a whole."""

    def __init__(
        self,
        config: LLMConfig,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
    ) -> None:
        self.base_url, key = resolve_endpoint(config, base_url, api_key)
        self.timeout = resolve_timeout(config, timeout)
        self._clients = AsyncClients(
            base_url=self.base_url, api_key=key, max_retries=0, timeout=client_timeout(self.timeout)
        )
        self.seconds_in_calls = 0.0  # so callers can tell their own time from the endpoint's
        self._seconds_lock = threading.Lock()

    def close(self) -> None:
        """Close the pooled connections now (otherwise when the client is collected)."""
        self._clients.close()

    def complete(
        self, config: LLMConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> Completion:
        """One chat completion with the model and options in `config`. Falls back
        from tool_choice "required" to "auto" when the endpoint refuses it; the
        completion's `tool_choice` says which one worked."""
        self._clients.for_loop(background_loop())
        return run_sync(self.acomplete(config, messages, tools))

    async def acomplete(
        self, config: LLMConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> Completion:
        """`complete`, awaited in the caller's event loop."""
        call = EndpointCall(
            f"the model endpoint {self.base_url}", self.timeout, config.max_retries, TIMEOUT_HINT
        )
        started = time.perf_counter()
        try:
            try:
                return await self._create(call, config, messages, tools, config.tool_choice)
            except openai.APIStatusError as exc:
                if not (tools and config.tool_choice == "required" and _is_tool_choice_error(exc)):
                    raise self._error(exc, config, call) from exc
            try:
                return await self._create(call, config, messages, tools, "auto")
            except openai.APIStatusError as exc:
                raise self._error(exc, config, call) from exc
        finally:
            with self._seconds_lock:
                self.seconds_in_calls += time.perf_counter() - started

    async def _create(
        self,
        call: EndpointCall,
        config: LLMConfig,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        tool_choice: ToolChoice,
    ) -> Completion:
        request: dict[str, Any] = {"model": config.model, "messages": messages}
        if tools:
            request["tools"] = tools
            request["tool_choice"] = tool_choice
        if config.temperature is not None:
            request["temperature"] = config.temperature
        client = self._clients.get()

        async def attempt() -> httpx2.Response:
            raw = await client.chat.completions.with_raw_response.create(**request)
            return raw.http_response

        response = await call.run(attempt)
        completion = completion_from(json_answer(response, call.name, parse_json), call.name)
        completion.tool_choice = tool_choice
        return completion

    def _error(self, exc: openai.APIStatusError, config: LLMConfig, call: EndpointCall) -> LLMError:
        message = error_text(exc)
        if _is_context_length_error(exc):
            return ContextWindowExceeded(f"{call.name} refused the request as too long: {message}")
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


def _safe_tool_name(name: str) -> str:
    """A name the API accepts when the call is sent back in the history. Some
    local models prefix "functions." or invent names with spaces; the loop then
    answers the call as an unknown tool."""
    name = name.removeprefix("functions.")
    cleaned = re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64]
    return cleaned or "missing_tool_name"


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__
    )


def completion_from(data: Any, name: str) -> Completion:
    """Our view of a chat completion's JSON, tolerant of what small servers
    send; an LLMError naming `name` (the endpoint) when there is no message."""
    if not isinstance(data, dict):
        raise LLMError(f"{name} answered {_kind(data)}, not a chat completion")
    error = data.get("error")
    if "choices" not in data and error:
        message = error.get("message") if isinstance(error, dict) else error
        raise LLMError(f"{name} answered an error: {one_line(str(message))}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        shown = body_summary(json.dumps(data, ensure_ascii=False))
        raise LLMError(f"{name} answered a completion with no choices: {shown}")
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        raise LLMError(f"{name} answered a completion whose first choice has no message")
    return Completion(
        content=_content(message.get("content"), name),
        tool_calls=_tool_calls(message.get("tool_calls"), name),
        usage=_usage(data.get("usage")),
    )


def _content(content: Any, name: str) -> str | None:
    if isinstance(content, list):  # content parts, as some servers send
        texts = [p.get("text") for p in content if isinstance(p, dict)]
        content = "".join(t for t in texts if isinstance(t, str))
    if content is not None and not isinstance(content, str):
        raise LLMError(f"{name} answered a message whose content is {_kind(content)}, not text")
    return (clean_text(content) or None) if content is not None else None


def _tool_calls(raw_calls: Any, name: str) -> list[ToolCall]:
    if raw_calls is None:
        return []
    if not isinstance(raw_calls, list):
        raise LLMError(f"{name} answered a message whose tool_calls is {_kind(raw_calls)}")
    calls: list[ToolCall] = []
    seen: set[str] = set()
    for raw in raw_calls:
        if not isinstance(raw, dict):
            raise LLMError(f"{name} answered a tool call that is {_kind(raw)}, not an object")
        function = raw.get("function") if isinstance(raw.get("function"), dict) else {}
        call_id = raw.get("id") if isinstance(raw.get("id"), str) else None
        call_id = clean_text(call_id) if call_id and call_id not in seen else None
        call_id = call_id or f"call_{uuid.uuid4().hex[:24]}"
        seen.add(call_id)
        tool = function.get("name") if isinstance(function.get("name"), str) else ""
        arguments = function.get("arguments")
        if arguments is None:
            arguments = ""
        elif not isinstance(arguments, str):  # an object instead of JSON text
            arguments = json.dumps(arguments, ensure_ascii=False)
        calls.append(ToolCall(id=call_id, name=_safe_tool_name(tool), arguments=arguments))
    return calls


def _usage(raw: Any) -> Usage:
    usage = Usage(requests=1)
    if isinstance(raw, dict):
        for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
            value = raw.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                setattr(usage, key, value)
    return usage
