"""Letta's archives (/v1/archives), their passages, attaching one to an
agent (/v1/agents/{id}/archives/...), and Letta's search of passages across
archives (/v1/passages/search).

An archive is a store of archival passages (agent/archives.py): each
agent's own archival memory is one, and a user makes named ones, which
agents attached to them share; an agent's archival search and inserts take
in the archive attached to it. Every archive is the caller's: another
user's, or an agent or passage of one, is a 404 worded as an unknown id.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import zip_longest
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from memgpt_lite.agent.archives import ArchiveInfo
from memgpt_lite.errors import ConfigError, NotFoundError
from memgpt_lite.memory.archival.passages import ArchivalMemory
from memgpt_lite.models import AgentState, LLMConfig, Passage
from memgpt_lite.server.context import Context, ServerContext, User, endpoint_key
from memgpt_lite.server.letta.agents import embedder_name
from memgpt_lite.server.letta.bodies import ArchiveIn, CreatePassage, PassageBatch, PassageSearch
from memgpt_lite.server.letta.configs import UNCHANGED, ConfigChange, embedding_change
from memgpt_lite.server.letta.memory import FILTERED_SEARCH_POOL, passage_day, passage_within
from memgpt_lite.server.letta.paging import Order, page
from memgpt_lite.server.letta.views import agent_view, archive_view, passage_view

router = APIRouter(prefix="/v1", tags=["letta"])

Limit = Annotated[int | None, Query(ge=0)]


def _embedder(body: ArchiveIn) -> str | None:
    """The embedder a create asks for: `embedding_config` (Letta's older
    field, first, as Letta reads them), else the `embedding` handle; none:
    the archive is searched by words, as an agent made without one."""
    if body.embedding_config is None:
        return embedder_name(body.embedding)
    blank = AgentState(name="archive", llm=LLMConfig(model="none"), system="")
    change = ConfigChange()
    embedding_change(body.embedding_config, blank, change)
    return None if change.embedder is UNCHANGED else change.embedder


def archival(ctx: ServerContext, archive: ArchiveInfo) -> ArchivalMemory:
    """The archive's passages alone (not those of an archive attached to an
    agent whose own it is), with its embedder, opened as an agent is."""
    opened = ctx.workspace.agent_for(
        archive.store, api_key=endpoint_key(archive.store), peer_api_key=endpoint_key
    )
    return ArchivalMemory(opened.runner, attached=False)


@router.post("/archives/", include_in_schema=False)
@router.post("/archives")
def create_archive(body: ArchiveIn, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's create_archive: `name` required; names may repeat, as in Letta."""
    if body.name is None:
        raise ConfigError("name: an archive needs a name")
    made = ctx.workspace.archives.create(user, body.name, body.description, _embedder(body))
    return archive_view(made)


@router.get("/archives/", include_in_schema=False)
@router.get("/archives")
def list_archives(
    ctx: Context,
    user: User,
    before: str | None = None,
    after: str | None = None,
    limit: Limit = 50,
    order: Order = "desc",
    name: str | None = None,
    agent_id: str | None = None,
) -> list[dict[str, Any]]:
    """Letta's list_archives: the caller's, named and their agents' own,
    newest first unless `order` is "asc"; `name` exactly, `agent_id` the
    archives of that agent (its own, and the one attached to it)."""
    archives = ctx.workspace.archives
    if agent_id is not None:
        found = archives.of_agent(ctx.agent_state(user, agent_id))
    else:
        found = archives.list(user)
    found = [a for a in found if name is None or a.name == name]
    if order == "desc":
        found.reverse()
    chosen = page(found, lambda a: a.id, after=after, before=before, limit=limit)
    return [archive_view(a) for a in chosen]


@router.get("/archives/{archive_id}")
def retrieve_archive(archive_id: str, ctx: Context, user: User) -> dict[str, Any]:
    return archive_view(ctx.workspace.archives.get(archive_id, user))


@router.patch("/archives/{archive_id}")
def modify_archive(archive_id: str, body: ArchiveIn, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's modify_archive: the name and description given."""
    changed = ctx.workspace.archives.modify(archive_id, user, body.name, body.description)
    return archive_view(changed)


@router.delete("/archives/{archive_id}", status_code=204)
def delete_archive(archive_id: str, ctx: Context, user: User) -> Response:
    """Letta's delete_archive: with its passages; its agents keep their own."""
    ctx.workspace.archives.delete(archive_id, user)
    return Response(status_code=204)


@router.get("/archives/{archive_id}/agents")
def list_agents_for_archive(
    archive_id: str,
    ctx: Context,
    user: User,
    before: str | None = None,
    after: str | None = None,
    limit: Limit = 50,
    order: Order = "desc",
) -> list[dict[str, Any]]:
    """Letta's list_agents_for_archive: the agents that have it (an agent's
    own archive: that agent too), newest first unless `order` is "asc"."""
    agents = sorted(
        ctx.workspace.archives.agents(archive_id, user),
        key=lambda state: (state.created_at, state.id),
        reverse=order == "desc",
    )
    chosen = page(agents, lambda state: state.id, after=after, before=before, limit=limit)
    return [agent_view(ctx.workspace, state) for state in chosen]


def _passage(store: AgentState, given: CreatePassage) -> Passage:
    """A passage as Letta stores one: its text whole, not cut (Letta's
    `metadata` is not kept)."""
    if not given.text.strip():
        raise ConfigError("text: the passage is empty")
    tags = sorted({t.strip() for t in given.tags or () if t.strip()})
    when = {"created_at": given.created_at} if given.created_at else {}
    return Passage(agent_id=store.id, text=given.text, tags=tags, **when)


def _stored(memory: ArchivalMemory, passages: Sequence[Passage]) -> list[Passage]:
    """Store the passages, all or none: each as stored, or the passage that
    held its text already."""
    report = memory.insert_many(passages)
    return [memory.get(passage_id) for passage_id in report.ids]


@router.post("/archives/{archive_id}/passages")
def create_passage_in_archive(
    archive_id: str, body: CreatePassage, ctx: Context, user: User
) -> dict[str, Any]:
    """Letta's create_passage_in_archive: one passage, embedded by the
    archive's embedder."""
    archive = ctx.workspace.archives.get(archive_id, user)
    [stored] = _stored(archival(ctx, archive), [_passage(archive.store, body)])
    return passage_view(stored)


@router.post("/archives/{archive_id}/passages/batch")
def create_passages_in_archive(
    archive_id: str, body: PassageBatch, ctx: Context, user: User
) -> list[dict[str, Any]]:
    """Letta's create_passages_in_archive: all of them, or none."""
    archive = ctx.workspace.archives.get(archive_id, user)
    passages = [_passage(archive.store, given) for given in body.passages]
    return [passage_view(p) for p in _stored(archival(ctx, archive), passages)]


@router.delete("/archives/{archive_id}/passages/{passage_id}", status_code=204)
def delete_passage_from_archive(
    archive_id: str, passage_id: str, ctx: Context, user: User
) -> Response:
    """Letta's delete_passage_from_archive: gone for every agent that has it."""
    archive = ctx.workspace.archives.get(archive_id, user)
    try:
        archival(ctx, archive).delete(passage_id)
    except NotFoundError:
        raise NotFoundError(f"no passage {passage_id!r} in archive {archive_id!r}") from None
    return Response(status_code=204)


@router.patch("/agents/{agent_id}/archives/attach/{archive_id}")
def attach_archive_to_agent(agent_id: str, archive_id: str, ctx: Context, user: User) -> None:
    """Letta's attach_archive_to_agent (answers null, as Letta): a 409 while
    another archive is attached to the agent."""
    ctx.workspace.archives.attach(ctx.agent_state(user, agent_id), archive_id)


@router.patch("/agents/{agent_id}/archives/detach/{archive_id}")
def detach_archive_from_agent(agent_id: str, archive_id: str, ctx: Context, user: User) -> None:
    """Letta's detach_archive_from_agent: not attached, nothing changes."""
    ctx.workspace.archives.detach(ctx.agent_state(user, agent_id), archive_id)


def _searched(ctx: ServerContext, user: str, body: PassageSearch) -> list[ArchivalMemory]:
    """What a search reads: the agent's archival memory (its own archive
    and the one attached), else the archive, else every archive of the
    caller's."""
    if body.agent_id is not None:
        return [ctx.agent(user, body.agent_id).archival]
    archives = ctx.workspace.archives
    if body.archive_id is not None:
        return [archival(ctx, archives.get(body.archive_id, user))]
    return [archival(ctx, archive) for archive in archives.list(user)]


def _found(memory: ArchivalMemory, body: PassageSearch) -> list[Passage]:
    """The memory's passages passing the filters, best first for a query,
    else newest first."""
    filtered = body.start_date or body.end_date or (body.tags and body.tag_match_mode == "all")
    pool = FILTERED_SEARCH_POOL if filtered else body.limit
    if body.query:
        start, end = passage_day(body.start_date), passage_day(body.end_date)
        found, _ = memory.search(body.query, pool, 0, body.tags, start, end)
    else:
        found, _ = memory.list(pool, 0, body.tags)
    found = [p for p in found if passage_within(p, body.start_date, body.end_date)]
    if body.tags and body.tag_match_mode == "all":
        found = [p for p in found if set(body.tags) <= set(p.tags)]
    return found


@router.post("/passages/search")
def search_passages(body: PassageSearch, ctx: Context, user: User) -> list[dict[str, Any]]:
    """Letta's search_passages: `agent_id` first, else `archive_id`, else
    all the caller's archives, each searched apart (hybrid where it has an
    embedder) and their results taken in turn. A result's score is its
    rank's, 1, 1/2, 1/3...: scores from several indexes do not compare."""
    lists = [_found(memory, body) for memory in _searched(ctx, user, body)]
    taken = [p for row in zip_longest(*lists) for p in row if p is not None]
    return [
        {"passage": passage_view(p), "score": 1 / (rank + 1), "metadata": {}}
        for rank, p in enumerate(taken[: body.limit])
    ]
