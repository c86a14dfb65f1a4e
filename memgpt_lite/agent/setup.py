"""Setting an agent up: what `Agent.create` checks and stores, and what
`Agent.create` and `Agent.load` open.

A new agent's state and blocks, every argument checked before anything is
stored (`new_agent`); whether a stored agent is the one asked for:
`Agent.create(..., exist_ok=True)` opens an agent of that name only if it
has what the caller chose (model, settings, system prompt, blocks); the
store to open (`open_store`) and the tools given (`given_tools`): functions
run in this process, built-in tools attached by name, names of tools its owner
registered; the agent's custom tools, those given in code and those of its
`tool_names` that its owner registered (`agent_custom_tools`). And an
agent's embedder, built with what the settings resolve (`embedder_for`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memgpt_lite.embeddings.embedder import Embedder, check_embedder_name, make_embedder
from memgpt_lite.errors import AlreadyExistsError, ConfigError, validation_messages
from memgpt_lite.memory.core.blocks import default_blocks, memory_prompt
from memgpt_lite.models import AgentSettings, AgentState, Block, LLMConfig
from memgpt_lite.settings.endpoint import check_base_url, check_timeout
from memgpt_lite.settings.resolve import resolve_db, resolve_endpoint
from memgpt_lite.settings.values import Settings
from memgpt_lite.storage.open import open_storage
from memgpt_lite.storage.protocol import Storage
from memgpt_lite.tools.builtin import BUILTIN_TOOLS
from memgpt_lite.tools.registry import ToolBuild, registry_tools
from memgpt_lite.tools.schema import Tool, as_tool
from memgpt_lite.tools.sets import ATTACHABLE_TOOLS, agent_tools

# A tool to give an agent: a function (or `Tool`) that runs in this process,
# the name of a built-in tool to attach (tools/sets.py's ATTACHABLE_TOOLS),
# or the name of a tool its owner registered (`memgpt-lite tools add`).
ToolLike = Tool | Callable[..., Any] | str


def open_store(store: Storage | None, db: str | Path | None, settings: Settings) -> Storage:
    """`store`, else the database at `db` (a SQLite file or a postgresql://
    URL), else the one the command line would use: $MEMGPT_LITE_DB, then `db`
    in config.toml, then the default file."""
    if store is not None:
        return store
    return open_storage(str(resolve_db(db).value), settings=settings.storage)


@dataclass(frozen=True)
class GivenTools:
    """The `tools=[...]` of `Agent.create` or `Agent.load`, sorted out: the
    built-in tools attached by name (`attached`: a name of
    `ATTACHABLE_TOOLS`, or that built-in `Tool` itself), the custom tools
    given in code, by name, and the names of registered tools
    (`registered`: any other name, checked against the registry)."""

    attached: list[str]
    custom: dict[str, Tool]
    registered: list[str]


def given_tools(tools: Iterable[ToolLike]) -> GivenTools:
    """The tools given, sorted out (see `GivenTools`). Two of one name, or a
    custom tool named like a built-in, is a ConfigError."""
    attached: list[str] = []
    registered: list[str] = []
    custom: dict[str, Tool] = {}
    for item in tools:
        if isinstance(item, str):
            (attached if item in ATTACHABLE_TOOLS else registered).append(item)
            continue
        given = as_tool(item)
        if ATTACHABLE_TOOLS.get(given.name) is given:
            attached.append(given.name)
            continue
        taken = given.name in BUILTIN_TOOLS or given.name in ATTACHABLE_TOOLS
        if taken or given.name in custom:
            raise ConfigError(f"two tools are named {given.name!r}")
        custom[given.name] = given
    registered = [name for name in dict.fromkeys(registered) if name not in custom]
    return GivenTools(list(dict.fromkeys(attached)), custom, registered)


def check_registered(store: Storage, owner: str, names: Sequence[str]) -> None:
    """A ConfigError naming the first of `names` that `owner` has not registered."""
    if not names:
        return
    known = {definition.name for definition in store.list_tools(owner)}
    for name in names:
        if name not in known:
            raise ConfigError(
                f"no registered tool named {name!r}; add it with `memgpt-lite tools add "
                "FILE.py`, or give the function itself (the built-in tools attached by "
                f"name are: {', '.join(ATTACHABLE_TOOLS)})"
            )


def agent_custom_tools(
    state: AgentState, store: Storage, given: dict[str, Tool], settings: Settings
) -> tuple[dict[str, Tool], list[str]]:
    """The agent's custom tools: those `given` in code, and those of its
    `tool_names` that its owner registered (a function given in code wins
    over a registered tool of its name); and the names it has neither for."""
    wanted = [
        name for name in state.tool_names if name not in given and name not in ATTACHABLE_TOOLS
    ]
    build = ToolBuild(store=store, limits=settings.tools)
    registered = registry_tools(state.owner, wanted, build)
    missing = [name for name in wanted if name not in registered]
    return {**given, **registered}, missing


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
    which of its fields, block labels and built-in tools attached by name
    the caller chose."""

    state: AgentState
    llm_keys: set[str]
    settings_keys: set[str]
    system_given: bool
    labels: list[str]
    attached: list[str]


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
    unattached = [name for name in wanted.attached if name not in stored.tool_names]
    if unattached:
        return f"without tool {unattached[0]!r}"
    return None


@dataclass(frozen=True)
class NewAgent:
    """An agent `Agent.create` is to store, checked: its state and blocks,
    the base URL as checked, and what to hold against an agent of that name
    already stored."""

    state: AgentState
    blocks: list[Block]
    base_url: str | None
    wanted: Wanted


def new_agent(
    name: str,
    model: str,
    *,
    blocks: Sequence[Block] | None,
    tools: Iterable[ToolLike],
    system: str | None,
    base_url: str | None,
    timeout: float | None,
    settings: AgentSettings | None,
    llm_options: dict[str, Any] | None,
    embedder: Embedder | str | None,
    owner: str,
) -> NewAgent:
    """`Agent.create`'s arguments checked, before anything is stored: a bad
    timeout, base URL, tool name (or two tools of one name), embedder name,
    block label given twice or state is a ConfigError."""
    if timeout is not None:
        check_timeout(timeout, "timeout")
    if base_url is not None:
        base_url = check_base_url(base_url, "the base_url argument")
    given = given_tools(tools)
    given_blocks = blocks is not None
    blocks = list(blocks) if blocks is not None else default_blocks(name=name)
    settings = (settings or AgentSettings()).model_copy()
    agent_tools(settings.tool_set, given.custom)  # a name clash is refused here
    if embedder is not None:
        settings.embedder = (
            check_embedder_name(embedder) if isinstance(embedder, str) else embedder.name
        )
    labels = [b.label for b in blocks]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"block labels must be unique, got {labels}")
    llm_config = {"model": model, "base_url": base_url, **(llm_options or {})}
    tool_names = [*given.attached, *given.custom, *given.registered]
    state = new_state(name, llm_config, system, tool_names, settings, owner)
    wanted = Wanted(
        state=state,
        llm_keys={"model", *(llm_options or {}), *(["base_url"] if base_url else [])},
        settings_keys=set(settings.model_fields_set),
        system_given=system is not None,
        labels=labels if given_blocks else [],
        attached=given.attached,
    )
    return NewAgent(state=state, blocks=blocks, base_url=base_url, wanted=wanted)


def store_new_agent(store: Storage, new: NewAgent, exist_ok: bool) -> AgentState:
    """Store `new`, or, with `exist_ok`, the row of the agent of that name
    already stored (`stored_as_wanted`), nothing stored changed.

    An agent of that name already stored is an `AlreadyExistsError`, or with
    `exist_ok` it is opened as `Agent.load` would: the given blocks' texts
    only start a new agent (a stored one keeps what it learned), but a model,
    block label, system prompt, base_url, llm option, setting or embedder
    given that the stored agent does not have is a ConfigError naming the
    first difference. Names are unique within an owner: another user's agent
    of that name is never opened (their own is created beside it)."""
    try:
        store.create_agent(new.state, new.blocks)
    except AlreadyExistsError:
        if not exist_ok:
            raise
        return stored_as_wanted(store, new.wanted)
    return new.state


def stored_as_wanted(store: Storage, wanted: Wanted) -> AgentState:
    """The owner's stored agent named like `wanted`, or a ConfigError naming
    how it differs."""
    stored = store.get_agent(wanted.state.name, owner=wanted.state.owner)
    difference = _difference(stored, [b.label for b in store.get_blocks(stored.id)], wanted)
    if difference:
        raise ConfigError(
            f"agent {stored.name!r} already exists {difference}; nothing was changed "
            "(Agent.load opens it as it is)"
        )
    return stored
