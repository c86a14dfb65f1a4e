"""Our objects in Letta's shapes: an agent as Letta's AgentState, a block as
its BlockResponse, a passage as its Passage (a tool as its Tool: tool_views.py).

Each gets the fields letta-client's types mark required, with honest values:
what we do not have (sources, metadata, tags of blocks) is empty, never
invented.
"""

from __future__ import annotations

from typing import Any

from memgpt_lite.agent.workspace import Workspace
from memgpt_lite.memory.recall.window import window_for_model
from memgpt_lite.models import AgentState, Block, Passage
from memgpt_lite.server.letta.tool_views import agent_tool_views

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


def llm_config(state: AgentState) -> dict[str, Any]:
    llm = state.llm
    return {
        "model": llm.model,
        "handle": llm.model,
        "model_endpoint_type": "openai",
        "model_endpoint": llm.base_url,
        "context_window": state.settings.context_window or window_for_model(llm.model),
        "temperature": llm.temperature,
        "put_inner_thoughts_in_kwargs": False,
    }


def embedding_config(state: AgentState) -> dict[str, Any] | None:
    spec = state.settings.embedder
    if spec is None:
        return None
    kind, _, model = spec.partition(":")
    local = kind == "local"
    return {
        "embedding_model": "all-MiniLM-L6-v2" if local else model,
        "embedding_endpoint_type": "hugging-face" if local else "openai",
        # 0 until the first passage is embedded and the space is known.
        "embedding_dim": state.embedding_dimension or 0,
        "handle": spec,
    }


def agent_view(workspace: Workspace, state: AgentState) -> dict[str, Any]:
    """An agent as Letta's AgentState."""
    blocks = [block_view(b) for b in workspace.blocks(state.id)]
    stats = workspace.agent_stats(state.id)
    return {
        "id": state.id,
        "name": state.shown_name,
        "agent_type": AGENT_TYPE,
        "system": state.system,
        "model": state.llm.model,
        "llm_config": llm_config(state),
        "embedding": state.settings.embedder,
        "embedding_config": embedding_config(state),
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
    }
