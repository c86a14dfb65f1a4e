"""A model endpoint as settings give it: its base URL, API key and request
timeout, checked, and the order they are chosen in.

`choose_endpoint` and `choose_timeout` hold the precedence: the argument,
then the agent's own (`LLMConfig`), then the fallbacks an edge passes (the
environment and config.toml: resolve.py), then the default. The layers below
the edges call them with no fallbacks, so nothing here reads the environment.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import urlsplit

from memgpt_lite.errors import ConfigError

if TYPE_CHECKING:
    from memgpt_lite.models import LLMConfig

URL_EXAMPLE = "http://localhost:11434/v1"
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Sent to servers that ignore keys (Ollama, llama.cpp, vLLM, LM Studio).
PLACEHOLDER_KEY = "not-needed"
# One model request as a whole may take this long: local models on a CPU and
# reasoning models can take minutes to answer, and nothing arrives before the
# whole answer is ready.
DEFAULT_TIMEOUT_SECONDS = 300.0

# How a stored API key sealed at rest begins (storage/core/sealed_keys.py).
# A key still sealed in memory is one this process could not open.
SEALED_PREFIX = "sealed:"
SEALED_KEY_PROBLEM = (
    "the agent's API key is sealed with a secret this process does not have: give it the "
    "server's ($MEMGPT_LITE_SECRET, or the file secret.key of the server's $MEMGPT_LITE_HOME), "
    "or set the agent's key again"
)

# A fallback for the base URL, asked only when nothing before it gave one:
# the URL (or None) and where it came from, for errors.
URLFallback = Callable[[], tuple[str | None, str]]


class Endpoint(NamedTuple):
    """Where requests go, and the key they carry."""

    base_url: str
    api_key: str


def check_base_url(url: str, source: str) -> str:
    """`url` without surrounding spaces if it can be an endpoint's base URL,
    else a ConfigError naming `source` (where the URL came from) and what to write."""
    text = url.strip()
    problem = None
    if "://" not in text:
        bare = re.sub(r"^https?:/*", "", text, flags=re.IGNORECASE)
        raise ConfigError(f"{source} {url!r} has no http:// or https://: write http://{bare}")
    if any(c.isspace() for c in text):
        problem = "contains spaces"
    else:
        try:
            parts = urlsplit(text)
            parts.port  # noqa: B018 - raises ValueError for a bad port
        except ValueError as exc:
            problem = f"is not a valid URL ({exc})"
        else:
            if parts.scheme.lower() not in ("http", "https"):
                problem = f"must start with http:// or https://, not {parts.scheme}://"
            elif not parts.hostname:
                problem = "has no host name"
    if problem:
        raise ConfigError(f"{source} {url!r} {problem} (for example {URL_EXAMPLE})")
    return text


def check_timeout(value: object, source: str) -> float:
    """`value` as a number of seconds, or a ConfigError naming `source`."""
    seconds = value
    if isinstance(value, str):
        try:
            seconds = float(value)
        except ValueError:
            seconds = None
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not (math.isfinite(seconds) and seconds > 0)
    ):
        raise ConfigError(f"{source} must be a positive number of seconds, got {value!r}")
    return float(seconds)


def choose_endpoint(
    config: LLMConfig,
    base_url: str | None = None,
    api_key: str | None = None,
    *,
    url_fallbacks: Iterable[URLFallback] = (),
    key_fallback: str | None = None,
) -> Endpoint:
    """The base URL and API key to use: from the arguments, then the agent's
    config (its own key, if it has one), then `url_fallbacks` in order (each
    asked only if needed) and `key_fallback`, then OpenAI's URL. A malformed
    URL is a ConfigError naming where it came from; no key for OpenAI's URL
    is one too, and any other URL gets the placeholder key."""
    url, source = base_url, "the base_url argument"
    if not url:
        url, source = config.base_url, "the agent's stored base_url"
    for fallback in url_fallbacks:
        if url:
            break
        url, source = fallback()
    url = check_base_url(url or OPENAI_DEFAULT_BASE_URL, source)
    stored = config.api_key.get_secret_value() if config.api_key else None
    if stored is not None and stored.startswith(SEALED_PREFIX) and not api_key:
        raise ConfigError(SEALED_KEY_PROBLEM)
    key = api_key or stored or key_fallback
    if not key:
        if url.rstrip("/") == OPENAI_DEFAULT_BASE_URL:
            raise ConfigError(
                "no API key: set OPENAI_API_KEY, or point OPENAI_BASE_URL at a local server "
                f"(e.g. {URL_EXAMPLE} for Ollama)"
            )
        key = PLACEHOLDER_KEY
    return Endpoint(url, key)


def choose_timeout(
    config: LLMConfig, timeout: float | None = None, fallback: Callable[[], float] | None = None
) -> float:
    """The limit on one request, in seconds: the argument, then the agent's own
    (`llm.timeout_seconds`), then `fallback` (asked only if needed), then the
    default."""
    if timeout is not None:
        return check_timeout(timeout, "timeout")
    if config.timeout_seconds is not None:
        return config.timeout_seconds
    return DEFAULT_TIMEOUT_SECONDS if fallback is None else fallback()
