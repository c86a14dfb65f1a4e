"""Export an agent to Letta's agent file format (`.af`), so a user can go back.

Written in Letta's current layout, as its own newest files are: top-level
`agents`, `groups`, `blocks`, `files`, `sources`, `tools`, `mcp_servers`,
`skills`, `metadata` and `created_at`, with ids local to the file (`agent-0`,
`block-0`, `message-0`, `tool-0`). The agent is a `memgpt_agent`: our tools are
MemGPT's, under the names Letta gives them.

How things map (the inverse of `letta.py` and `letta_messages.py`):

- The history: Letta's first message is the system prompt, then every message
  in order. `in_context_message_ids` names the system prompt, our summary (as
  Letta's summary alert, if we have one) and the messages in our window.
- User messages are packed as MemGPT packs them (`{"type": "user_message"}`);
  our system notes become Letta's heartbeat, login or system alert messages.
- An assistant's thought is its text content, next to its tool calls; a tool
  result is a `tool` message with its `tool_returns`. An answer waiting for
  the user's approval (the last message, with tool calls and no results) is
  Letta's approval request: the same message with role `approval`.
- Tool rules are Letta's (same fields and kinds); a tool named by a
  `requires_approval` rule is marked `default_requires_approval`.
- Archival passages: Letta's format (up to its `agent_file.py` of 2026-02) has
  no place for them. They are written to the agent's `passages`, where our
  importer reads them; Letta ignores the field.
- Registered tools from Python source are Letta `custom` tools with their
  `source_code`, `json_schema` and `pip_requirements`; an MCP server's tool
  is Letta's `external_mcp` tool naming its server (its configuration stays
  here). An import registers them not trusted, as it does Letta's.
- Left out: vectors, step ids, our settings other than the context window
  and tool rules, and the code of tools given in code or from a module
  (written by name, as Letta `custom` tools without source code).
"""

from __future__ import annotations

import json
import os
import re
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from memgpt_lite.agentfile.schema import AgentFile, FileMessage, FileTool
from memgpt_lite.errors import AlreadyExistsError, ConfigError
from memgpt_lite.memory.recall.window import window_for_model
from memgpt_lite.models import utcnow
from memgpt_lite.settings.endpoint import OPENAI_DEFAULT_BASE_URL
from memgpt_lite.storage.protocol import Storage
from memgpt_lite.tools.builtin import BUILTIN_TOOLS
from memgpt_lite.tools.sets import ATTACHABLE_TOOLS

AGENT_ID = "agent-0"
# Our built-in tools that Letta has under the same name, with Letta's tool type.
LETTA_TOOL_TYPES = {
    "send_message": "letta_core",
    "conversation_search": "letta_core",
    "archival_memory_insert": "letta_core",
    "archival_memory_search": "letta_core",
    "core_memory_append": "letta_memory_core",
    "core_memory_replace": "letta_memory_core",
    "send_message_to_agent_and_wait_for_reply": "letta_multi_agent_core",
    "send_message_to_agents_matching_tags": "letta_multi_agent_core",
    "send_message_to_all_agents_in_group": "letta_multi_agent_core",
}
SUMMARY_ALERT = (
    "Note: prior messages ({evicted} of {total} total messages) have been hidden from view "
    "due to conversation memory constraints.\n"
    "The following is a summary of the previous {evicted} messages:\n{summary}"
)
# Our system notes, as `letta_messages._marker` writes them for Letta's markers.
HEARTBEAT = re.compile(r"^Heartbeat: (?P<reason>.*)$", re.DOTALL)
LOGIN = re.compile(r"^The user logged in \(last login: (?P<last>.*)\)\.$", re.DOTALL)
ALERT = re.compile(r"^System alert: (?P<message>.*)$", re.DOTALL)


def export_letta(store: Storage, name: str) -> dict[str, Any]:
    """Agent `name` as a Letta agent file (a JSON object)."""
    from memgpt_lite.agentfile.native import export_agent  # native imports letta.py

    return agent_file_to_letta(export_agent(store, name))


def write_letta_file(
    store: Storage, name: str, path: str | Path, *, overwrite: bool = False
) -> dict[str, Any]:
    """Export agent `name` to `path` in Letta's format. The file appears whole or not at all."""
    path = Path(path).expanduser()
    if path.exists() and not overwrite:
        raise AlreadyExistsError(f"{path} already exists; choose another file or replace it")
    data = export_letta(store, name)
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}.partial")
    try:
        partial.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
        os.replace(partial, path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
    return data


def agent_file_to_letta(data: AgentFile) -> dict[str, Any]:
    """Our `AgentFile` in Letta's current agent file layout."""
    blocks = [_block(f"block-{i}", block.model_dump()) for i, block in enumerate(data.blocks)]
    names = [n for n in LETTA_TOOL_TYPES if n in BUILTIN_TOOLS]
    names += [n for n in data.tool_names if n not in names]
    asking = {r.tool_name for r in data.settings.tool_rules if r.type == "requires_approval"}
    carried = {tool.name: tool for tool in data.tools}
    tools = [
        _tool(f"tool-{i}", name, name in asking, carried.get(name)) for i, name in enumerate(names)
    ]
    messages, in_context = _history(data)
    agent = {
        **_agent_settings(data),
        "id": AGENT_ID,
        "tool_ids": [t["id"] for t in tools],
        "block_ids": [b["id"] for b in blocks],
        "in_context_message_ids": in_context,
        "messages": messages,
        "files_agents": [],
        "group_ids": [],
        # Not in Letta's format (Letta ignores it): read back by our importer.
        "passages": [
            {"text": p.text, "tags": p.tags, "created_at": _iso(p.created_at)}
            for p in data.passages
        ],
    }
    return {
        "agents": [agent],
        "groups": [],
        "blocks": blocks,
        "files": [],
        "sources": [],
        "tools": tools,
        "mcp_servers": [],
        "skills": [],
        "metadata": {"exported_by": "memgpt_lite"},
        "created_at": _iso(utcnow()),
    }


def _iso(when: datetime) -> str:
    return when.isoformat()


def _agent_settings(data: AgentFile) -> dict[str, Any]:
    """The agent's own fields, as Letta's `CreateAgent` names them."""
    window = data.settings.context_window or window_for_model(data.llm.model)
    llm: dict[str, Any] = {
        "model": data.llm.model,
        "display_name": None,
        "model_endpoint_type": "openai",
        "model_endpoint": data.llm.base_url or OPENAI_DEFAULT_BASE_URL,
        "provider_name": "openai",
        "provider_category": "base",
        "model_wrapper": None,
        "context_window": window,
        "put_inner_thoughts_in_kwargs": False,
        "handle": f"openai/{data.llm.model}",
    }
    if data.llm.temperature is not None:  # else Letta's default
        llm["temperature"] = data.llm.temperature
    return {
        "name": data.name,
        "memory_blocks": [],
        "tools": [],
        "source_ids": [],
        # Ours have Letta's fields and type names; prompt_template is Letta's only other one.
        "tool_rules": [
            {**rule.model_dump(mode="json"), "prompt_template": None}
            for rule in data.settings.tool_rules
        ],
        "tags": data.settings.tags,
        "system": data.system,
        "agent_type": "memgpt_agent",
        "initial_message_sequence": None,
        "include_base_tools": False,
        "include_multi_agent_tools": False,
        "include_base_tool_rules": False,
        "include_default_source": False,
        "description": None,
        "metadata": None,
        "llm_config": llm,
        "embedding_config": None,
        "message_buffer_autoclear": False,
        "enable_sleeptime": False,
        "timezone": "UTC",
    }


def _block(block_id: str, block: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": block["value"],
        "limit": block["limit"],
        "project_id": None,
        "template_name": None,
        "is_template": False,
        "template_id": None,
        "base_template_id": None,
        "deployment_id": None,
        "entity_id": None,
        "preserve_on_migration": False,
        "label": block["label"],
        "read_only": block["read_only"],
        "description": block["description"] or None,
        "metadata": {},
        "hidden": None,
        "id": block_id,
    }


def _tool(tool_id: str, name: str, asks_approval: bool, carried: FileTool | None) -> dict[str, Any]:
    builtin = BUILTIN_TOOLS.get(name) or ATTACHABLE_TOOLS.get(name)
    if builtin is not None and name in LETTA_TOOL_TYPES:
        kind = LETTA_TOOL_TYPES[name]
        schema = dict(builtin.schema()["function"])
    elif carried is not None:
        return _carried_tool(tool_id, carried, asks_approval)
    else:  # given in code or from a module: its name only, the file cannot carry its code
        kind = "custom"
        schema = {"name": name, "parameters": {"type": "object", "properties": {}}}
    return {
        "id": tool_id,
        "tool_type": kind,
        "description": schema.get("description"),
        "source_type": "python",
        "name": name,
        "tags": [kind],
        "source_code": None,
        "json_schema": schema,
        "args_json_schema": None,
        "return_char_limit": 50000,
        "pip_requirements": None,
        "npm_requirements": None,
        "default_requires_approval": True if asks_approval else None,
        "enable_parallel_execution": False,
        "metadata_": {},
    }


def _carried_tool(tool_id: str, tool: FileTool, asks_approval: bool) -> dict[str, Any]:
    """A registered tool as Letta writes one: a custom tool with its source,
    or an MCP server's tool with the server's name (where `letta_extras`
    reads it back)."""
    schema = {
        "name": tool.name,
        "description": tool.description or tool.json_schema.get("description"),
        "parameters": tool.json_schema.get("parameters") or {"type": "object", "properties": {}},
    }
    mcp = tool.kind == "mcp"
    return {
        "id": tool_id,
        "tool_type": "external_mcp" if mcp else "custom",
        "description": schema["description"],
        "source_type": "python",
        "name": tool.name,
        "tags": [f"mcp:{tool.mcp_server}"] if mcp else [],
        "source_code": None if mcp else tool.source_code,
        "json_schema": schema,
        "args_json_schema": None,
        "return_char_limit": 50000,
        "pip_requirements": [_pip_requirement(r) for r in tool.requirements] or None,
        "npm_requirements": None,
        "default_requires_approval": True if asks_approval else None,
        "enable_parallel_execution": False,
        "metadata_": {"mcp": {"server_name": tool.mcp_server}} if mcp else {},
    }


# Letta's PipRequirement holds a name and an exact version; any other
# specifier stays in the name, which pip and our import read back whole.
_PINNED = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s,;=<>!~]+)$")


def _pip_requirement(requirement: str) -> dict[str, str | None]:
    pinned = _PINNED.match(requirement.strip())
    if pinned is None:
        return {"name": requirement, "version": None}
    return {"name": pinned["name"], "version": pinned["version"]}


# Messages


def _history(data: AgentFile) -> tuple[list[dict[str, Any]], list[str]]:
    """Letta's messages and `in_context_message_ids`: the system prompt first,
    then the history, with our summary as Letta's alert before the window."""
    first = data.messages[0].created_at if data.messages else data.created_at
    out = [_message("message-0", "system", _text(data.system), first)]
    in_context = ["message-0"]
    start = data.context_start
    for index, message in enumerate(data.messages):
        if index == start and data.summary:
            in_context.append(_summary(out, data, message.created_at))
        message_id = f"message-{len(out)}"
        out.append(_letta_message(message_id, message, data.llm.model))
        if index == len(data.messages) - 1 and message.tool_calls:
            _as_approval_request(out[-1])
        if index >= start:
            in_context.append(message_id)
    if start >= len(data.messages) and data.summary:
        in_context.append(
            _summary(out, data, data.messages[-1].created_at if data.messages else first)
        )
    return out, in_context


def _summary(out: list[dict[str, Any]], data: AgentFile, when: datetime) -> str:
    evicted = data.context_start
    text = SUMMARY_ALERT.format(evicted=evicted, total=len(data.messages), summary=data.summary)
    message_id = f"message-{len(out)}"
    out.append(
        _message(message_id, "user", _text(_packed("system_alert", when, message=text)), when)
    )
    return message_id


def _text(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def _letta_time(when: datetime) -> str:
    return when.strftime("%Y-%m-%d %I:%M:%S %p UTC%z")


def _packed(kind: str, when: datetime, **fields: str) -> str:
    return json.dumps({"type": kind, **fields, "time": _letta_time(when)}, indent=2)


def _note(content: str, when: datetime) -> str:
    """Our system note, as the Letta marker it came from (or a system alert)."""
    if match := HEARTBEAT.match(content):
        return _packed("heartbeat", when, reason=match["reason"])
    if match := LOGIN.match(content):
        return _packed("login", when, last_login=match["last"])
    match = ALERT.match(content)
    return _packed("system_alert", when, message=match["message"] if match else content)


def _message(
    message_id: str, role: str, content: list[dict[str, Any]], when: datetime, **fields: Any
) -> dict[str, Any]:
    return {
        "type": "message",
        "role": role,
        "content": content,
        "name": fields.get("name"),
        "otid": None,
        "sender_id": None,
        "batch_item_id": None,
        "group_id": None,
        "id": message_id,
        "model": fields.get("model"),
        "agent_id": AGENT_ID,
        "tool_calls": fields.get("tool_calls"),
        "tool_call_id": fields.get("tool_call_id"),
        "tool_returns": fields.get("tool_returns", []),
        "created_at": _iso(when),
        "approve": None,
        "approval_request_id": None,
        "denial_reason": None,
        "approvals": [],
    }


def _letta_message(message_id: str, message: FileMessage, model: str) -> dict[str, Any]:
    when, content = message.created_at, message.content or ""
    if message.role == "user":
        return _message(
            message_id, "user", _text(_packed("user_message", when, message=content)), when
        )
    if message.role == "system":
        return _message(message_id, "user", _text(_note(content, when)), when)
    if message.role == "tool":
        status = "error" if content.startswith("Error") else "success"
        returns = [
            {
                "tool_call_id": message.tool_call_id,
                "status": status,
                "stdout": None,
                "stderr": None,
                "func_response": content,
            }
        ]
        return _message(
            message_id,
            "tool",
            _text(content),
            when,
            name=message.name,
            model=model,
            tool_call_id=message.tool_call_id,
            tool_returns=returns,
        )
    calls = [call.to_openai() for call in message.tool_calls]
    return _message(
        message_id,
        "assistant",
        _text(content) if content else [],
        when,
        model=model,
        tool_calls=calls or None,
    )


def _as_approval_request(message: dict[str, Any]) -> None:
    """An answer that waits for approval (the last message, its calls with no
    results: loop/approvals.py), as Letta writes an approval request: role
    `approval`, with the first call's id as its `tool_call_id`."""
    message["role"] = "approval"
    message["tool_call_id"] = message["tool_calls"][0]["id"]
