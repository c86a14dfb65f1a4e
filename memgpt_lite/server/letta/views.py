"""Our objects in Letta's shapes: an agent as Letta's AgentState, a block as
its BlockResponse, a passage as its Passage (a tool as its Tool: tool_views.py).

Each gets the fields letta-client's types mark required, with honest values:
what we do not have (sources, metadata, tags of blocks) is empty, never
invented.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from memgpt_lite.agent.workspace import Workspace
from memgpt_lite.models import AgentState, Block, Passage
from memgpt_lite.server.letta.configs import embedding_config_view, llm_config_view
from memgpt_lite.server.letta.messages import approval_request
from memgpt_lite.server.letta.tool_views import agent_tool_views

# Letta's `include` value that asks for an agent's pending approval.
PENDING_APPROVAL = "agent.pending_approval"

# The agent type whose loop ours is: tools for everything, send_message to talk.
AGENT_TYPE = "memgpt_agent"


def block_view(block: Block) -> dict[str, Any]:
    return {
        "id": block.id,
        "label": block.label,
        "value": block.value,
        "limit": block.limit,
        "description": block.description,
        "read_only": block.read_only,
        "metadata": {},
        "tags": [],
        "hidden": False,
        "is_template": False,
    }


def passage_view(passage: Passage) -> dict[str, Any]:
    return {
        "id": passage.id,
        "text": passage.text,
        "tags": passage.tags,
        "created_at": passage.created_at,
        "updated_at": passage.created_at,
        "metadata": {},
        "is_deleted": False,
        "embedding": None,
        "embedding_config": None,
    }


def pending_approval(workspace: Workspace, state: AgentState) -> dict[str, Any] | None:
    """The calls of the agent waiting for the user's approval, as Letta's
    approval_request_message (the one its clients answer), or None."""
    answer = workspace.waiting_answer(state.id)
    if answer is None:
        return None
    asking = workspace.waiting_calls(state)
    return approval_request(answer, asking) if asking else None


def agent_view(
    workspace: Workspace, state: AgentState, include: Collection[str] = ()
) -> dict[str, Any]:
    """An agent as Letta's AgentState; `include` (Letta's query of that name)
    "agent.pending_approval" adds the approval request waiting, if any."""
    blocks = [block_view(b) for b in workspace.blocks(state.id)]
    stats = workspace.agent_stats(state.id)
    return {
        "id": state.id,
        "name": state.shown_name,
        "agent_type": AGENT_TYPE,
        "system": state.system,
        "model": state.llm.model,
        "llm_config": llm_config_view(state),
        "embedding": state.settings.embedder,
        "embedding_config": embedding_config_view(state),
        "blocks": blocks,
        "memory": {"blocks": blocks, "agent_type": AGENT_TYPE, "file_blocks": []},
        "tools": agent_tool_views(
            state,
            workspace.tools.tools_of(state.owner),
            workspace.settings.tools.result_max_chars,
        ),
        "tool_rules": [rule.model_dump(mode="json") for rule in state.settings.tool_rules],
        "sources": [],
        "tags": state.settings.tags,
        "identities": [],
        "metadata": {},
        "description": None,
        "created_at": state.created_at,
        "updated_at": state.updated_at,
        "last_run_completion": stats.last_active,
        "pending_approval": (
            pending_approval(workspace, state) if PENDING_APPROVAL in include else None
        ),
    }
