"""Our objects in Letta's shapes: an agent as Letta's AgentState, a block as
its BlockResponse, a passage as its Passage, a group of agents as its Group,
an identity as its Identity, an archive as its Archive (a tool as its Tool:
tool_views.py).

Each gets the fields letta-client's types mark required, with honest values:
what we do not have (sources, metadata, tags of blocks) is empty, never
invented.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from memgpt_lite.agent.archives import ArchiveInfo, archive_id_of
from memgpt_lite.agent.identities import Identity
from memgpt_lite.agent.workspace import AgentGroup, Workspace
from memgpt_lite.models import AgentState, Block, Passage
from memgpt_lite.server.letta.configs import embedding_config_view, llm_config_view
from memgpt_lite.server.letta.messages import approval_request
from memgpt_lite.server.letta.tool_views import agent_tool_views

# Letta's `include` value that asks for an agent's pending approval.
PENDING_APPROVAL = "agent.pending_approval"

# The agent type whose loop ours is: tools for everything, send_message to talk.
AGENT_TYPE = "memgpt_agent"
# The types Letta gives the agents of a sleep-time group: the main agent of a
# voice group, and the sleep-time agents of each kind of group.
VOICE_AGENT_TYPE = "voice_convo_agent"
SLEEPTIME_AGENT_TYPES = {"sleeptime": "sleeptime_agent", "voice_sleeptime": "voice_sleeptime_agent"}


def agent_type(state: AgentState, groups: Sequence[AgentGroup]) -> str:
    """The agent's type as Letta names it, from its place in its groups."""
    for group in groups:
        if state.id in group.agent_ids and group.manager_type in SLEEPTIME_AGENT_TYPES:
            return SLEEPTIME_AGENT_TYPES[group.manager_type]
        if group.manager_agent_id == state.id and group.manager_type == "voice_sleeptime":
            return VOICE_AGENT_TYPE
    return AGENT_TYPE


def group_view(workspace: Workspace, group: AgentGroup) -> dict[str, Any]:
    """A group as Letta's Group, and when its sleep-time agents last ran and
    why that failed (ours: `last_run_at`, `last_error`)."""
    sleeptime = group.manager_type in SLEEPTIME_AGENT_TYPES
    last_read = None
    if sleeptime and group.manager_agent_id is not None:
        read = workspace.store.first_messages(group.manager_agent_id, group.processed_seq, 1)
        last_read = read[0].id if read and read[0].seq == group.processed_seq else None
    voice = group.manager_type == "voice_sleeptime"
    return {
        "id": group.id,
        "manager_type": group.manager_type,
        "agent_ids": group.agent_ids,
        "description": group.description,
        "project_id": None,
        "template_id": None,
        "base_template_id": None,
        "deployment_id": None,
        "shared_block_ids": [],
        "manager_agent_id": group.manager_agent_id,
        "termination_token": group.termination_token,
        "max_turns": group.max_turns,
        "sleeptime_agent_frequency": group.frequency if sleeptime else None,
        "turns_counter": None,
        "last_processed_message_id": last_read,
        "max_message_buffer_length": group.max_message_buffer_length if voice else None,
        "min_message_buffer_length": group.min_message_buffer_length if voice else None,
        "hidden": None,
        "last_run_at": group.last_run_at,
        "last_error": group.last_error,
    }


def identity_view(identity: Identity) -> dict[str, Any]:
    """An identity as Letta's Identity, with its agents and blocks always
    (Letta lists them for older clients, and for newer ones when asked)."""
    return {
        "id": identity.id,
        "identifier_key": identity.identifier_key,
        "name": identity.name,
        "identity_type": identity.identity_type,
        "project_id": identity.project_id,
        "agent_ids": identity.agent_ids,
        "block_ids": identity.block_ids,
        "organization_id": None,
        "properties": [p.model_dump(mode="json") for p in identity.properties],
    }


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
        "archive_id": archive_id_of(passage.agent_id),
        "text": passage.text,
        "tags": passage.tags,
        "created_at": passage.created_at,
        "updated_at": passage.created_at,
        "metadata": {},
        "is_deleted": False,
        "embedding": None,
        "embedding_config": None,
    }


def archive_view(archive: ArchiveInfo) -> dict[str, Any]:
    """An archive as Letta's Archive: its organization is the user it
    belongs to (each user's archives are theirs alone), its embedder the
    row's that holds its passages."""
    return {
        "id": archive.id,
        "name": archive.name,
        "description": archive.description,
        "organization_id": archive.owner,
        "vector_db_provider": "native",
        "embedding_config": embedding_config_view(archive.store),
        "metadata": {},
        "created_at": archive.created_at,
        "updated_at": archive.updated_at,
        "created_by_id": None,
        "last_updated_by_id": None,
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
    workspace: Workspace,
    state: AgentState,
    include: Collection[str] = (),
    groups: Sequence[AgentGroup] | None = None,
) -> dict[str, Any]:
    """An agent as Letta's AgentState; `include` (Letta's query of that name)
    "agent.pending_approval" adds the approval request waiting, if any.
    `groups`: the agent's groups, if read already (for a list)."""
    blocks = [block_view(b) for b in workspace.blocks(state.id)]
    stats = workspace.agent_stats(state.id)
    groups = workspace.agent_groups(state.id) if groups is None else groups
    managed = next((g for g in groups if g.manager_agent_id == state.id), None)
    shown_group = None if managed is None else group_view(workspace, managed)
    kind = agent_type(state, groups)
    identities = workspace.identities.of_agent(state.id)
    return {
        "id": state.id,
        "name": state.shown_name,
        "agent_type": kind,
        "system": state.system,
        "model": state.llm.model,
        "llm_config": llm_config_view(state),
        "embedding": state.settings.embedder,
        "embedding_config": embedding_config_view(state),
        "blocks": blocks,
        "memory": {"blocks": blocks, "agent_type": kind, "file_blocks": []},
        "tools": agent_tool_views(
            state,
            workspace.tools.tools_of(state.owner),
            workspace.settings.tools.result_max_chars,
        ),
        "tool_rules": [rule.model_dump(mode="json") for rule in state.settings.tool_rules],
        "sources": [],
        "tags": state.settings.tags,
        "identities": [identity_view(i) for i in identities],
        "identity_ids": [i.id for i in identities],
        "metadata": {},
        "description": None,
        "created_at": state.created_at,
        "updated_at": state.updated_at,
        "last_run_completion": stats.last_active,
        "pending_approval": (
            pending_approval(workspace, state) if PENDING_APPROVAL in include else None
        ),
        "enable_sleeptime": managed is not None and managed.manager_type in SLEEPTIME_AGENT_TYPES,
        "multi_agent_group": shown_group,
        "managed_group": shown_group,
    }
