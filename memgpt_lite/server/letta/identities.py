"""Letta's identities (/v1/identities) and their links to agents and blocks,
for apps that many people use through one API key: one identity per person
of the app (its `identifier_key` the app's own id for them), each person's
agent created with `identity_ids`, and found again with
`agents.list(identifier_keys=[...])` or `identity_id` (agents.py).

Every identity is the caller's (the API key's user); another user's
identity, or agent or block named in a link, is a 404 worded as an unknown
id. How a create, an upsert and a modify differ is agent/identities.py's.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Query

from memgpt_lite.agent.identities import Identity, IdentityProperty, IdentityType
from memgpt_lite.errors import NotFoundError
from memgpt_lite.server.context import Context, ServerContext, User
from memgpt_lite.server.letta.bodies import IdentityIn
from memgpt_lite.server.letta.paging import Order, page
from memgpt_lite.server.letta.views import agent_view, block_view, identity_view

router = APIRouter(prefix="/v1", tags=["letta"])

Limit = Annotated[int | None, Query(ge=0)]


def _given(body: IdentityIn) -> dict[str, Any]:
    return body.model_dump(exclude_none=True)


@router.post("/identities/", include_in_schema=False)
@router.post("/identities")
def create_identity(body: IdentityIn, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's create_identity: a 409 for an `identifier_key` the caller has."""
    return identity_view(ctx.workspace.identities.create(user, _given(body)))


@router.put("/identities/", include_in_schema=False)
@router.put("/identities")
def upsert_identity(body: IdentityIn, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's upsert_identity: the caller's identity of that key, made or replaced."""
    return identity_view(ctx.workspace.identities.upsert(user, _given(body)))


def _listed(
    identities: list[Identity], name: str | None, project_id: str | None, kind: str | None
) -> list[Identity]:
    """Those whose name holds `name` (any case), of that project and type."""
    return [
        i
        for i in identities
        if (name is None or name.lower() in i.name.lower())
        and (project_id is None or i.project_id == project_id)
        and (kind is None or i.identity_type == kind)
    ]


@router.get("/identities/", include_in_schema=False)
@router.get("/identities")
def list_identities(
    ctx: Context,
    user: User,
    name: str | None = None,
    project_id: str | None = None,
    identifier_key: str | None = None,
    identity_type: IdentityType | None = None,
    after: str | None = None,
    before: str | None = None,
    limit: Limit = 50,
    order: Order = "desc",
) -> list[dict[str, Any]]:
    """Letta's list_identities: the caller's, newest first unless `order`
    is "asc", by `identifier_key`, `identity_type`, `project_id` and a part
    of the name (any case)."""
    stored = ctx.workspace.identities.list(user, identifier_key=identifier_key)
    chosen = _listed(stored, name, project_id, identity_type)
    if order == "desc":
        chosen.reverse()
    return [identity_view(i) for i in page(chosen, _id, after=after, before=before, limit=limit)]


def linked_ids(
    ctx: ServerContext,
    user: str,
    links: Literal["agent_ids", "block_ids"],
    identity_id: str | None,
    identifier_keys: list[str] | None,
) -> set[str] | None:
    """For a list's filters: the ids of the agents (or blocks) of the
    user's identity `identity_id` and of their identities of
    `identifier_keys`, each filter given narrowing the list (None: neither
    given). An identity the user lacks has none."""
    chosen: set[str] | None = None
    if identity_id is not None:
        try:
            chosen = set(getattr(ctx.workspace.identities.get(identity_id, user), links))
        except NotFoundError:
            chosen = set()
    if identifier_keys:
        keyed = {
            item_id
            for key in identifier_keys
            for identity in ctx.workspace.identities.list(user, identifier_key=key)
            for item_id in getattr(identity, links)
        }
        chosen = keyed if chosen is None else chosen & keyed
    return chosen


def _id(identity: Identity) -> str:
    return identity.id


@router.get("/identities/count")
def count_identities(ctx: Context, user: User) -> int:
    return len(ctx.workspace.identities.list(user))


@router.get("/identities/{identity_id}")
def retrieve_identity(identity_id: str, ctx: Context, user: User) -> dict[str, Any]:
    return identity_view(ctx.workspace.identities.get(identity_id, user))


@router.patch("/identities/{identity_id}")
def modify_identity(identity_id: str, body: IdentityIn, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's update_identity: the fields given; properties merged by key,
    agents and blocks added to the identity's."""
    return identity_view(ctx.workspace.identities.modify(identity_id, user, _given(body)))


@router.delete("/identities/{identity_id}")
def delete_identity(identity_id: str, ctx: Context, user: User) -> None:
    """Letta's delete_identity (answers null, as Letta): its agents and blocks stay."""
    ctx.workspace.identities.delete(identity_id, user)


@router.put("/identities/{identity_id}/properties")
def upsert_identity_properties(
    identity_id: str,
    ctx: Context,
    user: User,
    properties: Annotated[list[IdentityProperty], Body()],
) -> dict[str, Any]:
    """Letta's upsert_properties_for_identity: these replace its properties."""
    return identity_view(ctx.workspace.identities.set_properties(identity_id, user, properties))


@router.get("/identities/{identity_id}/agents")
def list_agents_for_identity(
    identity_id: str,
    ctx: Context,
    user: User,
    after: str | None = None,
    before: str | None = None,
    limit: Limit = 50,
    order: Order = "desc",
) -> list[dict[str, Any]]:
    """Letta's list_agents_for_identity: newest first unless `order` is "asc"."""
    identity = ctx.workspace.identities.get(identity_id, user)
    agents = sorted(
        (ctx.agent_state(user, agent_id) for agent_id in identity.agent_ids),
        key=lambda state: (state.created_at, state.id),
        reverse=order == "desc",
    )
    chosen = page(agents, lambda state: state.id, after=after, before=before, limit=limit)
    return [agent_view(ctx.workspace, state) for state in chosen]


@router.get("/identities/{identity_id}/blocks")
def list_blocks_for_identity(
    identity_id: str,
    ctx: Context,
    user: User,
    after: str | None = None,
    before: str | None = None,
    limit: Limit = 50,
    order: Order = "desc",
) -> list[dict[str, Any]]:
    """Letta's list_blocks_for_identity: in the order linked, the newest
    link first unless `order` is "asc"."""
    identity = ctx.workspace.identities.get(identity_id, user)
    blocks = [ctx.workspace.user_block(block_id, user) for block_id in identity.block_ids]
    if order == "desc":
        blocks.reverse()
    chosen = page(blocks, lambda block: block.id, after=after, before=before, limit=limit)
    return [block_view(block) for block in chosen]


@router.patch("/agents/{agent_id}/identities/attach/{identity_id}")
def attach_identity_to_agent(
    agent_id: str, identity_id: str, ctx: Context, user: User
) -> dict[str, Any]:
    """Letta's attach_identity_to_agent; answers the agent."""
    state = ctx.agent_state(user, agent_id)
    ctx.workspace.identities.link(identity_id, user, "agent", state.id, True)
    return agent_view(ctx.workspace, state)


@router.patch("/agents/{agent_id}/identities/detach/{identity_id}")
def detach_identity_from_agent(
    agent_id: str, identity_id: str, ctx: Context, user: User
) -> dict[str, Any]:
    """Letta's detach_identity_from_agent; answers the agent."""
    state = ctx.agent_state(user, agent_id)
    ctx.workspace.identities.link(identity_id, user, "agent", state.id, False)
    return agent_view(ctx.workspace, state)


@router.patch("/blocks/{block_id}/identities/attach/{identity_id}")
def attach_identity_to_block(
    block_id: str, identity_id: str, ctx: Context, user: User
) -> dict[str, Any]:
    """Letta's attach_identity_to_block; answers the block."""
    block = ctx.workspace.user_block(block_id, user)
    ctx.workspace.identities.link(identity_id, user, "block", block.id, True)
    return block_view(block)


@router.patch("/blocks/{block_id}/identities/detach/{identity_id}")
def detach_identity_from_block(
    block_id: str, identity_id: str, ctx: Context, user: User
) -> dict[str, Any]:
    """Letta's detach_identity_from_block; answers the block."""
    block = ctx.workspace.user_block(block_id, user)
    ctx.workspace.identities.link(identity_id, user, "block", block.id, False)
    return block_view(block)
