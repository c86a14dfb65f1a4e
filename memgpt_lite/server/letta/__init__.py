"""The routes of Letta's REST API that Letta's clients use (see README,
"Letta's clients"): `send_routers` and `routers` serve them;
`fallback_router`, included after every other router, answers the rest of
Letta's API with 501."""

from memgpt_lite.server.letta import (
    agent_context,
    agent_files,
    agents,
    archives,
    blocks,
    conversations,
    group_sends,
    groups,
    identities,
    jobs,
    mcp_by_name,
    mcp_servers,
    memory,
    messages,
    models,
    providers,
    runs,
    send,
    steps,
    tags,
    tool_runs,
    tools,
    user_messages,
)
from memgpt_lite.server.letta.fallback import router as fallback_router

# Included one by one into the app, not through one router of routers: FastAPI
# tries every route of a router in turn, and a nested router's again when it
# hands the request down, so each level and each route ahead of a send costs
# every request. `send_routers` (the sends and the message list) go first
# (app.py); the paths of different modules never overlap, so their order
# changes no answer.
send_routers = (send.router, messages.router)
routers = tuple(
    module.router
    for module in (
        agents,
        agent_context,
        agent_files,
        user_messages,
        conversations,
        runs,
        steps,
        jobs,
        memory,
        blocks,
        groups,
        group_sends,
        identities,
        archives,
        tools,
        tool_runs,
        mcp_servers,
        mcp_by_name,
        models,
        providers,
        tags,
    )
)

__all__ = ["fallback_router", "routers", "send_routers"]
