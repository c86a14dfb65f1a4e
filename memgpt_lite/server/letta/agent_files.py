"""Letta's agents.import_file (POST /v1/agents/import): an agent file,
Letta's `.af` or ours, uploaded as a multipart form, imported as the
user's, every agent of it (`agent_ids` in the answer), as `memgpt-lite
import --all` does.

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

import tempfile
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, UploadFile

from memgpt_lite.agentfile.native import import_agent, import_every_agent
from memgpt_lite.errors import ConfigError
from memgpt_lite.models import AgentState
from memgpt_lite.server.context import Context, CurrentCaller, require_code_rights
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
