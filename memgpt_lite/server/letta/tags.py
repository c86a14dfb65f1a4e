"""Letta's tags.list (GET /v1/tags/): the tags of the user's agents, each
once, by name. (Letta's blocks have tags too; memgpt-lite's have none.)"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from memgpt_lite.server.context import Context, User
from memgpt_lite.server.letta.paging import page

router = APIRouter(prefix="/v1/tags", tags=["letta"])


@router.get("/", include_in_schema=False)
@router.get("")
def list_tags(
    ctx: Context,
    user: User,
    before: str | None = None,
    after: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    order: Literal["asc", "desc"] = "asc",
    order_by: Literal["name"] = "name",
    query_text: str | None = None,
    name: str | None = None,
) -> list[str]:
    """The user's agents' tags in order of name (`order`); `query_text`:
    those that contain it (any case), `name`: that one alone; `after` and
    `before` are tags."""
    tags = sorted(
        {tag for state, _ in ctx.workspace.list_agents(owner=user) for tag in state.settings.tags}
    )
    if query_text:
        tags = [tag for tag in tags if query_text.lower() in tag.lower()]
    if name is not None:
        tags = [tag for tag in tags if tag == name]
    if order == "desc":
        tags.reverse()
    return page(tags, lambda tag: tag, after=after, before=before, limit=limit)
