"""Our API for the user's tool registry: list, add from Python source, get,
delete; attach to and detach from an agent. What `memgpt-lite tools ...`
does, through the same application layer (`workspace.tools`).

Adding a tool runs its source on the server (its schema is read in a
process of its own, then each call runs there): only callers who may run
code on the server may (context.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Response
from pydantic import BaseModel, Field

from memgpt_lite.models import ToolDefinition, ToolKind
from memgpt_lite.server.api_agents import agent_view
from memgpt_lite.server.bodies import AgentView, StrictBody
from memgpt_lite.server.context import Context, CurrentCaller, User, require_code_rights

router = APIRouter(prefix="/api", tags=["tools"])


class ToolAdd(StrictBody):
    source_code: str = Field(min_length=1)
    # Which function of the source, and the tool's name (default: its one function's).
    name: str | None = None
    description: str | None = None  # default: its docstring's
    tags: list[str] = Field(default_factory=list)
    replace: bool = False  # replace the user's tool of that name (its id stays)


class ToolNames(StrictBody):
    tools: list[str] = Field(min_length=1)


class ToolView(BaseModel):
    """A registered tool, and the user's agents that have it attached."""

    id: str
    name: str
    kind: ToolKind
    description: str
    json_schema: dict[str, Any]
    source_code: str | None
    module: str | None
    mcp_server: str | None
    requirements: list[str]
    trusted: bool
    tags: list[str]
    agents: list[str]
    created_at: datetime
    updated_at: datetime


def tool_view(tool: ToolDefinition, agents: list[str]) -> ToolView:
    return ToolView(**tool.model_dump(exclude={"owner"}), agents=agents)


@router.get("/tools")
def list_tools(ctx: Context, user: User) -> list[ToolView]:
    """The user's registered tools, by name, each with the agents using it."""
    return [tool_view(tool, agents) for tool, agents in ctx.workspace.tools.listed(user)]


@router.post("/tools", status_code=201)
def add_tool(body: ToolAdd, ctx: Context, caller: CurrentCaller) -> ToolView:
    """Register a tool from Python source, as `memgpt-lite tools add` does
    (409 for a name taken, unless `replace`)."""
    require_code_rights(caller, "creating a tool from source")
    tool = ctx.workspace.tools.add_source(
        body.source_code,
        name=body.name,
        owner=caller.user,
        what="the tool's source_code",
        replace=body.replace,
        description=body.description,
        tags=body.tags,
    )
    return tool_view(tool, ctx.workspace.tools.agents_using(tool.name, caller.user))


@router.get("/tools/{tool}")
def get_tool(tool: str, ctx: Context, user: User) -> ToolView:
    """One registered tool, by name or id."""
    found = ctx.workspace.tools.get(tool, user)
    return tool_view(found, ctx.workspace.tools.agents_using(found.name, user))


@router.delete("/tools/{tool}", status_code=204)
def remove_tool(tool: str, ctx: Context, user: User) -> Response:
    """Delete a registered tool; a 409 naming the agents it is attached to."""
    ctx.workspace.tools.remove(ctx.workspace.tools.get(tool, user).id, user)
    return Response(status_code=204)


@router.post("/agents/{agent}/tools")
def attach_tools(agent: str, body: ToolNames, ctx: Context, user: User) -> AgentView:
    """Attach tools to an agent by name: the user's registered tools, or the
    built-in tools attached by name (the multi-agent tools)."""
    state = ctx.agent_state(user, agent)
    return agent_view(ctx.workspace, ctx.workspace.tools.attach(state.id, body.tools))


@router.delete("/agents/{agent}/tools/{tool}")
def detach_tool(agent: str, tool: str, ctx: Context, user: User) -> AgentView:
    """Detach a tool from an agent (it stays registered)."""
    state = ctx.agent_state(user, agent)
    return agent_view(ctx.workspace, ctx.workspace.tools.detach(state.id, [tool]))
