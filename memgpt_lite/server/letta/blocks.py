"""Letta's standalone blocks (/v1/blocks): a block made on its own, owned by
the user who made it, that agents.blocks.attach links to any of that user's
agents by id. Every block the user may reach is served here: their
standalone blocks and their agents' blocks. Another user's block is a 404,
word for word as a block that does not exist.

A standalone block is kept when detached from its last agent (an agent's own
block is not); deleting a block detaches it from every agent holding it, as
Letta does. A block held by agents is changed through one of them, under
the agent's rules (`modify_agent_block`), so its label and read-only flag
stay; a block no agent holds may change those too.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import ValidationError

from memgpt_lite.errors import ConfigError, validation_messages
from memgpt_lite.memory.core.block_history import server_author
from memgpt_lite.models import DEFAULT_BLOCK_LIMIT, Block
from memgpt_lite.server.context import Context, ServerContext, User
from memgpt_lite.server.letta.bodies import BlockUpdate, CreateBlock
from memgpt_lite.server.letta.identities import linked_ids
from memgpt_lite.server.letta.memory import modify_agent_block
from memgpt_lite.server.letta.paging import Order, page
from memgpt_lite.server.letta.views import agent_view, block_view

router = APIRouter(prefix="/v1", tags=["letta"])


def _valid(fields: dict[str, Any]) -> Block:
    """A Block of these fields, or a one-line ConfigError (422)."""
    try:
        return Block.model_validate(fields)
    except ValidationError as exc:
        raise ConfigError(f"block {fields.get('label')!r}: {validation_messages(exc)}") from None


@router.post("/blocks/", include_in_schema=False)
@router.post("/blocks")
def create_block(body: CreateBlock, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's create_block: a standalone block of the caller's. Without a
    limit, Letta's default or the value's length, whichever is larger."""
    block = _valid(
        {
            "label": body.label,
            "value": body.value,
            "limit": body.limit or max(DEFAULT_BLOCK_LIMIT, len(body.value)),
            "description": body.description or "",
            "read_only": body.read_only,
        }
    )
    ctx.workspace.create_block(block, user)
    return block_view(ctx.workspace.user_block(block.id, user))


def _matches(needle: str | None, text: str) -> bool:
    return needle is None or needle.lower() in text.lower()


def _chosen(
    ctx: ServerContext,
    user: str,
    label: str | None,
    name: str | None,
    searches: tuple[str | None, str | None, str | None],
) -> list[Block]:
    """The caller's blocks that pass Letta's filters: `label` exactly, the
    searches (label, description, value) as case-blind substrings. `name` is
    a template's name in Letta: our blocks have none, so it matches none."""
    if name is not None:
        return []
    label_search, description_search, value_search = searches
    return [
        b
        for b in ctx.workspace.user_blocks(user)
        if (label is None or b.label == label)
        and _matches(label_search, b.label)
        and _matches(description_search, b.description)
        and _matches(value_search, b.value)
    ]


@router.get("/blocks/", include_in_schema=False)
@router.get("/blocks")
def list_blocks(
    ctx: Context,
    user: User,
    label: str | None = None,
    name: str | None = None,
    label_search: str | None = None,
    description_search: str | None = None,
    value_search: str | None = None,
    identity_id: str | None = None,
    identifier_keys: Annotated[list[str] | None, Query()] = None,
    after: str | None = None,
    before: str | None = None,
    limit: Annotated[int | None, Query(ge=0)] = 50,
    order: Order = "asc",
) -> list[dict[str, Any]]:
    """Letta's list_blocks: the caller's blocks, oldest first unless `order`
    is "desc", with Letta's label, name, search and identity filters."""
    blocks = _chosen(ctx, user, label, name, (label_search, description_search, value_search))
    of_identities = linked_ids(ctx, user, "block_ids", identity_id, identifier_keys)
    if of_identities is not None:
        blocks = [b for b in blocks if b.id in of_identities]
    if order == "desc":
        blocks.reverse()
    chosen = page(blocks, lambda b: b.id, after=after, before=before, limit=limit)
    return [block_view(b) for b in chosen]


@router.get("/blocks/count")
def count_blocks(ctx: Context, user: User) -> int:
    """Letta's count_blocks: how many blocks the caller has."""
    return len(ctx.workspace.user_blocks(user))


@router.get("/blocks/{block_id}")
def retrieve_block(block_id: str, ctx: Context, user: User) -> dict[str, Any]:
    return block_view(ctx.workspace.user_block(block_id, user))


@router.get("/blocks/{block_id}/agents")
def list_agents_for_block(
    block_id: str,
    ctx: Context,
    user: User,
    after: str | None = None,
    before: str | None = None,
    limit: Annotated[int | None, Query(ge=0)] = 50,
    order: Order = "asc",
) -> list[dict[str, Any]]:
    """Letta's list_agents_for_block: the agents holding the block, by name
    (paged by agent id: the client asks again after the last one)."""
    block = ctx.workspace.user_block(block_id, user)
    holders = [ctx.agent_state(user, name) for name in ctx.workspace.block_owners(block.id)]
    if order == "desc":
        holders.reverse()
    chosen = page(holders, lambda state: state.id, after=after, before=before, limit=limit)
    return [agent_view(ctx.workspace, state) for state in chosen]


def _modify_loose(ctx: ServerContext, user: str, block: Block, body: BlockUpdate) -> Block:
    """Change a block no agent holds: any of its fields, checked as a new block."""
    given = body.model_dump(include=set(BlockUpdate.model_fields), exclude_none=True)
    changed = _valid(block.model_dump() | given)
    ctx.workspace.replace_block(changed, author=server_author(user))
    return ctx.workspace.user_block(block.id, user)


@router.patch("/blocks/{block_id}")
def modify_block(
    block_id: str, ctx: Context, user: User, body: BlockUpdate | None = None
) -> dict[str, Any]:
    """Letta's modify_block: `value`, `limit` and `description`; `label` and
    `read_only` too while no agent holds the block."""
    body = body or BlockUpdate()
    with ctx.workspace.transaction():
        block = ctx.workspace.user_block(block_id, user)
        holders = ctx.workspace.block_owners(block.id)
        if not holders:
            return block_view(_modify_loose(ctx, user, block, body))
        agent = ctx.agent(user, holders[0])  # an edit through one is seen by all
        return block_view(modify_agent_block(ctx, user, agent, block.label, body))


@router.delete("/blocks/{block_id}")
def delete_block(block_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's delete_block: the block goes, detached from every agent that held it."""
    ctx.workspace.delete_block(block_id, user)
    return {"message": f"Block id={block_id} successfully deleted"}
