"""A new agent's state, and whether a stored agent is the one asked for:
`Agent.create(..., exist_ok=True)` opens an agent of that name only if it
has what the caller chose (model, settings, system prompt, blocks). And an
agent's embedder, built with what the settings resolve (`embedder_for`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from memgpt_lite.embeddings.embedder import Embedder, check_embedder_name, make_embedder
from memgpt_lite.errors import AlreadyExistsError, ConfigError, validation_messages
from memgpt_lite.memory.core.blocks import memory_prompt
from memgpt_lite.models import AgentSettings, AgentState, LLMConfig
from memgpt_lite.settings.resolve import resolve_endpoint
from memgpt_lite.settings.values import Settings
from memgpt_lite.storage.protocol import Storage


def embedder_for(
    spec: str, settings: Settings, base_url: str | None = None, api_key: str | None = None
) -> Embedder:
    """The embedder `spec` names ("local" or "endpoint:MODEL"), built with
    what the edge resolves: an endpoint embedder's URL and key (the arguments,
    else $OPENAI_BASE_URL / $OPENAI_API_KEY, else config.toml's URL; asked
    only for one), the local model's folder (`settings`)."""
    kind, _, model = check_embedder_name(spec).partition(":")
    if kind == "endpoint":
        base_url, api_key = resolve_endpoint(LLMConfig(model=model), base_url, api_key)
    return make_embedder(
        spec, base_url=base_url, api_key=api_key, local_model_dir=settings.embedding_model_dir
    )


def new_state(
    name: str,
    llm_config: dict[str, Any],
    system: str | None,
    tool_names: list[str],
    settings: AgentSettings,
    owner: str,
) -> AgentState:
    """The state of a new agent, or a ConfigError saying what is wrong with it."""
    try:
        return AgentState(
            name=name,
            owner=owner,
            llm=LLMConfig(**llm_config),
            system=system if system is not None else memory_prompt("system", settings.tool_set),
            tool_names=tool_names,
            settings=settings,
        )
    except ValidationError as exc:
        raise ConfigError(f"cannot create agent {name!r}: {validation_messages(exc)}") from None


@dataclass(frozen=True)
class Wanted:
    """What `Agent.create(..., exist_ok=True)` was given, to hold against the
    agent of that name already stored: the state it would have created, and
    which of its fields, and which block labels, the caller chose."""

    state: AgentState
    llm_keys: set[str]
    settings_keys: set[str]
    system_given: bool
    labels: list[str]


def _difference(stored: AgentState, stored_labels: Sequence[str], wanted: Wanted) -> str | None:
    """The first thing the caller asked for that the stored agent does not
    have, in words ("with model 'a', not 'b'"); None when it has them all."""
    compared = [
        *((key, stored.llm, wanted.state.llm) for key in sorted(wanted.llm_keys - {"model"})),
        *((key, stored.settings, wanted.state.settings) for key in sorted(wanted.settings_keys)),
    ]
    for key, have, want in [("model", stored.llm, wanted.state.llm), *compared]:
        if getattr(have, key) != getattr(want, key):
            return f"with {key} {getattr(have, key)!r}, not {getattr(want, key)!r}"
    if wanted.system_given and stored.system != wanted.state.system:
        return "with another system prompt"
    missing = [label for label in wanted.labels if label not in stored_labels]
    if missing:
        return f"without block{'s' if len(missing) > 1 else ''} " + ", ".join(map(repr, missing))
    return None


def stored_as_wanted(store: Storage, wanted: Wanted) -> AgentState:
    """The stored agent named like `wanted`, or a ConfigError naming how it
    differs; an AlreadyExistsError if it is another user's (never opened)."""
    stored = store.get_agent(wanted.state.name)
    if stored.owner != wanted.state.owner:
        raise AlreadyExistsError(
            f"an agent named {stored.name!r} already exists and belongs to another user"
        )
    difference = _difference(stored, [b.label for b in store.get_blocks(stored.id)], wanted)
    if difference:
        raise ConfigError(
            f"agent {stored.name!r} already exists {difference}; nothing was changed "
            "(Agent.load opens it as it is)"
        )
    return stored
