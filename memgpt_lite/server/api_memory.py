"""Our API for an agent's memory: core memory blocks (limits and read-only
enforced as for the agent's own edits) and their history, archival
passages, the context window's overview, and agent files out and in."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Response
from pydantic import BaseModel

from memgpt_lite.agentfile.native import (
    ImportReport,
    export_agent,
    parse_agent_file,
    store_agent_file,
)
from memgpt_lite.memory.core.block_history import server_author, version_changes
from memgpt_lite.memory.recall.window import ContextOverview
from memgpt_lite.models import Block, Passage
from memgpt_lite.server.bodies import BlockSet, PassageIn
from memgpt_lite.server.context import Context, CurrentCaller, User, require_code_rights

router = APIRouter(prefix="/api/agents", tags=["memory"])


@router.get("/{agent}/blocks")
def list_blocks(agent: str, ctx: Context, user: User) -> list[Block]:
    """The agent's core memory blocks, in the order the system message shows them."""
    return ctx.workspace.blocks(ctx.agent_state(user, agent).id)


@router.get("/{agent}/blocks/{label:path}")
def get_block(agent: str, label: str, ctx: Context, user: User) -> Block:
    return ctx.agent(user, agent).block(label)


@router.put("/{agent}/blocks/{label:path}")
def set_block(agent: str, label: str, body: BlockSet, ctx: Context, user: User) -> Block:
    """Replace a block's value: refused (422) over its limit, if it is
    read-only, or, with `expected`, if the block no longer holds that text."""
    return ctx.agent(user, agent).set_block(
        label, body.value, expected=body.expected, author=server_author(user)
    )


class BlockChange(BaseModel):
    """One value a block held: its number (0 the first), when and by whom it
    was stored, and a unified diff from the value before it."""

    number: int
    label: str
    value: str
    author: str
    created_at: datetime
    diff: str


class BlockHistory(BaseModel):
    label: str
    versions: list[BlockChange]  # oldest first: the last is the block's value now


# Not under /blocks/{label}: a label may hold '/', so ".../history" would be ambiguous.
@router.get("/{agent}/block-history/{label:path}")
def block_history(agent: str, label: str, ctx: Context, user: User) -> BlockHistory:
    """Every value the block held, oldest first, each with who stored it,
    when, and a diff from the one before."""
    history = ctx.agent(user, agent).block_history(label)
    versions = [
        BlockChange(
            number=n, diff=diff, **v.model_dump(include={"label", "value", "author", "created_at"})
        )
        for n, (v, diff) in enumerate(version_changes(history))
    ]
    return BlockHistory(label=label, versions=versions)


class PassagePage(BaseModel):
    passages: list[Passage]
    total: int


class Inserted(BaseModel):
    passages: list[Passage]
    duplicates: list[str]  # ids of passages that already held a chunk's text
    replaced: list[str]  # ids of the passages it made out of date (`replaces`)


@router.post("/{agent}/passages", status_code=201)
def insert_passage(agent: str, body: PassageIn, ctx: Context, user: User) -> Inserted:
    """Store text in archival memory (chunked if long), with tags and a time;
    the passages of `replaces` are kept, marked superseded by it."""
    archival = ctx.agent(user, agent).archival
    report = archival.insert(body.text, body.tags, body.created_at, replaces=body.replaces)
    return Inserted(passages=report.stored, duplicates=report.duplicates, replaced=report.replaced)


@router.get("/{agent}/passages")
def list_passages(
    agent: str,
    ctx: Context,
    user: User,
    limit: Annotated[int, Query(ge=1, le=1000)] = 20,
    offset: Annotated[int, Query(ge=0)] = 0,
    tags: Annotated[list[str] | None, Query()] = None,
) -> PassagePage:
    """Passages, newest first; with `tags`, those with any of them."""
    found, total = ctx.agent(user, agent).archival.list(limit, offset, tags)
    return PassagePage(passages=found, total=total)


@router.get("/{agent}/passages/search")
def search_passages(
    agent: str,
    query: str,
    ctx: Context,
    user: User,
    limit: Annotated[int, Query(ge=1, le=100)] = 5,
    offset: Annotated[int, Query(ge=0)] = 0,
    tags: Annotated[list[str] | None, Query()] = None,
    start: date | None = None,
    end: date | None = None,
) -> PassagePage:
    """Passages for a plain-text query, best first (hybrid when the agent
    has an embedder); `tags`, `start` and `end` (dates, inclusive) filter."""
    archival = ctx.agent(user, agent).archival
    found, total = archival.search(query, limit, offset, tags, start, end)
    return PassagePage(passages=found, total=total)


@router.get("/{agent}/passages/{passage_id}")
def get_passage(agent: str, passage_id: str, ctx: Context, user: User) -> Passage:
    """One passage: a superseded one's `superseded_by` names the passage that replaced it."""
    return ctx.agent(user, agent).archival.get(passage_id)


@router.delete("/{agent}/passages/{passage_id}", status_code=204)
def delete_passage(agent: str, passage_id: str, ctx: Context, user: User) -> Response:
    ctx.agent(user, agent).archival.delete(passage_id)
    return Response(status_code=204)


@router.get("/{agent}/context")
def context_overview(agent: str, ctx: Context, user: User) -> ContextOverview:
    """The context window: its size and the tokens each part of the next request takes."""
    return ctx.agent(user, agent).context_overview()


@router.get("/{agent}/export")
def export(agent: str, ctx: Context, user: User) -> dict[str, Any]:
    """The agent as an agent file (what `memgpt-lite export` writes)."""
    state = ctx.agent_state(user, agent)
    return export_agent(ctx.workspace.store, state.id).model_dump(mode="json")


@router.post("/import", status_code=201)
def import_file(
    ctx: Context,
    caller: CurrentCaller,
    file: Annotated[dict[str, Any], Body(description="An agent file: ours, or Letta's .af")],
    name: Annotated[str | None, Query(description="Store it under this name")] = None,
    letta_agent: Annotated[str | None, Query(description="Which agent of a Letta file")] = None,
    trust_tools: Annotated[
        bool, Query(description="Let the file's tools run (they run code on the server)")
    ] = False,
) -> ImportReport:
    """Import an agent file as a new agent of the user's. The tools it
    carries are registered with their source, and run only once trusted:
    `trust_tools` trusts them, for a caller who may run code on the server."""
    if trust_tools:
        require_code_rights(caller, "trusting an agent file's tools")
    loaded = parse_agent_file(file, "the request body", letta_agent)
    return store_agent_file(
        ctx.workspace.store,
        loaded.agent,
        name=name,
        source=loaded.source,
        notes=loaded.notes,
        owner=caller.user,
        trust_tools=trust_tools,
        endpoint_check=ctx.check_endpoint,
    )
