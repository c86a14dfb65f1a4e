"""Letta's `llm_config` and `embedding_config`: how an agent shows them
(views.py) and what modify_agent (PATCH /v1/agents/{id}) changes with them.

A client often sends back the config it read, with one field changed, so a
field at the value the agent shows changes nothing. What is honoured:
`model`, `model_endpoint` (null: the server's own endpoint),
`model_endpoint_type` (one that speaks OpenAI's chat completions),
`context_window` and `temperature`; `embedding_model` with its
`embedding_endpoint_type`. Any other field set to something other than
nothing or Letta's default is a 422 naming it: never a 200 that changes
nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memgpt_lite.errors import ConfigError
from memgpt_lite.memory.recall.window import window_for_model
from memgpt_lite.models import AgentState

# Letta's endpoint types whose servers speak OpenAI's chat completions: the
# one protocol memgpt_lite calls. Views show "openai".
OPENAI_COMPATIBLE = frozenset(
    [
        "openai",
        "ollama",
        "vllm",
        "lmstudio-chatcompletions",
        "groq",
        "together",
        "openrouter",
        "deepseek",
        "xai",
        "mistral",
    ]
)
# Fields that describe a config rather than ask anything of it.
DESCRIPTIVE = frozenset(
    [
        "handle",
        "display_name",
        "provider_name",
        "provider_category",
        "model_wrapper",
        "put_inner_thoughts_in_kwargs",
        "tier",
        "compatibility_type",
        # Letta's default is on; our agents think aloud in every answer anyway.
        "enable_reasoner",
        "embedding_chunk_size",
        "batch_size",
    ]
)
LOCAL_MODEL = "all-MiniLM-L6-v2"
LOCAL_DIMENSION = 384
# An agent without an embedder searches its memory by words.
NO_EMBEDDER = "none"


def llm_config_view(state: AgentState) -> dict[str, Any]:
    """The agent's model as Letta's LLMConfig; an agent of one of its user's
    providers shows the provider's handle, name and category ("byok")."""
    llm = state.llm
    view = {
        "model": llm.model,
        "handle": llm.model,
        "model_endpoint_type": "openai",
        "model_endpoint": llm.base_url,
        "context_window": state.settings.context_window or window_for_model(llm.model),
        "temperature": llm.temperature,
        "put_inner_thoughts_in_kwargs": False,
    }
    if llm.provider is not None:
        view |= {
            "handle": f"{llm.provider}/{llm.model}",
            "provider_name": llm.provider,
            "provider_category": "byok",
        }
    return view


def embedding_config_view(state: AgentState) -> dict[str, Any]:
    """What the agent embeds with: the local model, a model at the agent's
    endpoint, or nothing (`embedding_model` "none": search by words)."""
    spec = state.settings.embedder
    if spec is None:
        return {
            "embedding_endpoint_type": "openai",
            "embedding_endpoint": None,
            "embedding_model": NO_EMBEDDER,
            "embedding_dim": 0,
            "handle": NO_EMBEDDER,
        }
    kind, _, model = spec.partition(":")
    local = kind == "local"
    return {
        "embedding_endpoint_type": "hugging-face" if local else "openai",
        "embedding_endpoint": None if local else state.llm.base_url,
        "embedding_model": LOCAL_MODEL if local else model,
        # 0 until the first passage is embedded and the space is known.
        "embedding_dim": LOCAL_DIMENSION if local else state.embedding_dimension or 0,
        "handle": spec,
    }


class _ConfigIn(BaseModel):
    """A config as a client sends it: every field kept, to be checked."""

    model_config = ConfigDict(extra="allow")

    def unhonoured(self, where: str, honoured: str) -> None:
        """A 422 naming the first field we do not honour that asks for something."""
        for name, value in (self.model_extra or {}).items():
            if name in DESCRIPTIVE or value in (None, False, 0, "", [], {}):
                continue
            raise ConfigError(
                f"{where}.{name}: memgpt-lite does not honour it; leave it out "
                f"(honoured: {honoured})"
            )


class LlmConfigPatch(_ConfigIn):
    model: str | None = None
    model_endpoint_type: str | None = None
    model_endpoint: str | None = None
    context_window: int | None = Field(default=None, gt=0)
    temperature: float | None = Field(default=None, ge=0, le=2)


class EmbeddingConfigPatch(_ConfigIn):
    embedding_endpoint_type: str | None = None
    embedding_endpoint: str | None = None
    embedding_model: str | None = None
    embedding_dim: int | None = Field(default=None, ge=0)


LLM_HONOURED = "model, model_endpoint, model_endpoint_type, context_window, temperature"
EMBEDDING_HONOURED = "embedding_model, embedding_endpoint_type"
UNCHANGED: Any = object()


@dataclass
class ConfigChange:
    """What a modify asks of the agent's model and embedder; `UNCHANGED`
    where it asks nothing."""

    model: str | None = None
    base_url: Any = UNCHANGED  # str, or None for the server's own endpoint
    temperature: Any = UNCHANGED
    context_window: int | None = None
    embedder: Any = UNCHANGED  # a spec, or None for no embedder
    provider: Any = UNCHANGED  # the user's provider's name, or None for none

    def apply(self, state: AgentState) -> None:
        """Set the fields of `state` this change names (inside its update)."""
        if self.base_url is not UNCHANGED:
            state.llm.base_url = self.base_url
        if self.provider is not UNCHANGED:
            state.llm.provider = self.provider
        if self.temperature is not UNCHANGED:
            state.llm.temperature = self.temperature
        if self.embedder is not UNCHANGED:
            state.settings.embedder = self.embedder


# What a Letta client's `llm_config.model_endpoint` passes before an agent
# stores it: the server's allowed endpoints (server/endpoints.py), which give
# the URL to store (None: the server's own).
EndpointCheck = Callable[[str], str | None]


def llm_change(
    config: LlmConfigPatch, state: AgentState, change: ConfigChange, allowed: EndpointCheck
) -> None:
    """`change` with what `config` asks of the agent's model; a new endpoint
    only if `allowed`."""
    config.unhonoured("llm_config", LLM_HONOURED)
    shown = llm_config_view(state)
    kind = config.model_endpoint_type
    if kind is not None and kind not in OPENAI_COMPATIBLE:
        raise ConfigError(
            f"llm_config.model_endpoint_type: memgpt-lite calls endpoints that speak "
            f"OpenAI's chat completions, not {kind!r} (e.g. 'openai', 'ollama', 'vllm')"
        )
    if "model_endpoint" in config.model_fields_set and config.model_endpoint != state.llm.base_url:
        url = config.model_endpoint
        change.base_url = None if url is None or not url.strip() else allowed(url)
    if config.temperature is not None and config.temperature != state.llm.temperature:
        change.temperature = config.temperature
    if config.context_window is not None and config.context_window != shown["context_window"]:
        change.context_window = config.context_window
    if config.model is not None and config.model.strip() != state.llm.model:
        change.model = config.model


def embedding_change(config: EmbeddingConfigPatch, state: AgentState, change: ConfigChange) -> None:
    """`change` with what `config` asks of the agent's embedder."""
    config.unhonoured("embedding_config", EMBEDDING_HONOURED)
    shown = embedding_config_view(state)
    model = (config.embedding_model or "").strip() or shown["embedding_model"]
    kind = config.embedding_endpoint_type or shown["embedding_endpoint_type"]
    if model == NO_EMBEDDER:
        spec = None
    elif kind == "hugging-face" or model in (LOCAL_MODEL, "local"):
        if model not in (LOCAL_MODEL, "local"):
            raise ConfigError(
                f"embedding_config.embedding_model: the local embedder is {LOCAL_MODEL}, "
                f"not {model!r}"
            )
        spec = "local"
    elif kind in OPENAI_COMPATIBLE:
        spec = f"endpoint:{model}"
    else:
        raise ConfigError(
            f"embedding_config.embedding_endpoint_type: memgpt-lite embeds at the agent's "
            f"OpenAI-compatible endpoint or locally ('hugging-face'), not {kind!r}"
        )
    endpoint = config.embedding_endpoint
    if spec is not None and spec != "local" and endpoint not in (None, state.llm.base_url):
        raise ConfigError(
            "embedding_config.embedding_endpoint: memgpt-lite embeds at the agent's model "
            "endpoint (llm_config.model_endpoint); leave it out or give that one"
        )
    _check_dimension(config, spec, state)
    if spec != state.settings.embedder:
        _check_vectors(spec, state)
        change.embedder = spec


def _check_dimension(config: EmbeddingConfigPatch, spec: str | None, state: AgentState) -> None:
    known = LOCAL_DIMENSION if spec == "local" else None
    if spec is not None and spec == state.settings.embedder and spec != "local":
        known = state.embedding_dimension
    given = config.embedding_dim
    if given and known and given != known:
        raise ConfigError(
            f"embedding_config.embedding_dim: {spec} gives {known} dimensions, not {given} "
            "(the model decides it)"
        )


def _check_vectors(spec: str | None, state: AgentState) -> None:
    """An embedder other than the one the stored vectors came from is refused."""
    space = state.embedding_model
    if spec is None or space is None:
        return
    name = f"local:{LOCAL_MODEL}" if spec == "local" else spec
    if name != space:
        raise ConfigError(
            f"embedding_config: agent {state.name!r} has vectors from {space}, not {name}; "
            f"keep that embedder, or re-embed: memgpt-lite archival {state.name} reembed"
        )
