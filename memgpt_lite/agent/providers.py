"""Users' providers (Letta's bring-your-own-key providers; see
storage/protocols/providers.py): what the server does with them.

A provider is a model endpoint of the user's with the API key they brought,
under a name of theirs: its models are `NAME/MODEL` (`lc-openai/gpt-4o-mini`),
and an agent made with one keeps the provider's name (`llm.provider`). Each
time the agent's model client is made (agent/runner.py), the provider is
looked up (`provider_endpoint`): its endpoint and key as they are now, so a
new key reaches its agents, and a provider deleted stops them, in one line,
until one of that name is connected again.

We call models through OpenAI's chat completions only (llm/), so only the
provider types whose servers speak OpenAI's API are served
(`OPENAI_COMPATIBLE`); another (`anthropic`, `google_ai`, `bedrock`, ...) is
a 422 saying so, and naming the way round it: the type `openai` with the
`base_url` of any OpenAI-compatible API. A type with a public service gets
that service's URL when it names none, as in Letta; a local server's type
(`ollama`, `vllm`, ...) gets the usual local URL, or needs one. Whether the
server may reach the URL is the server's rule (server/endpoints.py),
applied by the caller's `check` before anything is stored.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from typing import Any
from urllib.parse import urlsplit

from pydantic import SecretStr, ValidationError

from memgpt_lite.errors import AlreadyExistsError, ConfigError, validation_message
from memgpt_lite.models import AgentState
from memgpt_lite.settings.endpoint import PLACEHOLDER_KEY, SEALED_PREFIX
from memgpt_lite.storage.protocol import Storage
from memgpt_lite.storage.protocols.providers import Provider

__all__ = [
    "OPENAI_COMPATIBLE",
    "Provider",
    "Providers",
    "endpoint_for",
    "provider_endpoint",
    "usable_endpoint",
]

# Letta's provider types (and Letta Code's) whose servers speak OpenAI's API,
# each with the base URL a provider of that type gets when it names none
# (None: it must name one). Letta's public defaults; the local servers' usual
# addresses, as Letta Code's /connect describes them.
OPENAI_COMPATIBLE: dict[str, str | None] = {
    "openai": "https://api.openai.com/v1",
    "groq": "https://api.groq.com/openai/v1",
    "together": "https://api.together.xyz/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "deepseek": "https://api.deepseek.com/v1",
    "xai": "https://api.x.ai/v1",
    "mistral": "https://api.mistral.ai/v1",
    "cerebras": "https://api.cerebras.ai/v1",
    "baseten": "https://inference.baseten.co/v1",
    "fireworks": "https://api.fireworks.ai/inference/v1",
    "zai": "https://api.z.ai/api/paas/v4",
    "zai_coding": "https://api.z.ai/api/coding/paas/v4",
    "moonshot": "https://api.moonshot.ai/v1",
    "ollama": "http://localhost:11434/v1",
    "lmstudio": "http://127.0.0.1:1234/v1",
    "lmstudio_openai": "http://localhost:1234/v1",
    "llama_cpp": "http://localhost:8080/v1",
    "vllm": None,
    "sglang": None,
}
# Local servers, which serve OpenAI's API under /v1: a URL of theirs with no
# path ("http://localhost:11434", as Letta takes Ollama's) gets it.
LOCAL_SERVERS = frozenset(["ollama", "lmstudio", "lmstudio_openai", "llama_cpp", "vllm", "sglang"])
# The fields a create may give, and a modify.
CREATE_FIELDS = frozenset(["name", "provider_type", "api_key", "base_url", "region", "api_version"])
MODIFY_FIELDS = frozenset(["api_key", "base_url", "region", "api_version"])

# What a provider's name may be (storage/protocols/providers.py's ProviderName).
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# The server's rule for a URL it would connect to: raises if not allowed.
EndpointCheck = Callable[[str, str], object]


def endpoint_for(provider_type: str, base_url: str | None) -> str:
    """The OpenAI-compatible endpoint a provider of this type and
    `base_url` ("" or None: none given) is asked at; a ConfigError (422)
    for a type we cannot serve, or one that needs a URL and has none."""
    kind = provider_type.strip()
    if not kind:
        raise ConfigError("provider_type: give the provider's type, e.g. 'openai'")
    if kind not in OPENAI_COMPATIBLE:
        served = ", ".join(sorted(OPENAI_COMPATIBLE))
        raise ConfigError(
            f"provider_type {kind!r} is not served: memgpt-lite calls models through OpenAI's "
            f"chat completions API only, so a provider must be one of {served}; for another "
            "service with an OpenAI-compatible API give provider_type 'openai' and its base_url"
        )
    url = (base_url or "").strip() or OPENAI_COMPATIBLE[kind]
    if url is None:
        raise ConfigError(
            f"base_url: a {kind} provider needs the URL of its server's OpenAI-compatible "
            "API, e.g. http://localhost:8000/v1"
        )
    if kind in LOCAL_SERVERS and urlsplit(url).path in ("", "/"):
        return url.rstrip("/") + "/v1"
    return url


def _valid(fields: dict[str, Any]) -> Provider:
    """A Provider of these fields, or a one-line ConfigError (422)."""
    try:
        return Provider.model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'])}: {validation_message(error)}"
            for error in exc.errors(include_url=False)
        )
        raise ConfigError(f"provider: {problems}") from None


def _key(given: Any) -> SecretStr | None:
    """The key a request gives ("" or None: none)."""
    return SecretStr(given) if isinstance(given, str) and given else None


class Providers:
    """The providers of every user of one database."""

    def __init__(self, store: Storage) -> None:
        self.store = store

    def get(self, provider_id: str, owner: str) -> Provider:
        """The owner's provider; NotFoundError for another's, word for word."""
        return self.store.get_provider(provider_id, owner)

    def list(self, owner: str, name: str | None = None) -> list[Provider]:
        """The owner's providers (of that name), oldest first."""
        return self.store.list_providers(owner, name=name)

    def named(self, owner: str, name: str) -> Provider | None:
        """The owner's provider of that name, if any."""
        found = self.store.list_providers(owner, name=name)
        return found[0] if found else None

    def create(
        self, owner: str, fields: dict[str, Any], check: EndpointCheck, reserved: Collection[str]
    ) -> Provider:
        """A new provider of the owner's, its endpoint passed by `check`
        first; AlreadyExistsError for a name they have, or one of `reserved`
        (the server's own providers' names)."""
        given = {k: v for k, v in fields.items() if k in CREATE_FIELDS}
        kind = str(given.get("provider_type") or "")
        url = endpoint_for(kind, given.get("base_url"))
        name = str(given.get("name") or "").strip()
        if not NAME.fullmatch(name):
            raise ConfigError(
                f"name: {name!r} cannot name a provider: give letters, digits, '_', '.' or '-' "
                "(it begins the handles of its models, NAME/MODEL), e.g. 'lc-openai'"
            )
        if name.lower() in {r.lower() for r in reserved}:
            raise AlreadyExistsError(
                f"provider name {name!r} is one of the server's own providers': choose another"
            )
        provider = _valid({**given, "owner": owner, "name": name, "base_url": url, "api_key": None})
        provider.api_key = _key(given.get("api_key"))
        check(url, "base_url")
        self.store.save_provider(provider)
        return provider

    def modify(
        self, provider_id: str, owner: str, fields: dict[str, Any], check: EndpointCheck
    ) -> Provider:
        """Change the owner's provider: the fields given (`api_key` ""
        removes its key, null keeps it). A new URL is passed by `check` first, and given to
        the owner's agents of the provider too, so their views show it."""
        given = {k: v for k, v in fields.items() if k in MODIFY_FIELDS}
        with self.store.transaction():
            provider = self.get(provider_id, owner)
            stored = provider.model_dump(exclude={"api_key", "base_url"})
            url = provider.base_url
            if given.get("base_url"):
                url = endpoint_for(provider.provider_type, given["base_url"])
                check(url, "base_url")
            changed = _valid({**stored, **given, "base_url": url, "api_key": None})
            new_key = given.get("api_key")  # null keeps the key, as in Letta
            changed.api_key = provider.api_key if new_key is None else _key(new_key)
            self.store.save_provider(changed)
            if url != provider.base_url:
                self._move_agents(owner, provider.name, url)
            return changed

    def _move_agents(self, owner: str, name: str, url: str) -> None:
        """Give the owner's agents of provider `name` its new URL."""

        def moved(state: AgentState) -> None:
            state.llm.base_url = url

        for state, _ in self.store.list_agents(owner=owner):
            if state.llm.provider == name:
                self.store.update_agent(state.id, moved)

    def delete(self, provider_id: str, owner: str) -> None:
        """Delete the owner's provider: its agents' requests fail, in one
        line, until one of its name is connected again."""
        self.store.delete_provider(provider_id, owner)


def provider_endpoint(store: Storage, owner: str, name: str) -> tuple[str, str]:
    """The base URL and API key of the owner's provider `name`, as they are
    now; a one-line ConfigError when the owner has no such provider, or its
    key is sealed with a secret this process lacks."""
    found = store.list_providers(owner, name=name)
    if not found:
        raise ConfigError(
            f"the agent's provider {name!r} is not connected: connect it again "
            "(POST /v1/providers) or give the agent another model"
        )
    return usable_endpoint(found[0])


def usable_endpoint(provider: Provider) -> tuple[str, str]:
    """The provider's base URL and API key (a placeholder when it has none);
    a one-line ConfigError when its key is sealed with a secret this process
    lacks."""
    if provider.api_key is None:
        return provider.base_url, PLACEHOLDER_KEY
    key = provider.api_key.get_secret_value()
    if key.startswith(SEALED_PREFIX):
        raise ConfigError(
            f"the API key of provider {provider.name!r} is sealed with a secret this process "
            "does not have: give it the server's ($MEMGPT_LITE_SECRET, or the file secret.key "
            "of the server's $MEMGPT_LITE_HOME), or set the provider's key again"
        )
    return provider.base_url, key
