"""The routes of Letta's REST API that Letta's clients use (see README,
"Letta's clients"): `router` serves them; `fallback_router`, included after
every other router, answers the rest of Letta's API with 501."""

from fastapi import APIRouter

from memgpt_lite.server.letta import (
    agent_context,
    agent_files,
    agents,
    blocks,
    conversations,
    groups,
    mcp_servers,
    memory,
    messages,
    models,
    runs,
    send,
    tools,
)
from memgpt_lite.server.letta.fallback import router as fallback_router

router = APIRouter()
for module in (
    agents,
    agent_context,
    agent_files,
    messages,
    send,
    conversations,
    runs,
    memory,
    blocks,
    groups,
    tools,
    mcp_servers,
    models,
):
    router.include_router(module.router)

__all__ = ["fallback_router", "router"]
