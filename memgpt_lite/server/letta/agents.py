"""Letta's agent routes: create, list, retrieve, update, delete.

Letta names are optional free text and need not be unique; ours are unique
within the user's agents, so an agent created without a name gets
`agent-<8 hex>`, and a name the user already has is a 409. A name that is not
an identifier ("My Helper Bot") is the agent's display name, shown in
Letta's views, with an identifier derived from it (agent/naming.py).

A model handle `provider/model` whose provider Letta knows loses its prefix:
the server's endpoint (OPENAI_BASE_URL) serves every model. A handle
`GET /v1/models/` lists for an allowed endpoint (`HOST:PORT/model`) puts the
agent on that endpoint, one of the user's providers' (`lc-openai/model`) on
that provider, with its key (agent/providers.py), and Letta's hosted names
(`letta/letta-free`, `letta/auto`) name the server's default model
(server/model_list.py).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Query
from pydantic import ValidationError

from memgpt_lite.agent.naming import names_from_letta
from memgpt_lite.agent.workspace import SLEEPTIME_TYPES, AgentGroup
from memgpt_lite.agentfile.letta import LETTA_BASE_TOOLS
from memgpt_lite.errors import ConfigError, NotFoundError, validation_messages
from memgpt_lite.models import (
    DEFAULT_BLOCK_LIMIT,
    AgentSettings,
    AgentState,
    AgentStats,
)
from memgpt_lite.server import bodies as ours
from memgpt_lite.server.api_agents import create_agent, update_agent
from memgpt_lite.server.context import Context, ServerContext, User
from memgpt_lite.server.letta.bodies import (
    CreateAgent,
    LettaBody,
    LlmConfigIn,
    MemoryBlock,
    UpdateAgent,
)
from memgpt_lite.server.letta.configs import (
    UNCHANGED,
    ConfigChange,
    embedding_change,
    llm_change,
)
from memgpt_lite.server.letta.identities import linked_ids
from memgpt_lite.server.letta.paging import Order, effective_order, page
from memgpt_lite.server.letta.tool_views import builtin_name
from memgpt_lite.server.letta.views import VOICE_AGENT_TYPE, agent_view
from memgpt_lite.tool_rules import RequiresApprovalToolRule
from memgpt_lite.tools.multi_agent import MULTI_AGENT_TOOLS
from memgpt_lite.tools.rules import needs_approval, rules_from_letta
from memgpt_lite.tools.sets import ATTACHABLE_TOOLS, TOOL_SETS

router = APIRouter(prefix="/v1/agents", tags=["letta"])

# Letta's providers, whose handles ("openai/gpt-4o-mini") name a model of ours
# without the prefix. "letta/..." (Letta's hosted models) is not among them.
LETTA_PROVIDERS = frozenset(
    [
        "openai",
        "anthropic",
        "ollama",
        "lmstudio",
        "lmstudio_openai",
        "vllm",
        "groq",
        "together",
        "openrouter",
        "deepseek",
        "xai",
        "mistral",
        "google_ai",
        "google_vertex",
        "azure",
        "bedrock",
        "llamacpp",
        "koboldcpp",
        "webui",
        "hugging-face",
        "sglang",
    ]
)


def model_name(handle: str) -> str:
    """Our model name for a Letta model handle."""
    provider, slash, model = handle.strip().partition("/")
    if slash and provider.lower() == "letta":
        raise ConfigError(
            f"model {handle!r} is one of Letta's hosted models; give a model your "
            "endpoint serves, e.g. 'openai/gpt-4o-mini'"
        )
    if slash and provider.lower() in LETTA_PROVIDERS and model:
        return model
    return handle.strip()


@dataclass(frozen=True)
class ModelChoice:
    """What a Letta model handle names: the model, its endpoint (None: the
    server's own; `UNCHANGED`: the agent's stays) and the user's provider
    whose endpoint and key it uses (None: none; `UNCHANGED`: as it was)."""

    model: str
    endpoint: Any
    provider: Any = None


def chosen_model(ctx: ServerContext, user: str, handle: str) -> ModelChoice:
    """The model a Letta model handle names, and where: for a hosted name
    the server's default model on its own endpoint, for a listed allowed
    endpoint's handle that endpoint's model and URL, for one of the user's
    providers (`NAME/MODEL`) that provider's (its URL one the server still
    allows); for any other handle `model_name`, the agent's endpoint and
    provider kept."""
    models = ctx.model_list()
    default = models.hosted_default(handle)
    if default is not None:
        return ModelChoice(default, None)
    listed = models.endpoint_of(handle)
    if listed is not None:
        return ModelChoice(*listed)
    prefix, slash, name = handle.strip().partition("/")
    provider = ctx.workspace.providers.named(user, prefix) if slash and name else None
    if provider is not None:
        url = ctx.check_endpoint(provider.base_url, f"the base_url of provider {prefix!r}")
        return ModelChoice(name, url, provider.name)
    return ModelChoice(model_name(handle), UNCHANGED, UNCHANGED)


def embedder_name(handle: str | None) -> str | None:
    """Our embedder for a Letta embedding handle: `local` as is, a handle of
    a known provider (or a plain name) embeds at the agent's endpoint.
    Letta's hosted embeddings ("letta/...") are ignored: search is by words."""
    if handle is None or not handle.strip():
        return None
    handle = handle.strip()
    if handle == "local" or handle.startswith("endpoint:"):
        return handle
    provider, slash, model = handle.partition("/")
    if slash and provider.lower() == "letta":
        return None
    if slash and provider.lower() in LETTA_PROVIDERS and model:
        return f"endpoint:{model}"
    return f"endpoint:{handle}"


def _block(block: MemoryBlock) -> ours.BlockIn:
    limit = block.limit or max(DEFAULT_BLOCK_LIMIT, len(block.value))
    return ours.BlockIn(
        label=block.label,
        value=block.value,
        limit=limit,
        description=block.description or "",
        read_only=block.read_only,
    )


def create_handle(body: CreateAgent) -> str:
    """The model handle Letta's create names: `model`, else `llm_config.model`."""
    handle = body.model or (body.llm_config.model if body.llm_config else None)
    if not handle or not handle.strip():
        raise ConfigError("model: give the agent a model, e.g. 'openai/gpt-4o-mini'")
    return handle


def our_create_body(body: CreateAgent, tools: list[str], model: str) -> ours.AgentCreate:
    """Letta's CreateAgentRequest as our AgentCreate (the fields we honour),
    with the names of the `tools` to attach (`tool_names`) and the `model`
    its handle names (`chosen_model`)."""
    window = body.context_window_limit or (
        body.llm_config.context_window if body.llm_config else None
    )
    settings: dict[str, Any] = {} if window is None else {"context_window": window}
    if body.tool_rules:
        rules, _ = rules_from_letta(body.tool_rules)  # as the rest of Letta's body we lack
        settings["tool_rules"] = [rule.model_dump() for rule in rules]
    if body.tags:
        settings["tags"] = body.tags
    try:
        return ours.AgentCreate(
            name=body.name or f"agent-{uuid.uuid4().hex[:8]}",
            model=model,
            system=body.system,
            blocks=[_block(b) for b in body.memory_blocks or []],  # none given: none, as Letta
            settings=settings or None,
            embedder=embedder_name(body.embedding),
            tools=tools,
        )
    except ValidationError as exc:
        raise ConfigError(f"cannot create the agent: {validation_messages(exc)}") from None


class LettaToolsMissing(ConfigError):
    """A create that names, among the tools it does not find, only Letta's
    own built-in tools that memgpt-lite lacks (`web_search`,
    `fetch_webpage`, ...): answered as a Letta server without them answers
    (a 400, "Tools not found by name: {...}"), which Letta's clients know
    (Letta Code then creates the agent without them)."""

    def __init__(self, names: list[str]) -> None:
        listed = ", ".join(repr(name) for name in sorted(set(names), key=str))
        super().__init__(
            f"Tools not found by name: {{{listed}}}: Letta's built-in tools that memgpt-lite "
            "does not have; create the agent without them"
        )


def tool_names(ctx: ServerContext, user: str, body: CreateAgent) -> list[str]:
    """The tools to attach that Letta's create names: those of its `tools`
    (names) and `tool_ids` that are built-in tools to attach or the user's
    registered tools, and the multi-agent tools with
    `include_multi_agent_tools`. A tool of the agent's tool set is left
    (every agent has its set's tools); any other name or id is a 422 naming
    each, never dropped, or, when all of them are Letta's built-in tools
    that we lack, Letta's own 400 (`LettaToolsMissing`)."""
    own_set = TOOL_SETS[AgentSettings().tool_set]  # Letta's create sets no other
    registered = ctx.workspace.tools.tools_of(user)
    by_name = {tool.name for tool in registered}
    by_id = {tool.id: tool.name for tool in registered}
    asked = [(f"tools: {ref!r}", ref) for ref in body.tools or ()]
    asked += [
        (f"tool_ids: {ref!r}", by_id.get(ref) or builtin_name(ref)) for ref in body.tool_ids or ()
    ]
    names, unknown, missing = [], [], []
    for what, name in asked:
        if name in own_set:
            continue
        if name in ATTACHABLE_TOOLS or name in by_name:
            names.append(name)
        else:
            unknown.append(what)
            missing.append(name)
    if unknown and all(name in LETTA_BASE_TOOLS for name in missing):
        raise LettaToolsMissing(missing)
    if unknown:
        raise ConfigError(
            f"no such tool ({', '.join(unknown)}): register a tool with tools.create "
            f"first; the built-in tools to attach are {', '.join(ATTACHABLE_TOOLS)}"
        )
    if body.include_multi_agent_tools:
        names += list(MULTI_AGENT_TOOLS)
    return list(dict.fromkeys(names))


@router.post("/", include_in_schema=False)
@router.post("")
def create(body: CreateAgent, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's create_agent; `llm_config.model_endpoint` must be an endpoint
    the server allows (endpoints.py): the server's own, or one allowed.
    `enable_sleeptime` gives the agent a sleep-time agent (agent/sleeptime.py)
    in a group of Letta's kind for its `agent_type`."""
    chosen = chosen_model(ctx, user, create_handle(body))
    ours_body = our_create_body(body, tool_names(ctx, user, body), chosen.model)
    given = letta_endpoint(ctx, body.llm_config)  # llm_config.model_endpoint wins
    handle_endpoint = None if chosen.endpoint is UNCHANGED else chosen.endpoint
    ours_body.base_url = given or handle_endpoint
    if isinstance(chosen.provider, str) and ours_body.base_url == chosen.endpoint:
        ours_body.llm_options = {"provider": chosen.provider}  # its endpoint and key
    # With its sleep-time agent, or not at all; the name derived is still free when stored.
    with ctx.workspace.transaction():
        if body.name:  # free text: an identifier as it is, else a display name (it may repeat)
            name, display_name = names_from_letta(ctx.workspace.store, user, body.name)
            ours_body.name, ours_body.display_name = (
                (None, display_name) if display_name else (name, None)
            )
        state = create_agent(ctx, user, ours_body).state
        if body.identity_ids:
            ctx.workspace.identities.set_for_agent(state.id, body.identity_ids)
        if body.enable_sleeptime:
            voice = body.agent_type == VOICE_AGENT_TYPE
            ctx.workspace.add_sleeptime_agent(state, "voice_sleeptime" if voice else "sleeptime")
    return agent_view(ctx.workspace, state)


def letta_endpoint(ctx: ServerContext, config: LlmConfigIn | None) -> str | None:
    """The base URL of an agent Letta's `llm_config` asks for at create."""
    given = (config.model_endpoint if config is not None else None) or None  # "" names none
    return allowed_endpoint(ctx, given)


def allowed_endpoint(ctx: ServerContext, given: str | None) -> str | None:
    """The base URL to store for `llm_config.model_endpoint`: None (the
    server's own endpoint) when it names none or the server's own; another
    endpoint the server allows as given; any other a 403 naming the rule."""
    url = ctx.check_endpoint(given, "llm_config.model_endpoint")
    return None if url is None or ctx.allowed_endpoints().is_own(url) else url


# Letta's `include` query: what to add to an agent's view (views.py).
Include = Annotated[list[str] | None, Query()]
OrderBy = Literal["created_at", "updated_at", "last_run_completion"]


def _sort_key(order_by: OrderBy) -> Any:
    def key(pair: tuple[AgentState, AgentStats]) -> tuple[datetime, str]:
        state, stats = pair
        if order_by == "updated_at":
            when = state.updated_at
        elif order_by == "last_run_completion":
            when = stats.last_active or state.created_at
        else:
            when = state.created_at
        return (when, state.id)

    return key


def _matches(state: AgentState, name: str | None, query_text: str | None) -> bool:
    """By the name Letta's views show (the display name) or the identifier."""
    names = {state.shown_name, state.name}
    if name is not None and name not in names:
        return False
    return query_text is None or any(query_text.lower() in n.lower() for n in names)


def _tagged(state: AgentState, tags: list[str] | None, match_all: bool) -> bool:
    if not tags:
        return True
    have = set(state.settings.tags)
    return set(tags) <= have if match_all else bool(set(tags) & have)


@router.get("/", include_in_schema=False)
@router.get("")
def list_agents(
    ctx: Context,
    user: User,
    name: str | None = None,
    query_text: str | None = None,
    tags: Annotated[list[str] | None, Query()] = None,
    match_all_tags: bool = False,
    identity_id: str | None = None,
    identifier_keys: Annotated[list[str] | None, Query()] = None,
    after: str | None = None,
    before: str | None = None,
    limit: Annotated[int | None, Query(ge=0)] = 50,
    order: Order | None = None,
    ascending: bool | None = None,
    order_by: OrderBy = "created_at",
    include: Include = None,
) -> list[dict[str, Any]]:
    """Letta's list_agents: by name, a part of it, tags (any of them, or
    all with `match_all_tags`), and identities (`identity_id`,
    `identifier_keys`: the agents of any of them)."""
    of_identities = linked_ids(ctx, user, "agent_ids", identity_id, identifier_keys)
    pairs = [
        p
        for p in ctx.workspace.list_agents(owner=user)
        if _matches(p[0], name, query_text)
        and _tagged(p[0], tags, match_all_tags)
        and (of_identities is None or p[0].id in of_identities)
    ]
    pairs.sort(key=_sort_key(order_by), reverse=effective_order(order, ascending, "desc") == "desc")
    found = page(pairs, lambda p: p[0].id, after=after, before=before, limit=limit)
    groups = ctx.workspace.groups(user)  # read once for the page, not once an agent
    return [
        agent_view(ctx.workspace, state, include or (), [g for g in groups if _in(state, g)])
        for state, _ in found
    ]


def _in(state: AgentState, group: AgentGroup) -> bool:
    return state.id == group.manager_agent_id or state.id in group.agent_ids


@router.get("/{agent_id}")
def retrieve(agent_id: str, ctx: Context, user: User, include: Include = None) -> dict[str, Any]:
    """Letta's retrieve_agent; `include=agent.pending_approval` adds the
    approval request waiting (views.py)."""
    return agent_view(ctx.workspace, ctx.agent_state(user, agent_id), include or ())


def config_change(ctx: ServerContext, body: UpdateAgent, state: AgentState) -> ConfigChange:
    """What the body asks of the agent's model, endpoint, window and embedder:
    `model`, `embedding` and `context_window_limit`, then `llm_config` and
    `embedding_config` (configs.py), which win where both say something."""
    change = ConfigChange(model=body.model, context_window=body.context_window_limit)
    if body.embedding is not None:
        change.embedder = embedder_name(body.embedding)
    if body.llm_config is not None:
        llm_change(body.llm_config, state, change, lambda url: allowed_endpoint(ctx, url))
    if body.embedding_config is not None:
        embedding_change(body.embedding_config, state, change)
    return change


def _update(ctx: ServerContext, user: str, agent_id: str, body: UpdateAgent) -> AgentState:
    state = ctx.agent_state(user, agent_id)
    change = config_change(ctx, body, state)
    model = None
    if change.model is not None:
        model = _model_change(ctx, user, state, change)
    elif change.base_url is not UNCHANGED:  # another endpoint is not the provider's
        change.provider = None
    settings: dict[str, Any] = {} if body.tags is None else {"tags": body.tags}
    if change.context_window is not None:
        settings["context_window"] = change.context_window
    ours_body = ours.AgentUpdate(system=body.system, model=model, settings=settings or None)
    with ctx.workspace.transaction():  # all or nothing
        if body.name:  # as at create; a plain name removes the display name
            ours_body.name, shown = names_from_letta(ctx.workspace.store, user, body.name, state.id)
            ours_body.display_name = shown or ""
        ctx.workspace.update_agent(state.id, change.apply)
        updated = update_agent(ctx, user, state.id, ours_body)
        if body.identity_ids is not None:
            ctx.workspace.identities.set_for_agent(state.id, body.identity_ids)
        if body.enable_sleeptime is False:
            ctx.workspace.remove_sleeptime_agents(state.id)
        elif body.enable_sleeptime and not any(
            g.manager_agent_id == state.id and g.manager_type in SLEEPTIME_TYPES
            for g in ctx.workspace.agent_groups(state.id)
        ):
            ctx.workspace.add_sleeptime_agent(updated)
        return updated


def _model_change(ctx: ServerContext, user: str, state: AgentState, change: ConfigChange) -> str:
    """The model `change.model` names, with its endpoint and provider set on
    `change` (`llm_config.model_endpoint` wins). An agent of a provider
    given a handle of another provider's prefix (`openai/...`) leaves it for
    the server's own endpoint; a bare model name keeps its provider."""
    chosen = chosen_model(ctx, user, change.model or "")
    endpoint, provider = chosen.endpoint, chosen.provider
    if endpoint is UNCHANGED and state.llm.provider is not None and "/" in (change.model or ""):
        endpoint, provider = None, None
    if change.base_url is UNCHANGED:
        change.base_url = endpoint
    elif isinstance(provider, str) and change.base_url != endpoint:
        provider = None  # another endpoint than the provider's
    change.provider = provider
    return chosen.model


@router.patch("/{agent_id}")
def update(agent_id: str, body: UpdateAgent, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's modify_agent: the name, system prompt, model, tags, embedding,
    context window, and `llm_config` and `embedding_config` (configs.py);
    `enable_sleeptime` adds a sleep-time agent, or deletes it;
    `identity_ids` replace the agent's identities."""
    return agent_view(ctx.workspace, _update(ctx, user, agent_id, body))


@router.delete("/{agent_id}")
def delete(agent_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's delete_agent: a main agent's sleep-time agents go with it."""
    state = ctx.agent_state(user, agent_id)
    ctx.workspace.delete_agent(state.id)
    return {"message": f"Agent id={state.id} successfully deleted"}


class ApprovalSetting(LettaBody):
    requires_approval: bool | None = None


@router.patch("/{agent_id}/tools/approval/{tool_name}")
def modify_approval(
    agent_id: str,
    tool_name: str,
    ctx: Context,
    user: User,
    body: Annotated[ApprovalSetting | None, Body()] = None,
    requires_approval: bool | None = None,
) -> dict[str, Any]:
    """Letta's modify_approval_for_tool: whether the agent's tool waits for
    the user's approval, kept as a requires_approval tool rule (the body's
    `requires_approval`, else the query's)."""
    wanted = body.requires_approval if body is not None else None
    wanted = requires_approval if wanted is None else wanted
    if wanted is None:
        raise ConfigError("requires_approval: give true or false")
    agent = ctx.agent(user, agent_id)
    if tool_name not in agent.tools:
        raise NotFoundError(f"agent {agent_id!r} has no tool named {tool_name!r}")

    def change(stored: AgentState) -> None:
        kept = [
            rule
            for rule in stored.settings.tool_rules
            if not (isinstance(rule, RequiresApprovalToolRule) and rule.tool_name == tool_name)
        ]
        stored.settings.tool_rules = [*kept, needs_approval(tool_name)] if wanted else kept

    return agent_view(ctx.workspace, ctx.workspace.update_agent(agent.state.id, change))
