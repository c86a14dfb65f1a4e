"""Letta's tool routes: a user's tools (create, upsert, retrieve, list,
count, modify, delete) and an agent's (list, attach, detach).

A tool is created from Python source (`source_code`) as `memgpt-lite tools
add` adds one: its schema is read from its function's signature and
docstring, in a process of its own, which runs the source; so creating one,
or changing its source, needs the right to run code on the server
(context.py). A `json_schema` sent with it names the tool and must agree
with the schema read (the same parameters and required ones), or the
request is a 422 saying how they differ. `description`, `tags` and
`pip_requirements` are honoured; `return_char_limit`, `args_json_schema`
and `enable_parallel_execution` are accepted and not used; Letta's other
source types, npm requirements and `default_requires_approval` are refused
(an agent's tool waits for approval through its tool rules:
agents.tools.update_approval).

`tools.list` shows the built-in tools too, as Letta lists its base tools,
read-only: modifying or deleting one is a 403. `tools.add_base_tools` answers
them (they are always there).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query

from memgpt_lite.errors import AlreadyExistsError, ConfigError, ConflictError, NotFoundError
from memgpt_lite.models import AgentState, ToolDefinition
from memgpt_lite.server.context import (
    Caller,
    Context,
    CurrentCaller,
    Forbidden,
    ServerContext,
    User,
    require_code_rights,
)
from memgpt_lite.server.letta.bodies import ToolCreate, ToolIn, ToolUpdate
from memgpt_lite.server.letta.paging import Order, effective_order, page
from memgpt_lite.server.letta.tool_views import (
    agent_tool_views,
    builtin_name,
    builtin_tools,
    builtin_view,
    registered_view,
)
from memgpt_lite.server.letta.views import agent_view
from memgpt_lite.tools.sets import ATTACHABLE_TOOLS, TOOL_SETS

router = APIRouter(prefix="/v1", tags=["letta"])

ListParam = Annotated[list[str] | None, Query()]


def refuse_what_we_lack(body: ToolIn) -> None:
    if body.source_type not in (None, "python"):
        raise ConfigError(
            f"source_type: memgpt-lite runs Python tools only, got {body.source_type!r}"
        )
    if body.npm_requirements:
        raise ConfigError("npm_requirements: memgpt-lite runs Python tools only")
    if body.default_requires_approval:
        raise ConfigError(
            "default_requires_approval: memgpt-lite asks approval per agent; attach the tool, "
            "then agents.tools.update_approval(tool_name, agent_id=..., requires_approval=True)"
        )


def requirements(body: ToolIn) -> list[str] | None:
    return None if body.pip_requirements is None else [r.text() for r in body.pip_requirements]


def _view(ctx: ServerContext, tool: ToolDefinition) -> dict[str, Any]:
    return registered_view(tool, ctx.workspace.settings.tools.result_max_chars)


def _registered(ctx: ServerContext, user: str, tool_id: str) -> ToolDefinition:
    try:
        return ctx.workspace.tools.get(tool_id, user)
    except NotFoundError:
        raise NotFoundError(f"no tool with id or name {tool_id!r}") from None


def _add(ctx: ServerContext, caller: Caller, body: ToolCreate, replace: bool) -> dict[str, Any]:
    require_code_rights(caller, "creating a tool from source")
    refuse_what_we_lack(body)
    registry = ctx.workspace.tools
    definition = registry.from_source(
        body.source_code,
        name=None,
        owner=caller.user,
        what="the tool's source_code",
        description=body.description,
        tags=body.tags or (),
        requirements=requirements(body) or (),
        json_schema=body.json_schema,
    )
    try:
        return _view(ctx, registry.register(definition, replace=replace))
    except AlreadyExistsError:
        raise AlreadyExistsError(
            f"a tool named {definition.name!r} already exists; tools.upsert replaces it"
        ) from None


@router.post("/tools/", include_in_schema=False)
@router.post("/tools")
def create_tool(body: ToolCreate, ctx: Context, caller: CurrentCaller) -> dict[str, Any]:
    """Letta's create_tool: a new tool from Python source (409 for a name taken)."""
    return _add(ctx, caller, body, replace=False)


@router.put("/tools/", include_in_schema=False)
@router.put("/tools")
def upsert_tool(body: ToolCreate, ctx: Context, caller: CurrentCaller) -> dict[str, Any]:
    """Letta's upsert_tool: a new tool, or the user's tool of its name
    replaced (keeping its id, so agents keep it)."""
    return _add(ctx, caller, body, replace=True)


@dataclass(frozen=True)
class ToolFilter:
    """Letta's filters of tools.list and tools.count."""

    name: str | None = None
    names: list[str] | None = None
    tool_ids: list[str] | None = None
    search: str | None = None
    tool_types: list[str] | None = None
    exclude_tool_types: list[str] | None = None
    return_only_letta_tools: bool | None = False
    exclude_letta_tools: bool | None = False

    def keeps(self, view: dict[str, Any]) -> bool:
        kind, name = view["tool_type"], view["name"]
        letta = kind.startswith("letta_")
        checks = [
            self.name is None or name == self.name,
            self.names is None or name in _split(self.names),
            self.tool_ids is None or view["id"] in _split(self.tool_ids),
            self.search is None or self.search.lower() in name.lower(),
            self.tool_types is None or kind in _split(self.tool_types),
            kind not in _split(self.exclude_tool_types or []),
            not self.return_only_letta_tools or letta,
            not self.exclude_letta_tools or not letta,
        ]
        return all(checks)


def _split(values: Iterable[str]) -> set[str]:
    """Letta's list parameters: repeated, or comma-separated."""
    return {part.strip() for value in values for part in value.split(",") if part.strip()}


def _every_tool(ctx: ServerContext, user: str) -> list[dict[str, Any]]:
    """The built-in tools, then the user's, oldest first."""
    registered = sorted(ctx.workspace.tools.tools_of(user), key=lambda t: (t.created_at, t.id))
    return [
        *(builtin_view(name) for name in builtin_tools()),
        *(_view(ctx, tool) for tool in registered),
    ]


def tool_filter(
    name: str | None = None,
    names: ListParam = None,
    tool_ids: ListParam = None,
    search: str | None = None,
    tool_types: ListParam = None,
    exclude_tool_types: ListParam = None,
    return_only_letta_tools: bool | None = False,
) -> ToolFilter:
    """The query parameters that tools.list and tools.count share."""
    return ToolFilter(
        name, names, tool_ids, search, tool_types, exclude_tool_types, return_only_letta_tools
    )


Filter = Annotated[ToolFilter, Depends(tool_filter)]


@router.get("/tools/", include_in_schema=False)
@router.get("/tools")
def list_tools(
    ctx: Context,
    user: User,
    wanted: Filter,
    after: str | None = None,
    before: str | None = None,
    limit: Annotated[int | None, Query(ge=0)] = 50,
    order: Order | None = None,
    order_by: Literal["created_at"] = "created_at",
) -> list[dict[str, Any]]:
    """Letta's list_tools: the built-in tools and the user's, filtered,
    newest first unless `order` is "asc"."""
    found = [view for view in _every_tool(ctx, user) if wanted.keeps(view)]
    if effective_order(order, None, "desc") == "desc":
        found.reverse()
    return page(found, lambda view: view["id"], after=after, before=before, limit=limit)


@router.post("/tools/add-base-tools")
def add_base_tools(user: User) -> list[dict[str, Any]]:
    """Letta's add_base_tools, which makes sure the server has its base
    tools: ours are built in, for every user, so this adds nothing and
    answers them, as tools.list shows them."""
    return [builtin_view(name) for name in builtin_tools()]


@router.get("/tools/count")
def count_tools(
    ctx: Context, user: User, wanted: Filter, exclude_letta_tools: bool | None = False
) -> int:
    """Letta's count_tools: how many tools.list would give, unpaged."""
    wanted = replace(wanted, exclude_letta_tools=exclude_letta_tools)
    return sum(1 for view in _every_tool(ctx, user) if wanted.keeps(view))


@router.get("/tools/{tool_id}")
def retrieve_tool(tool_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's retrieve_tool, by id (or name)."""
    builtin = builtin_name(tool_id)
    if builtin is not None:
        return builtin_view(builtin)
    return _view(ctx, _registered(ctx, user, tool_id))


def _read_only(tool_id: str, doing: str) -> None:
    builtin = builtin_name(tool_id)
    if builtin is not None:
        raise Forbidden(f"{builtin} is a built-in tool: it is read-only and cannot be {doing}")


@router.patch("/tools/{tool_id}")
def modify_tool(
    tool_id: str, body: ToolUpdate, ctx: Context, caller: CurrentCaller
) -> dict[str, Any]:
    """Letta's modify_tool: its description, tags, pip requirements, or
    source (read anew, under the tool's name, which never changes)."""
    _read_only(tool_id, "modified")
    if body.source_code is not None:
        require_code_rights(caller, "changing a tool's source")
    refuse_what_we_lack(body)
    stored = _registered(ctx, caller.user, tool_id)
    changed = ctx.workspace.tools.change(
        stored.id,
        caller.user,
        source=body.source_code,
        description=body.description,
        tags=body.tags,
        requirements=requirements(body),
        json_schema=body.json_schema,
    )
    return _view(ctx, changed)


@router.delete("/tools/{tool_id}")
def delete_tool(tool_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's delete_tool. A tool attached to agents is a 409 naming them:
    detach it first (agents.tools.detach)."""
    _read_only(tool_id, "deleted")
    tool = _registered(ctx, user, tool_id)
    users = ctx.workspace.tools.agents_using(tool.name, user)
    if users:
        raise ConflictError(
            f"tool {tool.name!r} is attached to {', '.join(map(repr, users))}; detach it "
            "first (agents.tools.detach); nothing was deleted"
        )
    ctx.workspace.tools.remove(tool.id, user)  # still refused if attached meanwhile
    return {"message": f"Tool id={tool.id} successfully deleted"}


# An agent's tools


@router.get("/agents/{agent_id}/tools")
def list_agent_tools(
    agent_id: str,
    ctx: Context,
    user: User,
    after: str | None = None,
    before: str | None = None,
    limit: Annotated[int | None, Query(ge=0)] = 10,
    order: Order | None = None,
    order_by: Literal["created_at"] = "created_at",
) -> list[dict[str, Any]]:
    """Letta's list_tools_for_agent: its tool set's, then those attached,
    newest first unless `order` is "asc"."""
    state = ctx.agent_state(user, agent_id)
    views = agent_tool_views(
        state,
        ctx.workspace.tools.tools_of(state.owner),
        ctx.workspace.settings.tools.result_max_chars,
    )
    if effective_order(order, None, "desc") == "desc":
        views.reverse()
    return page(views, lambda view: view["id"], after=after, before=before, limit=limit)


def _tool_name(ctx: ServerContext, state: AgentState, tool_id: str) -> tuple[str, bool]:
    """The name of the tool `tool_id` names, and whether it is one of the
    agent's tool set (which it always has)."""
    builtin = builtin_name(tool_id)
    if builtin is None:
        return _registered(ctx, state.owner, tool_id).name, False
    own_set = state.settings.tool_set
    if builtin in TOOL_SETS.get(own_set, {}):
        return builtin, True
    if builtin not in ATTACHABLE_TOOLS:
        sets = [name for name, tools in TOOL_SETS.items() if builtin in tools]
        raise ConfigError(
            f"{builtin} is a built-in tool of the {' and '.join(sets)} tool set; agent "
            f"{state.name!r} has the {own_set} set"
        )
    return builtin, False


@router.patch("/agents/{agent_id}/tools/attach/{tool_id}")
def attach_tool(agent_id: str, tool_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's attach_tool_to_agent: the agent has the tool from its next step on."""
    state = ctx.agent_state(user, agent_id)
    name, in_set = _tool_name(ctx, state, tool_id)
    if not in_set:
        state = ctx.workspace.tools.attach(state.id, [name])
    return agent_view(ctx.workspace, state)


@router.patch("/agents/{agent_id}/tools/detach/{tool_id}")
def detach_tool(agent_id: str, tool_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's detach_tool_from_agent (the tool stays registered)."""
    state = ctx.agent_state(user, agent_id)
    name, in_set = _tool_name(ctx, state, tool_id)
    if in_set:
        raise ConfigError(
            f"{name} is a built-in tool of agent {state.name!r}'s tool set: it cannot be detached"
        )
    return agent_view(ctx.workspace, ctx.workspace.tools.detach(state.id, [name]))
