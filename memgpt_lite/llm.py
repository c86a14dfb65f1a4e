"""The model endpoint, through the `openai` package.

Any OpenAI-compatible server works. The client's own retry logic handles 429,
5xx, timeouts and dropped connections with exponential backoff and honours
`Retry-After`; we set how many retries. What the endpoint sends back is checked
here too: tool calls with missing or repeated ids get fresh ids, so the loop can
always answer every call.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import openai

from .config import configured_base_url
from .errors import ConfigError, LLMError
from .models import LLMConfig, ToolCall, ToolChoice, Usage

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Sent to servers that ignore keys (Ollama, llama.cpp, vLLM, LM Studio).
PLACEHOLDER_KEY = "not-needed"


class ContextWindowExceeded(LLMError):
    """The endpoint refused the request as longer than the model's context window."""


@dataclass
class Completion:
    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    tool_choice: ToolChoice = "required"


def resolve_endpoint(
    config: LLMConfig, base_url: str | None = None, api_key: str | None = None
) -> tuple[str, str]:
    """The base URL and API key to use: from arguments, then the agent's
    config, then OPENAI_BASE_URL / OPENAI_API_KEY, then (the URL only)
    `base_url` in config.toml."""
    url = (
        base_url
        or config.base_url
        or os.environ.get("OPENAI_BASE_URL")
        or configured_base_url()
        or OPENAI_DEFAULT_BASE_URL
    )
    key = api_key or os.environ.get("OPENAI_API_KEY")
    if not key:
        if url.rstrip("/") == OPENAI_DEFAULT_BASE_URL:
            raise ConfigError(
                "no API key: set OPENAI_API_KEY, or point OPENAI_BASE_URL at a local server "
                "(e.g. http://localhost:11434/v1 for Ollama)"
            )
        key = PLACEHOLDER_KEY
    return url, key


def error_text(exc: openai.APIStatusError) -> str:
    """The endpoint's own error message, without the client's decoration."""
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
        if isinstance(body.get("message"), str):
            return body["message"]
    return exc.message


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
    """Calls chat completions on one endpoint."""

    def __init__(
        self, config: LLMConfig, base_url: str | None = None, api_key: str | None = None
    ) -> None:
        self.base_url, api_key = resolve_endpoint(config, base_url, api_key)
        self.client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key,
            max_retries=config.max_retries,
            timeout=config.timeout_seconds,
        )
        self.max_retries = config.max_retries
        self.seconds_in_calls = 0.0  # so callers can tell their own time from the endpoint's

    def complete(
        self, config: LLMConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> Completion:
        """One chat completion with the model and options in `config`. Falls back
        from tool_choice "required" to "auto" when the endpoint refuses it; the
        completion's `tool_choice` says which one worked."""
        try:
            return self._create(config, messages, tools, config.tool_choice)
        except openai.APIStatusError as exc:
            if not (tools and config.tool_choice == "required" and _is_tool_choice_error(exc)):
                raise self._error(exc, config) from exc
        try:
            return self._create(config, messages, tools, "auto")
        except openai.APIStatusError as exc:
            raise self._error(exc, config) from exc

    def _create(
        self,
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
        started = time.perf_counter()
        try:
            response = self.client.chat.completions.create(**request)
        except openai.APITimeoutError as exc:
            raise LLMError(
                f"the model endpoint {self.base_url} timed out ({self.max_retries} retries)"
            ) from exc
        except openai.APIConnectionError as exc:
            raise LLMError(f"cannot reach the model endpoint {self.base_url}: {exc}") from exc
        finally:
            self.seconds_in_calls += time.perf_counter() - started
        completion = _completion_from(response)
        completion.tool_choice = tool_choice
        return completion

    def _error(self, exc: openai.APIStatusError, config: LLMConfig) -> LLMError:
        message = error_text(exc)
        if _is_context_length_error(exc):
            return ContextWindowExceeded(message)
        if isinstance(exc, openai.AuthenticationError):
            return LLMError(f"the endpoint {self.base_url} refused the API key: {message}")
        if isinstance(exc, openai.NotFoundError):
            return LLMError(
                f"the endpoint {self.base_url} does not know model {config.model!r} "
                f"or the path: {message}"
            )
        return LLMError(f"the endpoint {self.base_url} answered {exc.status_code}: {message}")


def _safe_tool_name(name: str) -> str:
    """A name the API accepts when the call is sent back in the history. Some
    local models prefix "functions." or invent names with spaces; the loop then
    answers the call as an unknown tool."""
    name = name.removeprefix("functions.")
    cleaned = re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64]
    return cleaned or "missing_tool_name"


def _completion_from(response: Any) -> Completion:
    """Our view of a chat completion, tolerant of what small servers send."""
    if not getattr(response, "choices", None):
        raise LLMError("the endpoint returned a completion with no choices")
    message = response.choices[0].message
    calls: list[ToolCall] = []
    seen: set[str] = set()
    for raw in message.tool_calls or []:
        function = getattr(raw, "function", None)
        call_id = raw.id if getattr(raw, "id", None) and raw.id not in seen else None
        call_id = call_id or f"call_{uuid.uuid4().hex[:24]}"
        seen.add(call_id)
        name = getattr(function, "name", None) or ""
        arguments = getattr(function, "arguments", None) or ""
        calls.append(ToolCall(id=call_id, name=_safe_tool_name(name), arguments=arguments))
    usage = Usage(requests=1)
    if response.usage is not None:
        usage.prompt_tokens = response.usage.prompt_tokens or 0
        usage.completion_tokens = response.usage.completion_tokens or 0
        usage.total_tokens = response.usage.total_tokens or 0
    return Completion(content=message.content or None, tool_calls=calls, usage=usage)
