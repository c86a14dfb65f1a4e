"""Letta's agents.import_file (POST /v1/agents/import): an agent file,
Letta's `.af` or ours, uploaded as a multipart form, imported as the
user's, every agent of it (`agent_ids` in the answer), as `memgpt-lite
import --all` does. And agents.export_file (GET /v1/agents/{id}/export):
the user's agent as a Letta `.af`, as `memgpt-lite export --format letta`
writes it; `conversation_id` puts one of its conversations in place of its
default history (Letta's format holds one), `scrub_messages` leaves every
message out (the summary of them too).

The custom tools a file carries are registered for the user with their
source and are not trusted: each call of one is a tool error until they are
trusted. `trust_tools` (ours, not Letta's) trusts them, for a caller who may
run code on the server (context.py). A tool of that name the user has
already is kept, whatever Letta's `override_existing_tools` says: an
upload never replaces a user's code. `name` (or `override_name`) renames a
file's one agent; `model` (or `override_model_handle`) gives the agents
another model. An agent's base URL must be one the server allows (endpoints.py), or nothing
is imported. `strip_messages` is refused; the rest of Letta's form
(`append_copy_suffix`, embeddings, secrets, project) is accepted and not used.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, UploadFile
from fastapi.responses import Response

from memgpt_lite.agentfile.letta_export import agent_file_to_letta
from memgpt_lite.agentfile.native import export_agent, import_agent, import_every_agent
from memgpt_lite.agentfile.schema import AgentFile
from memgpt_lite.conversations import Conversation
from memgpt_lite.errors import ConfigError, ConflictError, NotFoundError
from memgpt_lite.models import AgentState
from memgpt_lite.server.context import Context, CurrentCaller, User, require_code_rights
from memgpt_lite.server.letta.agents import model_name

router = APIRouter(prefix="/v1/agents", tags=["letta"])


@router.post("/import")
def import_file(
    ctx: Context,
    caller: CurrentCaller,
    file: Annotated[UploadFile, File()],
    name: Annotated[str | None, Form()] = None,
    override_name: Annotated[str | None, Form()] = None,
    model: Annotated[str | None, Form()] = None,
    override_model_handle: Annotated[str | None, Form()] = None,
    strip_messages: Annotated[bool, Form()] = False,
    trust_tools: Annotated[bool, Form()] = False,
) -> dict[str, Any]:
    """Letta's import_agent: the file's agents imported as the user's."""
    if strip_messages:
        raise ConfigError("strip_messages: not supported; an agent comes with its history")
    if trust_tools:
        require_code_rights(caller, "trusting an agent file's tools")
    new_name = name or override_name
    with tempfile.TemporaryDirectory(prefix="memgpt-import-") as folder:
        path = Path(folder) / "upload.af"
        path.write_bytes(file.file.read())
        store, user, check = ctx.workspace.store, caller.user, ctx.check_endpoint
        if new_name is not None:
            one = import_agent(
                store,
                path,
                name=new_name,
                owner=user,
                trust_tools=trust_tools,
                endpoint_check=check,
            )
            reports = [one]
        else:
            reports = import_every_agent(
                store, path, owner=user, trust_tools=trust_tools, endpoint_check=check
            )
    handle = model or override_model_handle
    if handle:
        wanted = model_name(handle)
        for report in reports:
            ctx.workspace.update_agent(report.agent_id, lambda s: _set_model(s, wanted))
    return {"agent_ids": [report.agent_id for report in reports]}


def _set_model(state: AgentState, model: str) -> None:
    state.llm.model = model


@router.get("/{agent_id}/export")
def export_file(
    agent_id: str,
    ctx: Context,
    user: User,
    conversation_id: str | None = None,
    scrub_messages: bool = False,
    max_steps: int | None = None,  # Letta's, deprecated: not used
    use_legacy_format: bool = False,  # Letta's, deprecated: refused when set
) -> Response:
    """Letta's export_agent: the agent as a Letta agent file (JSON)."""
    if use_legacy_format:
        raise ConfigError("use_legacy_format: not supported; the file is Letta's current format")
    state = ctx.agent_state(user, agent_id)
    store = ctx.workspace.store
    data = export_agent(store, state.id)
    if conversation_id is not None:
        data = _in_conversation(data, store.list_conversations(state.id), conversation_id)
    if scrub_messages:
        data = data.model_copy(update={"messages": [], "context_start": 0, "summary": ""})
    text = json.dumps(agent_file_to_letta(data), indent=2, ensure_ascii=False)
    return Response(text, media_type="application/json")


def _in_conversation(
    data: AgentFile, listed: list[Conversation], conversation_id: str
) -> AgentFile:
    """`data` with conversation `conversation_id`'s history as its own. The
    file's conversations are the agent's, oldest first, as `listed` (read
    just before): one made or deleted in between is a 409, to export again."""
    index = next((i for i, c in enumerate(listed) if c.id == conversation_id), None)
    if index is None:
        raise NotFoundError(f"the agent has no conversation {conversation_id!r}")
    same = len(data.conversations) == len(listed)
    if not same or data.conversations[index].created_at != listed[index].created_at:
        raise ConflictError("the agent's conversations changed while exporting; export again")
    chosen = data.conversations[index]
    return data.model_copy(
        update={
            "messages": chosen.messages,
            "context_start": chosen.context_start,
            "summary": chosen.window_summary,
        }
    )
