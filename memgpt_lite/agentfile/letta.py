"""Letta agent files (`.af`), converted to our `AgentFile` so a Letta user can
bring their agents over.

Two layouts are read. The current one holds `agents`, with `blocks` and `tools`
at the top level, referenced by each agent's `block_ids` and `tool_ids`, and
the context window as `in_context_message_ids`. The older one is a single
agent at the top level with `core_memory`, `tools` and
`in_context_message_indices`. Fields we do not use are ignored; what we need is
checked.

How things map:

- Messages: see `letta_messages.py` (order, markers, reasoning, approvals).
  A call with no result gets an error result (in `history.pair_tool_calls`),
  so the window never holds an unanswered `tool_call_id`; but for an
  approval request that is the history's last answer: it waits for the
  user's approval here (loop/approvals.py).
- The window starts at the first message Letta had in context.
- Letta's own tools (send_message, core memory, recall and archival tools,
  and any tool of a `letta_*` type) are left to our built-ins; other tools
  are kept as custom tool names, with their Python source where the file
  has it (or, for an MCP tool, its server's name): an import registers
  those, not trusted until the user says so (`letta_extras.file_tools`).
- Tool rules of the kinds we enforce come over; tools that require
  approval (a `requires_approval` rule, or the tool's own flag) get a
  `requires_approval` rule (`letta_extras.imported_rules`).
- A file with several agents gives its main one unless one is picked; what
  the agent has that is not imported (other tool rules, MCP, files, groups,
  ...) is named in the notes (`letta_extras.py`). A name invalid here gets `-` for
  what is not valid (`Deep Thought` -> `Deep-Thought`).
- Tool environment variables (secrets) are never read. Passages are imported
  if the file carries them (`passages`); Letta exports usually do not.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from memgpt_lite.agentfile.letta_extras import (
    file_tools,
    imported_rules,
    left_out,
    main_agent,
    shared_blocks,
    tool_set_of,
)
from memgpt_lite.agentfile.letta_messages import LettaMessage, ListOrNull, convert_history
from memgpt_lite.agentfile.schema import (
    AgentFile,
    AgentFileError,
    FileBlock,
    FilePassage,
    validation_problems,
)
from memgpt_lite.memory.core.blocks import load_prompt
from memgpt_lite.models import (
    AGENT_NAME_PATTERN,
    DEFAULT_BLOCK_LIMIT,
    MAX_TAG_LENGTH,
    AgentSettings,
    LLMConfig,
    utcnow,
)
from memgpt_lite.settings.endpoint import OPENAI_DEFAULT_BASE_URL
from memgpt_lite.tools.schema import TOOL_NAME_PATTERN
from memgpt_lite.tools.sets import ATTACHABLE_TOOLS, TOOL_SETS

# Letta's base tools: ours do the same jobs, under MemGPT's names where they match.
LETTA_BASE_TOOLS = frozenset(
    {
        "send_message",
        "conversation_search",
        "conversation_search_date",
        "archival_memory_insert",
        "archival_memory_search",
        "core_memory_append",
        "core_memory_replace",
        "memory",
        "memory_insert",
        "memory_replace",
        "memory_rethink",
        "memory_finish_edits",
        "rethink_memory",
        "finish_rethinking_memory",
        "send_message_to_agent_and_wait_for_reply",
        "send_message_to_agent_async",
        "send_message_to_agents_matching_tags",
        "web_search",
        "run_code",
        "fetch_webpage",
        "open_files",
        "grep_files",
        "semantic_search_files",
    }
)
# Endpoint types whose `model_endpoint` speaks the chat completions API.
OPENAI_COMPATIBLE = frozenset(
    {"openai", "ollama", "vllm", "lmstudio-openai", "groq", "together", "deepseek", "xai"}
)


class LettaBlock(BaseModel):
    id: str | None = None
    label: str
    value: str = ""
    limit: int | None = None
    description: str | None = None
    read_only: bool | None = False


class LettaLLMConfig(BaseModel):
    model: str = Field(min_length=1)
    model_endpoint_type: str | None = None
    model_endpoint: str | None = None
    context_window: int | None = None
    temperature: float | None = None


class LettaTool(BaseModel):
    id: str | None = None
    name: str
    tool_type: str | None = None


class LettaPassage(BaseModel):
    text: str
    tags: ListOrNull[str] = Field(default_factory=list)
    created_at: datetime | None = None


class LettaAgent(BaseModel):
    id: str | None = None
    name: str
    system: str | None = None
    llm_config: LettaLLMConfig
    created_at: datetime | None = None
    core_memory: ListOrNull[LettaBlock] = Field(default_factory=list)
    memory_blocks: ListOrNull[LettaBlock] = Field(default_factory=list)
    block_ids: ListOrNull[str] = Field(default_factory=list)
    tools: ListOrNull[LettaTool | str] = Field(default_factory=list)
    tool_ids: ListOrNull[str] = Field(default_factory=list)
    messages: ListOrNull[LettaMessage] = Field(default_factory=list)
    in_context_message_ids: list[str] | None = None
    message_ids: list[str] | None = None
    in_context_message_indices: list[int] | None = None
    passages: ListOrNull[LettaPassage] = Field(default_factory=list)
    tags: ListOrNull[str] = Field(default_factory=list)


class LettaFile(BaseModel):
    agents: list[LettaAgent] = Field(min_length=1)
    blocks: ListOrNull[LettaBlock] = Field(default_factory=list)
    tools: ListOrNull[LettaTool] = Field(default_factory=list)


def is_letta_file(raw: dict[str, Any]) -> bool:
    if isinstance(raw.get("agents"), list):
        return True
    return "llm_config" in raw and ("core_memory" in raw or "messages" in raw)


def _letta_file(raw: dict[str, Any], source: str) -> tuple[dict[str, Any], LettaFile]:
    if "agents" not in raw:  # the older layout: one agent at the top level
        raw = {"agents": [raw]}
    try:
        return raw, LettaFile.model_validate(raw)
    except ValidationError as exc:
        raise AgentFileError(
            f"{source} is not a valid Letta agent file: {validation_problems(exc)}"
        ) from None


def letta_to_agent_file(
    raw: dict[str, Any], source: str, pick: str | None = None
) -> tuple[AgentFile, list[str]]:
    """Our `AgentFile` for one agent of a Letta file, and notes on what changed."""
    raw, letta = _letta_file(raw, source)
    notes: Counter[str] = Counter()
    index = _pick_agent(raw, letta, source, pick, notes)
    for note in shared_blocks(raw, index):
        notes[note] += 1
    return _converted(raw, letta, index, source, notes)


def letta_to_agent_files(raw: dict[str, Any], source: str) -> list[tuple[AgentFile, list[str]]]:
    """Every agent of a Letta file, with its notes; the blocks they share
    have the same `FileBlock.key`, so that they stay shared when stored together."""
    raw, letta = _letta_file(raw, source)
    return [_converted(raw, letta, i, source, Counter()) for i in range(len(letta.agents))]


def _converted(
    raw: dict[str, Any], letta: LettaFile, index: int, source: str, notes: Counter[str]
) -> tuple[AgentFile, list[str]]:
    agent = letta.agents[index]
    rules, rule_notes = imported_rules(raw, index)
    tool_set, set_notes = tool_set_of(raw, index)
    for note in [*rule_notes, *set_notes, *left_out(raw, index)]:
        notes[note] += 1
    llm, context_window = _llm_config(agent.llm_config, notes)
    history = convert_history(agent.messages, _in_context(agent), notes)
    tool_names = _custom_tools(letta, agent, notes, tool_set)
    tools, tool_notes = file_tools(raw, index, tool_names)
    for note in tool_notes:
        notes[note] += 1
    system = agent.system or ""
    if not system.strip():
        system = load_prompt("system")
        notes["the agent had no system prompt; it got memgpt_lite's"] += 1
    try:
        converted = AgentFile(
            name=_agent_name(agent.name, notes),
            created_at=agent.created_at or utcnow(),
            system=system,
            llm=llm,
            settings=AgentSettings(
                context_window=context_window,
                tool_rules=rules,
                tool_set=tool_set,
                tags=_tags(agent.tags, notes),
            ),
            tool_names=tool_names,
            tools=tools,
            blocks=_blocks(letta, agent, notes),
            messages=history.messages,
            context_start=history.start,
            summary=history.summary,
            passages=[
                FilePassage(text=p.text, tags=p.tags, created_at=p.created_at or utcnow())
                for p in agent.passages
                if p.text.strip()
            ],
        )
    except ValidationError as exc:
        raise AgentFileError(
            f"{source}: cannot convert Letta agent {agent.name!r}: {validation_problems(exc)}"
        ) from None
    return converted, [note if n == 1 else f"{note} (x{n})" for note, n in notes.items()]


def _agent_name(name: str, notes: Counter[str]) -> str:
    """Letta's name, or the nearest valid one here: `Deep Thought` becomes `Deep-Thought`."""
    if AGENT_NAME_PATTERN.fullmatch(name):
        return name
    fixed = re.sub(r"[^A-Za-z0-9_.-]+", "-", name.strip()).strip("-_.")[:64]
    if not AGENT_NAME_PATTERN.fullmatch(fixed):
        return name  # refused on import, with a hint to choose one with --name
    notes[f"the agent name {name!r} is not valid here; it was imported as {fixed!r}"] += 1
    return fixed


def _pick_agent(
    raw: dict[str, Any], letta: LettaFile, source: str, pick: str | None, notes: Counter[str]
) -> int:
    """The index of agent `pick`, or of the file's main agent."""
    names = [a.name for a in letta.agents]
    if pick is not None:
        if pick in names:
            return names.index(pick)
        raise AgentFileError(f"{source} holds no agent named {pick!r}; it holds: {names}")
    if len(names) == 1:
        return 0
    index = main_agent(raw["agents"], raw.get("groups") or [])
    notes[
        f"the file holds {len(names)} agents ({', '.join(names)}); imported {names[index]!r}, "
        "its main agent (pick another with --agent)"
    ] += 1
    return index


def _llm_config(config: LettaLLMConfig, notes: Counter[str]) -> tuple[LLMConfig, int | None]:
    kind = (config.model_endpoint_type or "openai").lower()
    endpoint = (config.model_endpoint or "").rstrip("/")
    base_url = None
    if kind not in OPENAI_COMPATIBLE:
        notes[
            f"the model endpoint {endpoint or kind!r} ({kind}) does not speak the OpenAI API; "
            "the agent will use OPENAI_BASE_URL until you set its base_url"
        ] += 1
    elif endpoint and endpoint != OPENAI_DEFAULT_BASE_URL:  # the default stays overridable
        base_url = (
            f"{endpoint}/v1" if kind == "ollama" and not endpoint.endswith("/v1") else endpoint
        )
    window = config.context_window if config.context_window and config.context_window > 0 else None
    return LLMConfig(model=config.model, base_url=base_url, temperature=config.temperature), window


def _blocks(letta: LettaFile, agent: LettaAgent, notes: Counter[str]) -> list[FileBlock]:
    by_id = {b.id: b for b in letta.blocks if b.id}
    found = [*agent.core_memory, *agent.memory_blocks]
    for block_id in agent.block_ids:
        if block_id in by_id:
            found.append(by_id[block_id])
        else:
            notes[f"block {block_id!r} is not in the file; left out"] += 1
    blocks: list[FileBlock] = []
    for block in found:
        if block.label in {b.label for b in blocks}:
            notes[f"a second block labelled {block.label!r} was left out"] += 1
            continue
        limit = block.limit or DEFAULT_BLOCK_LIMIT
        if len(block.value) > limit:
            notes[f"block {block.label!r} was over its limit; the limit was raised to fit"] += 1
            limit = len(block.value)
        blocks.append(
            FileBlock(
                label=block.label,
                value=block.value,
                limit=limit,
                description=block.description or "",
                read_only=bool(block.read_only),
                key=block.id or None,
            )
        )
    return blocks


def _custom_tools(
    letta: LettaFile, agent: LettaAgent, notes: Counter[str], tool_set: str
) -> list[str]:
    by_id = {t.id: t for t in letta.tools if t.id}
    tools = [by_id[i] for i in agent.tool_ids if i in by_id]
    tools += [t if isinstance(t, LettaTool) else LettaTool(name=t) for t in agent.tools]
    names: list[str] = []
    for tool in tools:
        ours = TOOL_SETS[tool_set]
        own = (tool.tool_type or "").startswith("letta_") or tool.name in LETTA_BASE_TOOLS
        if tool.name in ATTACHABLE_TOOLS:  # ours too, attached by name (the multi-agent tools)
            if tool.name not in names:
                names.append(tool.name)
        elif own or tool.name in ours:
            if tool.name not in ours:
                notes[f"Letta's tool {tool.name!r} has no equivalent here; left out"] += 1
        elif not TOOL_NAME_PATTERN.match(tool.name):
            notes[f"tool name {tool.name!r} is not valid here; left out"] += 1
        elif tool.name not in names:
            names.append(tool.name)
    return names


def _tags(tags: list[str], notes: Counter[str]) -> list[str]:
    """The agent's tags that are tags here (not blank, at most
    MAX_TAG_LENGTH characters); a note for the others."""
    kept = [tag for tag in tags if tag.strip() and len(tag.strip()) <= MAX_TAG_LENGTH]
    if len(kept) < len(tags):
        notes[f"tags blank or over {MAX_TAG_LENGTH} characters: left out"] += 1
    return kept


# Messages


def _in_context(agent: LettaAgent) -> set[int] | None:
    """Positions in `agent.messages` that Letta had in context; None: all of them."""
    ids = agent.in_context_message_ids
    if ids is None:
        ids = agent.message_ids
    if ids is not None:
        wanted = set(ids)
        return {i for i, m in enumerate(agent.messages) if m.id in wanted}
    if agent.in_context_message_indices is not None:
        return set(agent.in_context_message_indices)
    return None
