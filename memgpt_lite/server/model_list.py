"""The models the server's endpoints serve, as Letta's clients list them
(letta/models.py: `GET /v1/models/`), and what Letta's model handles name.

Each endpoint an agent made over HTTP may use (endpoints.py) is asked for
its models (`GET /models`, OpenAI's list) with a short timeout, and its
answer kept for a minute, so a client that lists models at each start costs
the endpoint one request a minute at most. An endpoint that does not answer
lists the server's default model if it is the server's own endpoint
($MEMGPT_LITE_MODEL, or `model` in config.toml), nothing otherwise; its
failure is kept as long as an answer, so a dead endpoint costs one timeout
a minute, not one per request.

A model's handle is `PROVIDER/NAME`: `openai/NAME` for the server's own
endpoint, `HOST:PORT/NAME` for an allowed one (with `-2`, `-3` after the
port for a second endpoint on one host and port, in the order the server
was given them), so that an agent created with a listed handle uses that
endpoint. Its context window is the one the endpoint reports on the
model's entry, else our table of well-known models, else a cautious default
(memory/recall/window.py).

A user's providers (agent/providers.py) list their models too, under
their names (`lc-openai/gpt-4o-mini`), each endpoint asked with the
provider's key, its answer kept by URL and key.

Letta's hosted names (`letta/letta-free`, `letta/auto`) name the server's
default model on its own endpoint: an agent created with one shows that
model in its `llm_config`. A server without a default model refuses them
with a 422 that says how to set one.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from memgpt_lite.errors import ConfigError, LLMError
from memgpt_lite.llm.probe import ModelEntry, list_models
from memgpt_lite.memory.recall.window import window_for_model
from memgpt_lite.models import LLMConfig
from memgpt_lite.server.endpoints import AllowedEndpoints, endpoint_identity
from memgpt_lite.settings.endpoint import PLACEHOLDER_KEY
from memgpt_lite.settings.resolve import configured_model, resolve_endpoint

# Long enough for a local server that is up, short enough that a client
# listing models does not wait on one that is down.
ASK_TIMEOUT_SECONDS = 3.0
# How long an endpoint's answer (or its failure) is kept.
KEEP_SECONDS = 60.0
OWN_PROVIDER = "openai"
# Letta's hosted models, which name the server's default model here.
HOSTED_NAMES = frozenset(["letta/letta-free", "letta/auto"])

# Asks an endpoint for its models: (base URL, API key, timeout) -> entries,
# or an LLMError when it cannot say.
Lister = Callable[[str, str, float], list[ModelEntry]]


@dataclass(frozen=True)
class ListedModel:
    """One model of one endpoint, as the server lists it."""

    name: str
    # "openai" for the server's own endpoint, HOST:PORT for an allowed one,
    # a user's provider's name for its models.
    provider: str
    endpoint: str  # the endpoint's base URL
    context_window: int
    provider_type: str = "openai"
    # "base": the operator's endpoint; "byok": a user's provider (their key).
    category: str = "base"

    @property
    def handle(self) -> str:
        return f"{self.provider}/{self.name}"

    @property
    def is_embedding(self) -> bool:
        """An embedding model, by its name, as OpenAI's and local servers
        name them ("text-embedding-3-small", "nomic-embed-text")."""
        return "embed" in self.name.lower()


class ModelList:
    """The models of the server's endpoints, each endpoint's answer kept for
    `KEEP_SECONDS` (see the module's doc)."""

    def __init__(
        self,
        endpoints: AllowedEndpoints,
        default_model: str | None,
        own_key: str | None,
        lister: Lister = list_models,
    ) -> None:
        self.endpoints = endpoints
        self.default_model = default_model
        self._own_key = own_key  # None: the server has no key for its endpoint
        self._lister = lister
        self._kept: dict[str, tuple[float, list[ModelEntry] | None]] = {}
        self._lock = threading.Lock()

    @classmethod
    def for_server(cls, endpoints: AllowedEndpoints) -> ModelList:
        """The list of this process's endpoints: its default model from the
        environment or config.toml, its key for its own endpoint (None when
        it has none that endpoint would take)."""
        try:
            _, key = resolve_endpoint(LLMConfig(model="any"))
        except ConfigError:
            key = None
        return cls(endpoints, configured_model(), key)

    def providers(self) -> dict[str, str]:
        """Each endpoint's base URL by its provider name, the server's own first."""
        own, *extra = self.endpoints.urls or (None,)
        named = {} if own is None else {OWN_PROVIDER: own}
        for url in extra:
            _, host, port, _ = endpoint_identity(url, "the allowed endpoint")
            base = f"{host}:{port}"
            name, n = base, 1
            while name in named:
                n += 1
                name = f"{base}-{n}"
            named[name] = url
        return named

    def models(self) -> list[ListedModel]:
        """Every endpoint's models, the server's own endpoint's first (its
        default model first among them)."""
        listed: list[ListedModel] = []
        for provider, url in self.providers().items():
            entries = self._entries(url, own=provider == OWN_PROVIDER)
            for entry in entries:
                window = entry.context_window or window_for_model(entry.id)
                listed.append(ListedModel(entry.id, provider, url, window))
        return listed

    def provider_models(
        self, name: str, provider_type: str, url: str, key: str
    ) -> list[ListedModel]:
        """The models of a user's provider `name`: its endpoint asked with
        its key, the answer kept as an endpoint's (by URL and key: one
        user's answer is never another key's)."""
        entries = self._entries(url, own=False, key=key)
        return [
            ListedModel(
                e.id, name, url, e.context_window or window_for_model(e.id), provider_type, "byok"
            )
            for e in entries
        ]

    def forget(self, url: str, key: str) -> None:
        """Drop what the endpoint answered with `key`: the next list asks it again."""
        with self._lock:
            self._kept.pop(_kept_as(url, key), None)

    def _entries(self, url: str, own: bool, key: str | None = None) -> list[ModelEntry]:
        """The endpoint's models, asked at most once per `KEEP_SECONDS` (with
        `key`, a user's provider's: else the server's rule); the server's own
        lists its default model first, and that one alone when it does not
        answer."""
        now = time.monotonic()
        kept_as = _kept_as(url, key)
        with self._lock:
            kept = self._kept.get(kept_as)
        if kept is None or now - kept[0] >= KEEP_SECONDS:
            kept = (now, self._ask(url, own, key))
            with self._lock:
                self._kept[kept_as] = kept
        entries = list(kept[1] or ())
        if own and self.default_model is not None:
            default = next((e for e in entries if e.id == self.default_model), None)
            entries = [default or ModelEntry(self.default_model)] + [
                e for e in entries if e.id != self.default_model
            ]
        return entries

    def _ask(self, url: str, own: bool, given: str | None = None) -> list[ModelEntry] | None:
        """The endpoint's answer, or None when it gives none. The server's key
        goes to its own endpoint only (context.py's `endpoint_key`); a
        user's provider's key (`given`) to its own."""
        if own and self._own_key is None:  # OpenAI's own URL and no key: it would refuse
            return None
        key = self._own_key if own and self._own_key is not None else PLACEHOLDER_KEY
        key = key if given is None else given
        try:
            return self._lister(url, key, ASK_TIMEOUT_SECONDS)
        except LLMError:
            return None

    def hosted_default(self, handle: str) -> str | None:
        """The model a Letta hosted name (`letta/letta-free`, `letta/auto`)
        stands for: the server's default model. None for any other handle;
        a 422 saying how to set one when the server has none."""
        if handle.strip().lower() not in HOSTED_NAMES:
            return None
        if self.default_model is None:
            raise ConfigError(
                f"model {handle.strip()!r} is one of Letta's hosted models, which this server "
                "maps to its default model, and it has none: set $MEMGPT_LITE_MODEL (or model "
                "in config.toml) where the server runs, or give a model your endpoint serves, "
                "e.g. 'openai/gpt-4o-mini'"
            )
        return self.default_model

    def endpoint_of(self, handle: str) -> tuple[str, str] | None:
        """(model name, base URL) when `handle` names an allowed endpoint
        other than the server's own by its provider name (`HOST:PORT/NAME`);
        None for any other handle."""
        provider, slash, name = handle.strip().partition("/")
        if not slash or not name or provider == OWN_PROVIDER:
            return None
        url = self.providers().get(provider)
        return None if url is None else (name, url)


def _kept_as(url: str, key: str | None) -> str:
    """Where an endpoint's answer to `key` is kept: the URL, with a digest of
    a user's key (never the key itself) for a provider's."""
    if key is None:
        return url
    return f"{url} {hashlib.sha256(key.encode()).hexdigest()}"
