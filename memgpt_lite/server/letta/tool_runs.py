"""Running tools through Letta's routes: one of an agent's tools by name
(agents.tools.run: POST /v1/agents/{id}/tools/{name}/run), a tool's source
before it is created (run_tool_from_source: POST /v1/tools/run), and the
JSON schema a source's tool would have (generate_json_schema: POST
/v1/tools/generate-schema).

A source is read, and run, in a process of its own (tools/source/), as
`tools.create` reads one: both need the right to run code on the server
(context.py). An agent's tool runs as its user's own call, outside any step
(`Runner.run_tool`): no tool rule or approval applies, and what it changes
stays changed. What a tool prints is not kept, so `stdout` and `stderr` are
empty lists.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from memgpt_lite.errors import ConfigError
from memgpt_lite.models import new_id, utcnow
from memgpt_lite.server.context import Context, CurrentCaller, User, require_code_rights
from memgpt_lite.server.letta.bodies import CodeInput, ToolArgs, ToolRunFromSource
from memgpt_lite.server.letta.tools import refuse_what_we_lack, requirements
from memgpt_lite.server.letta.views import agent_view

router = APIRouter(prefix="/v1", tags=["letta"])


@router.post("/agents/{agent_id}/tools/{tool_name}/run")
def run_agent_tool(
    agent_id: str, tool_name: str, ctx: Context, user: User, body: ToolArgs | None = None
) -> dict[str, Any]:
    """Letta's run_tool_for_agent: the agent's tool `tool_name` run now on
    `args`, as Letta's ToolExecutionResult (`func_return`: what the model
    would have read; the agent as it is after)."""
    agent = ctx.agent(user, agent_id)
    outcome = agent.runner.run_tool(tool_name, (body or ToolArgs()).args)
    return {
        "status": "success" if outcome.ok else "error",
        "func_return": outcome.content,
        "agent_state": agent_view(ctx.workspace, agent.state),
        "stdout": [],
        "stderr": [],
        "sandbox_config_fingerprint": None,
    }


@router.post("/tools/run")
def run_tool_from_source(
    body: ToolRunFromSource, ctx: Context, caller: CurrentCaller
) -> dict[str, Any]:
    """Letta's run_tool_from_source: the tool in `source_code` (its function
    `name`, else its one public function) run once on `args`, with
    `env_vars` in its environment, and not stored; as Letta's
    ToolReturnMessage (`status` "error" for a call that failed, with the
    error the model would read)."""
    require_code_rights(caller, "running a tool from source")
    refuse_what_we_lack(body)
    registry = ctx.workspace.tools
    definition = registry.from_source(
        body.source_code,
        name=body.name,
        owner=caller.user,
        what="the tool's source_code",
        requirements=requirements(body) or (),
        json_schema=body.json_schema,
    )
    outcome = registry.run_once(definition, body.args, body.env_vars)
    status, call_id = ("success" if outcome.ok else "error"), new_id("call")
    return {
        "id": new_id("msg"),
        "date": utcnow(),
        "message_type": "tool_return_message",
        "name": definition.name,
        "tool_return": outcome.content,
        "status": status,
        "tool_call_id": call_id,
        "stdout": [],
        "stderr": [],
        "tool_returns": [
            {
                "tool_call_id": call_id,
                "status": status,
                "tool_return": outcome.content,
                "type": "tool",
            }
        ],
    }


@router.post("/tools/generate-schema")
def generate_json_schema(body: CodeInput, ctx: Context, caller: CurrentCaller) -> dict[str, Any]:
    """Letta's generate_json_schema: the JSON schema (name, description,
    parameters) a tool made from `code` would have, read from its
    function's signature and docstring."""
    require_code_rights(caller, "reading a tool's schema from source")
    if body.source_type not in (None, "python"):
        raise ConfigError(f"source_type: memgpt-lite reads Python only, got {body.source_type!r}")
    return ctx.workspace.tools.from_source(
        body.code, name=None, owner=caller.user, what="the code"
    ).json_schema
