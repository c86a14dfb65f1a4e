"""Letta's memory routes: core memory blocks by label
(/v1/agents/{id}/core-memory/blocks) and archival passages
(/v1/agents/{id}/archival-memory). Blocks keep our rules: a value over the
block's limit, or a read-only block, is refused (422), as `Agent.set_block`
refuses it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.concurrency import run_in_threadpool
from pydantic import ValidationError

from memgpt_lite.agent.agent import Agent
from memgpt_lite.errors import ConfigError, NotFoundError, validation_messages
from memgpt_lite.memory.core.block_history import server_author
from memgpt_lite.models import Block, Passage
from memgpt_lite.server.context import Context, ServerContext, User
from memgpt_lite.server.letta.bodies import BlockUpdate, CreatePassage
from memgpt_lite.server.letta.paging import Order, page
from memgpt_lite.server.letta.views import agent_view, block_view, passage_view

router = APIRouter(prefix="/v1/agents", tags=["letta"])

# Search results read before the filters we apply ourselves (exact times, all tags).
FILTERED_SEARCH_POOL = 1000


def _block(agent: Agent, label: str) -> Block:
    for block in agent.blocks:
        if block.label == label:
            return block
    raise NotFoundError(f"agent {agent.state.name!r} has no block labelled {label!r}")


@router.get("/{agent_id}/core-memory/blocks")
def list_blocks(
    agent_id: str,
    ctx: Context,
    user: User,
    after: str | None = None,
    before: str | None = None,
    limit: Annotated[int | None, Query(ge=0)] = 100,
    order: Order = "desc",
) -> list[dict[str, Any]]:
    """The agent's blocks; "asc" is the order the system message shows them."""
    blocks = ctx.workspace.blocks(ctx.agent_state(user, agent_id).id)
    if order == "desc":
        blocks.reverse()
    return [
        block_view(b) for b in page(blocks, lambda b: b.id, after=after, before=before, limit=limit)
    ]


# A label may be a path (`system/human`): letta-client sends its slashes as
# %2F, which arrive decoded, so the label is the rest of the path. Letta's
# attach/detach routes (PATCH .../blocks/attach/{block_id}) are declared
# before the PATCH of a label, so they are matched first.


@router.get("/{agent_id}/core-memory/blocks/{block_label:path}")
def retrieve_block(agent_id: str, block_label: str, ctx: Context, user: User) -> dict[str, Any]:
    return block_view(_block(ctx.agent(user, agent_id), block_label))


def _refuse_changes(block: Block, body: BlockUpdate) -> None:
    for field in ("label", "read_only"):
        given = getattr(body, field)
        if given is not None and given != getattr(block, field):
            raise ConfigError(f"{field}: memgpt-lite does not change a block's {field}")


def _set_limit_and_description(ctx: ServerContext, block: Block, body: BlockUpdate) -> None:
    changes = {
        k: v for k, v in (("limit", body.limit), ("description", body.description)) if v is not None
    }
    try:
        changed = Block.model_validate(block.model_dump() | changes)
    except ValidationError as exc:
        raise ConfigError(f"block {block.label!r}: {validation_messages(exc)}") from None
    ctx.workspace.update_block(changed)  # the value is the same: no version


@router.patch("/{agent_id}/core-memory/blocks/attach/{block_id}")
def attach_block(agent_id: str, block_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's attach_core_memory_block: another of the user's agents'
    block, shared (an edit through either agent is seen by both); a 409 if
    the agent has a block of its label already."""
    state = ctx.agent_state(user, agent_id)
    ctx.workspace.share_block(state.id, block_id, user)
    return agent_view(ctx.workspace, ctx.agent_state(user, state.id))


@router.patch("/{agent_id}/core-memory/blocks/detach/{block_id}")
def detach_block(agent_id: str, block_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's detach_core_memory_block: the block is deleted once no agent holds it."""
    state = ctx.agent_state(user, agent_id)
    ctx.workspace.detach_block(state.id, block_id)
    return agent_view(ctx.workspace, ctx.agent_state(user, state.id))


@router.patch("/{agent_id}/core-memory/blocks/{block_label:path}")
def update_block(
    agent_id: str,
    block_label: str,
    ctx: Context,
    user: User,
    body: BlockUpdate | None = None,
) -> dict[str, Any]:
    """Letta's modify_core_memory_block: `value` (under the block's limit,
    not on a read-only block), `limit` and `description` are honoured."""
    agent = ctx.agent(user, agent_id)
    return block_view(modify_agent_block(ctx, user, agent, block_label, body or BlockUpdate()))


def modify_agent_block(
    ctx: ServerContext, user: str, agent: Agent, block_label: str, body: BlockUpdate
) -> Block:
    """Change the agent's block as `body` says, under the agent's rules
    (`Agent.set_block`'s checks); its label and read-only flag stay."""
    with ctx.workspace.transaction():
        block = _block(agent, block_label)
        _refuse_changes(block, body)
        # A smaller limit is checked against the new value, so that goes first.
        value_first = body.limit is not None and body.limit < block.limit
        if body.value is not None and value_first:
            agent.set_block(block_label, body.value, author=server_author(user))
        if body.limit is not None or body.description is not None:
            _set_limit_and_description(ctx, _block(agent, block_label), body)
        if body.value is not None and not value_first:
            agent.set_block(block_label, body.value, author=server_author(user))
    return _block(agent, block_label)


# Archival memory


@router.post("/{agent_id}/archival-memory")
def create_passage(
    agent_id: str, body: CreatePassage, ctx: Context, user: User
) -> list[dict[str, Any]]:
    """Store text (chunked if long): its passages, those already stored included."""
    archival = ctx.agent(user, agent_id).archival
    report = archival.insert(body.text, body.tags or [], body.created_at)
    kept = [*report.stored, *(archival.get(i) for i in report.duplicates if i)]
    return [passage_view(p) for p in kept]


def _all_passages(agent: Agent) -> list[Passage]:
    """Every passage, oldest first (by the time it was written: a passage
    can be given an earlier time than ones stored before it)."""
    found, _ = agent.archival.list(max(agent.archival.count(), 1))
    found.reverse()
    return sorted(found, key=lambda p: p.created_at)


@router.get("/{agent_id}/archival-memory")
def list_passages(
    agent_id: str,
    ctx: Context,
    user: User,
    after: str | None = None,
    before: str | None = None,
    limit: Annotated[int | None, Query(ge=0)] = 100,
    search: str | None = None,
    ascending: bool = True,
) -> list[dict[str, Any]]:
    """Passages, oldest first unless not `ascending`; `search`: those whose
    text holds it (case ignored)."""
    passages = _all_passages(ctx.agent(user, agent_id))
    if search:
        passages = [p for p in passages if search.lower() in p.text.lower()]
    if not ascending:
        passages.reverse()
    chosen = page(passages, lambda p: p.id, after=after, before=before, limit=limit)
    return [passage_view(p) for p in chosen]


def passage_day(moment: datetime | None) -> Any:
    """The UTC day of a time filter, for search's day filters (None: open)."""
    if moment is None:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC).date()


def passage_within(passage: Passage, start: datetime | None, end: datetime | None) -> bool:
    """Whether the passage was stored from `start` to `end` (a time without
    a zone is UTC), the exact filter after search's by days."""

    def aware(moment: datetime) -> datetime:
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)

    when = aware(passage.created_at)
    return (start is None or when >= aware(start)) and (end is None or when <= aware(end))


@router.get("/{agent_id}/archival-memory/search")
async def search_passages(
    agent_id: str,
    query: str,
    ctx: Context,
    user: User,
    tags: Annotated[list[str] | None, Query()] = None,
    tag_match_mode: Literal["any", "all"] = "any",
    top_k: Annotated[int | None, Query(ge=1, le=1000)] = None,
    start_datetime: datetime | None = None,
    end_datetime: datetime | None = None,
) -> dict[str, Any]:
    """Letta's search_archival_memory: best first (hybrid when the agent has
    an embedder); `tags` (any or all of them) and the times filter."""
    wanted = top_k or 10
    filtered = start_datetime or end_datetime or (tags and tag_match_mode == "all")
    agent = await run_in_threadpool(ctx.agent, user, agent_id)
    found, _ = await run_in_threadpool(
        agent.archival.search,
        query,
        FILTERED_SEARCH_POOL if filtered else wanted,
        0,
        tags,
        passage_day(start_datetime),
        passage_day(end_datetime),
    )
    found = [p for p in found if passage_within(p, start_datetime, end_datetime)]
    if tags and tag_match_mode == "all":
        found = [p for p in found if set(tags) <= set(p.tags)]
    results = [
        {"id": p.id, "content": p.text, "timestamp": p.created_at.isoformat(), "tags": p.tags}
        for p in found[:wanted]
    ]
    return {"results": results, "count": len(results)}


@router.delete("/{agent_id}/archival-memory/{memory_id}")
def delete_passage(agent_id: str, memory_id: str, ctx: Context, user: User) -> dict[str, Any]:
    ctx.agent(user, agent_id).archival.delete(memory_id)
    return {"message": f"Passage id={memory_id} successfully deleted"}
