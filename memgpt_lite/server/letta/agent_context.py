"""Letta's routes that read or clear what an agent works with: its context
window (`agents.context.retrieve`, GET /v1/agents/{id}/context), its core
memory (`agents.core_memory.retrieve`, GET /v1/agents/{id}/core-memory), its
system message (`agents.recompile`, POST /v1/agents/{id}/recompile), the
next request's body (preview-raw-payload), `agents.messages.compact` (POST
/v1/agents/{id}/summarize) and `agents.messages.reset` (PATCH
/v1/agents/{id}/reset-messages).

The context window is the next request as the agent would send it
(memory/recall/window.py compiles it), in Letta's ContextWindowOverview.
A reset deletes the agent's messages, all of them (Letta keeps none either),
with the summary of older ones; its blocks and archival memory stay.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body

from memgpt_lite.agent.agent import Agent
from memgpt_lite.errors import ConfigError
from memgpt_lite.memory.core.blocks import join_sections
from memgpt_lite.memory.recall.window import compile_context, overview
from memgpt_lite.models import AgentStats, Message
from memgpt_lite.server.context import Context, ServerContext, User
from memgpt_lite.server.letta.bodies import LettaBody, SendRequest
from memgpt_lite.server.letta.views import AGENT_TYPE, agent_view, block_view

router = APIRouter(prefix="/v1/agents", tags=["letta"])


def message_view(message: Message) -> dict[str, Any]:
    """A stored message as Letta's Message (its internal form, as the
    context view lists them)."""
    return {
        "id": message.id,
        "agent_id": message.agent_id,
        "role": message.role,
        "content": [{"type": "text", "text": message.content}] if message.content else [],
        "name": message.name,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in message.tool_calls
        ]
        or None,
        "tool_call_id": message.tool_call_id,
        "step_id": message.step_id,
        "created_at": message.created_at,
    }


def context_view(agent: Agent, stats: AgentStats) -> dict[str, Any]:
    """The agent's next request as Letta's ContextWindowOverview: the tokens
    of each part, counted as the agent counts them, and the parts; `stats`:
    the agent's counts."""
    runner = agent.runner
    compiled, summary = compile_context(runner), overview(runner)
    tokens, texts = summary.sections, dict(compiled.sections)
    blocks = [(name, text) for name, text in compiled.sections if name.startswith("block:")]
    core_memory = join_sections(blocks) if blocks else ""
    return {
        "context_window_size_max": summary.context_window,
        "context_window_size_current": summary.total_tokens,
        "num_messages": summary.messages_in_context,
        "num_archival_memory": stats.passage_count + stats.attached_passage_count,
        "num_recall_memory": stats.message_count,
        "num_tokens_external_memory_summary": tokens.get("memory metadata", 0),
        "external_memory_summary": texts.get("memory metadata", ""),
        "num_tokens_system": tokens.get("system instructions", 0),
        "system_prompt": texts.get("system instructions", ""),
        "num_tokens_core_memory": sum(n for name, n in tokens.items() if name.startswith("block:")),
        "core_memory": core_memory,
        "num_tokens_summary_memory": tokens.get("summary", 0),
        "summary_memory": texts.get("summary"),
        "num_tokens_functions_definitions": tokens.get("tool schemas", 0),
        "functions_definitions": compiled.tools,
        "num_tokens_messages": tokens.get("messages", 0),
        "messages": [message_view(m) for m in compiled.messages],
    }


@router.get("/{agent_id}/context")
def retrieve_context(agent_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's retrieve_agent_context_window."""
    agent = ctx.agent(user, agent_id)
    return context_view(agent, ctx.workspace.agent_stats(agent.state.id))


@router.get("/{agent_id}/core-memory")
def retrieve_core_memory(agent_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's retrieve_agent_memory: the agent's blocks, in the order the
    system message shows them."""
    state = ctx.agent_state(user, agent_id)
    blocks = [block_view(b) for b in ctx.workspace.blocks(state.id)]
    return {"blocks": blocks, "agent_type": AGENT_TYPE, "file_blocks": [], "prompt_template": ""}


class ResetMessages(LettaBody):
    add_default_initial_messages: bool = False


@router.patch("/{agent_id}/reset-messages")
def reset_messages(
    agent_id: str,
    ctx: Context,
    user: User,
    body: Annotated[ResetMessages | None, Body()] = None,
    add_default_initial_messages: bool | None = None,
) -> dict[str, Any]:
    """Letta's reset_messages: every message of the agent deleted, once no
    step of it runs (a step that runs is waited for). The body's
    `add_default_initial_messages` (1.x) or the query's (0.1.x): our agents
    have no initial messages, so true is a 422."""
    initial = body.add_default_initial_messages if body is not None else False
    if initial or add_default_initial_messages:
        raise ConfigError(
            "add_default_initial_messages: memgpt-lite agents start with no messages; "
            "leave it false"
        )
    state = ctx.workspace.reset_messages(ctx.agent(user, agent_id))
    return agent_view(ctx.workspace, state)


@router.post("/{agent_id}/recompile")
@router.post("/{agent_id}/system-prompt/recompile")
def recompile(
    agent_id: str,
    ctx: Context,
    user: User,
    dry_run: bool = False,
    update_timestamp: bool = False,
) -> str:
    """Letta's recompile_agent: the system message as the agent's next
    request sends it. It is compiled for every request from the blocks as
    they are, so there is nothing to store (`dry_run` or not)."""
    return ctx.agent(user, agent_id).system_message()


@router.post("/{agent_id}/messages/preview-raw-payload")
def preview_request(agent_id: str, body: SendRequest, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's preview_model_request: the body of the request the agent's
    next step would send first for the request's user messages (the model,
    the system message and window, the messages, the tools and options),
    sending and storing nothing. Approvals are a 422: they run tools."""
    return ctx.agent(user, agent_id).runner.preview_request(body.text())


@router.post("/{agent_id}/summarize")
def summarize(agent_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's summarize_messages (`agents.messages.compact`): as
    `conversations.messages.compact` for the agent's default conversation.
    Letta's `compaction_settings` are not honoured (the agent's own are)."""
    return compacted(ctx, user, agent_id)


def compacted(
    ctx: ServerContext, user: str, agent_id: str, conversation: str | None = None
) -> dict[str, Any]:
    """The older messages of the window of the agent's `conversation` (None:
    its default one) folded into its summary now (they stay in its
    history), as Letta's CompactionResponse."""
    agent = ctx.agent(user, agent_id, conversation)
    before = len(agent.context_messages())
    report = agent.runner.summarize()
    return {
        "summary": agent.state.summary,
        "num_messages_before": before,
        "num_messages_after": before - report.evicted,
    }
