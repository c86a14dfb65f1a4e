"""Letta's group routes: the groups whose agents talk together (round
robin, supervisor and dynamic: agent/groups.py), made here (`POST /v1/groups`), and
the groups we make of a main agent and its sleep-time agent
(agent/sleeptime.py), made by `agents.create` with `enable_sleeptime` (a
"sleeptime" group, or "voice_sleeptime" for a `voice_convo_agent`). List,
count, retrieve, modify and delete them; `GET /v1/agents/{agent_id}/groups`
lists an agent's. Their messages are group_sends.py's. A swarm group is not
built (501).

Deleting a group leaves its agents, as Letta does: a sleep-time agent is
then an agent of its own, which runs when messaged only. Deleting the main
agent deletes its group (and a sleep-time group's sleep-time agent:
agents.py); a member deleted leaves a group that talks.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import Field

from memgpt_lite.agent.workspace import SLEEPTIME_TYPES, AgentGroup
from memgpt_lite.errors import ConfigError
from memgpt_lite.server.context import Context, ServerContext, User
from memgpt_lite.server.letta.bodies import LettaBody
from memgpt_lite.server.letta.paging import Order, page
from memgpt_lite.server.letta.views import group_view

router = APIRouter(tags=["letta"])

Positive = Annotated[int | None, Field(ge=1)]
# Letta's kinds of group, which its list filters take (ours are `ManagerType`).
LettaManagerType = Literal[
    "round_robin", "supervisor", "dynamic", "sleeptime", "voice_sleeptime", "swarm"
]


class ManagerConfigUpdate(LettaBody):
    """Letta's ...ManagerUpdate of each kind of group, as one (no
    `manager_type`: the group's own)."""

    manager_type: str | None = None
    manager_agent_id: str | None = None
    max_turns: Positive = None
    termination_token: str | None = None
    sleeptime_agent_frequency: Positive = None
    max_message_buffer_length: Positive = None
    min_message_buffer_length: Positive = None


class ManagerConfig(LettaBody):
    """Letta's RoundRobinManager, SupervisorManager, ..., as one."""

    manager_type: str = "round_robin"
    manager_agent_id: str | None = None
    max_turns: Positive = None
    termination_token: str | None = None


class GroupCreate(LettaBody):
    agent_ids: list[str]
    description: str = ""
    manager_config: ManagerConfig = Field(default_factory=ManagerConfig)
    shared_block_ids: list[str] = Field(default_factory=list)


# Letta's kinds of group that memgpt-lite does not build, and why.
NOT_BUILT = {"swarm": "swarm groups"}


class GroupUpdate(LettaBody):
    agent_ids: list[str] | None = None
    description: str | None = None
    manager_config: ManagerConfigUpdate | None = None
    shared_block_ids: list[str] | None = None


def _changed(group: AgentGroup, body: GroupUpdate) -> AgentGroup:
    """The group as `body` changes it, or a ConfigError naming what it
    cannot change (nothing is stored then)."""
    config = body.manager_config
    if config is not None and config.manager_type not in (None, group.manager_type):
        raise ConfigError(
            f"manager_config.manager_type: the group is a {group.manager_type!r} group, "
            f"not {config.manager_type!r} (a group's kind stays as made)"
        )
    changed = group.model_copy(deep=True)
    if body.agent_ids is not None and body.agent_ids != group.agent_ids:
        raise ConfigError("agent_ids: a sleep-time group's agents are fixed")
    if body.shared_block_ids:
        raise ConfigError("shared_block_ids: the agents share the main agent's blocks")
    if body.description is not None:
        changed.description = body.description
    if config is None:
        return changed
    if config.manager_agent_id not in (None, group.manager_agent_id):
        raise ConfigError("manager_config.manager_agent_id: a group's main agent is fixed")
    if config.sleeptime_agent_frequency is not None:
        changed.frequency = config.sleeptime_agent_frequency
    if group.manager_type == "voice_sleeptime":
        _buffer_lengths(changed, config)
    return changed


def _buffer_lengths(group: AgentGroup, config: ManagerConfigUpdate) -> None:
    """A voice group's buffer lengths (kept and shown), the least below the most."""
    if config.max_message_buffer_length is not None:
        group.max_message_buffer_length = config.max_message_buffer_length
    if config.min_message_buffer_length is not None:
        group.min_message_buffer_length = config.min_message_buffer_length
    most, least = group.max_message_buffer_length, group.min_message_buffer_length
    if most is not None and least is not None and least >= most:
        raise ConfigError(
            "manager_config: min_message_buffer_length must be below max_message_buffer_length"
        )


def _listed(
    groups: list[AgentGroup],
    manager_type: LettaManagerType | None,
    order: Order,
    after: str | None,
    before: str | None,
    limit: int | None,
) -> list[AgentGroup]:
    """Letta's filter and cursors over groups, oldest first before `order`."""
    kept = [g for g in groups if manager_type is None or g.manager_type == manager_type]
    if order == "desc":
        kept.reverse()
    return page(kept, lambda g: g.id, after=after, before=before, limit=limit)


def _views(ctx: ServerContext, groups: list[AgentGroup]) -> list[dict[str, Any]]:
    return [group_view(ctx.workspace, group) for group in groups]


Limit = Annotated[int | None, Query(ge=0)]


@router.get("/v1/groups/", include_in_schema=False)
@router.get("/v1/groups")
def list_groups(
    ctx: Context,
    user: User,
    manager_type: LettaManagerType | None = None,
    before: str | None = None,
    after: str | None = None,
    limit: Limit = 50,
    order: Order = "asc",
    order_by: Literal["created_at"] = "created_at",
    project_id: str | None = None,
) -> list[dict[str, Any]]:
    """Letta's list_groups: the user's groups, oldest first (`order`)."""
    found = _listed(ctx.workspace.groups(user), manager_type, order, after, before, limit)
    return _views(ctx, found)


@router.post("/v1/groups/", include_in_schema=False)
@router.post("/v1/groups")
def create_group(body: GroupCreate, ctx: Context, user: User) -> Any:
    """Letta's create_group: a round-robin group (`max_turns`), a dynamic
    group (`manager_agent_id`, `max_turns`, `termination_token`) or a
    supervisor group (`manager_agent_id`, which gets the tool that messages
    the group's agents), of the user's agents."""
    kind = body.manager_config.manager_type
    if kind in NOT_BUILT:
        built = "round_robin, supervisor and dynamic groups are built"
        detail = f"memgpt-lite does not build {NOT_BUILT[kind]}: {built}"
        return JSONResponse({"detail": detail}, status_code=501)
    if kind in SLEEPTIME_TYPES:
        raise ConfigError(
            f"manager_config.manager_type: a {kind} group is made with its main agent, "
            "by agents.create(enable_sleeptime=True)"
        )
    if body.shared_block_ids:
        raise ConfigError("shared_block_ids: attach the blocks to the agents instead")
    config = body.manager_config
    group = ctx.workspace.talking_groups.create(
        user,
        kind,
        body.agent_ids,
        body.description,
        max_turns=config.max_turns,
        manager_agent_id=config.manager_agent_id,
        termination_token=config.termination_token,
    )
    return group_view(ctx.workspace, group)


@router.get("/v1/groups/count")
def count_groups(ctx: Context, user: User) -> int:
    return len(ctx.workspace.groups(user))


@router.get("/v1/groups/{group_id}")
def retrieve_group(group_id: str, ctx: Context, user: User) -> dict[str, Any]:
    return group_view(ctx.workspace, ctx.workspace.group(group_id, user))


@router.patch("/v1/groups/{group_id}")
def modify_group(group_id: str, body: GroupUpdate, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's modify_group: `description`; a group that talks, its
    `agent_ids` and `manager_config`'s `max_turns` (round robin) or
    `manager_agent_id` (supervisor); a sleep-time group, `manager_config`'s
    `sleeptime_agent_frequency` (and a voice group's buffer lengths), a
    change of its agents or main agent being a 422."""
    group = ctx.workspace.group(group_id, user)
    if group.manager_type not in SLEEPTIME_TYPES:
        return group_view(ctx.workspace, _talking_changed(ctx, group, body))
    with ctx.workspace.transaction():
        changed = _changed(ctx.workspace.group(group_id, user), body)
        ctx.workspace.save_group(changed)
    return group_view(ctx.workspace, changed)


def _talking_changed(ctx: ServerContext, group: AgentGroup, body: GroupUpdate) -> AgentGroup:
    config = body.manager_config or ManagerConfigUpdate()
    if config.manager_type not in (None, group.manager_type):
        raise ConfigError(
            f"manager_config.manager_type: the group is a {group.manager_type!r} group, "
            f"not {config.manager_type!r} (a group's kind stays as made)"
        )
    if body.shared_block_ids:
        raise ConfigError("shared_block_ids: attach the blocks to the agents instead")
    return ctx.workspace.talking_groups.modify(
        group,
        agent_ids=body.agent_ids,
        description=body.description,
        max_turns=config.max_turns,
        manager_agent_id=config.manager_agent_id,
        termination_token=config.termination_token,
    )


@router.delete("/v1/groups/{group_id}")
def delete_group(group_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's delete_group: the group goes, its agents stay."""
    group = ctx.workspace.group(group_id, user)
    ctx.workspace.delete_group(group.id)
    return {"message": f"Group id={group.id} successfully deleted"}


@router.get("/v1/agents/{agent_id}/groups")
def agent_groups(
    agent_id: str,
    ctx: Context,
    user: User,
    manager_type: LettaManagerType | None = None,
    before: str | None = None,
    after: str | None = None,
    limit: Limit = 100,
    order: Order = "desc",
    order_by: Literal["created_at"] = "created_at",
) -> list[dict[str, Any]]:
    """Letta's list_groups_for_agent: those it is the main agent or a member of."""
    state = ctx.agent_state(user, agent_id)
    groups = ctx.workspace.agent_groups(state.id)
    return _views(ctx, _listed(groups, manager_type, order, after, before, limit))
