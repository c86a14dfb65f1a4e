"""What a Letta agent file holds that an import does not carry over, named in
the import's notes (one line per kind), which agent of a file with several
is its main one, and its custom tools with their code (`file_tools`). Read
from the file's JSON as it is (see `letta.py`), so that nothing Letta adds
is validated for a feature we leave out."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from memgpt_lite.agentfile.schema import FileTool
from memgpt_lite.tool_rules import ToolRule
from memgpt_lite.tools.letta_memory import LETTA_MEMORY_TOOLS
from memgpt_lite.tools.rules import LETTA_RULE_KINDS, rules_from_letta
from memgpt_lite.tools.schema import HEARTBEAT_PARAM
from memgpt_lite.tools.source.requirements import RequirementError, parse_requirement

# Letta's agent types that only serve another agent (its sleep-time memory editor).
HELPER_AGENT_TYPES = frozenset({"sleeptime_agent", "voice_sleeptime_agent"})


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _names(items: Iterable[Any], shown: int = 5) -> str:
    names = list(dict.fromkeys(str(item) for item in items if item))
    more = f", and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def main_agent(agents: list[dict[str, Any]], groups: list[dict[str, Any]]) -> int:
    """The index of the file's main agent: a group's manager, else the first that
    is not a sleep-time helper, else the first."""
    managers = {g.get("manager_agent_id") for g in _dicts(groups)} - {None}
    for index, agent in enumerate(agents):
        if agent.get("id") in managers:
            return index
    for index, agent in enumerate(agents):
        if agent.get("agent_type") not in HELPER_AGENT_TYPES:
            return index
    return 0


def left_out(raw: dict[str, Any], index: int) -> list[str]:
    """Notes naming what agent `index` of `raw` (the current layout) has that is
    not imported, one per kind."""
    agent = _dicts(raw.get("agents"))[index]
    notes: list[str] = []
    tools = _agent_tools(raw, agent)
    if agent.get("message_buffer_autoclear") is True:
        notes.append(
            "message_buffer_autoclear: not supported; the agent keeps its history in context"
        )
    sleeptime = [g for g in _dicts(raw.get("groups")) if "sleeptime" in str(g.get("manager_type"))]
    if agent.get("enable_sleeptime") or sleeptime or agent.get("multi_agent_group"):
        notes.append("sleep-time and other agent groups: not supported; only this agent came over")
    mcp_tools = [t.get("name") for t in tools if t.get("tool_type") == "external_mcp"]
    servers = _dicts(raw.get("mcp_servers"))
    if servers:
        names = _names(s.get("server_name") or s.get("name") for s in servers)
        notes.append(f"MCP servers ({len(servers)}: {names}): not connected here")
    if mcp_tools:
        notes.append(
            f"MCP tools ({len(mcp_tools)}: {_names(mcp_tools)}): registered with their "
            "server's name; a call of one is an error until that MCP server is set up here"
        )
    files = _dicts(raw.get("files")) or _dicts(agent.get("files_agents"))
    folders = _dicts(raw.get("sources")) or agent.get("source_ids") or []
    if files or folders:
        notes.append(
            f"files ({len(files)}) and folders ({len(folders)}): not imported; "
            "Letta's file tools are left out"
        )
    skills = _dicts(raw.get("skills"))
    if skills:
        notes.append(f"skills ({len(skills)}: {_names(s.get('name') for s in skills)}): left out")
    return notes


def shared_blocks(raw: dict[str, Any], index: int) -> list[str]:
    """Notes on the blocks agent `index` shares with the file's other agents."""
    agents = _dicts(raw.get("agents"))
    mine = set(agents[index].get("block_ids") or [])
    others = {b for i, a in enumerate(agents) if i != index for b in a.get("block_ids") or []}
    shared = mine & others
    if not shared:
        return []
    labels = [b.get("label") for b in _dicts(raw.get("blocks")) if b.get("id") in shared]
    return [
        f"blocks shared with the file's other agents ({_names(labels)}): this agent gets its own "
        "copy, since one agent is imported at a time"
    ]


def _agent_tools(raw: dict[str, Any], agent: dict[str, Any]) -> list[dict[str, Any]]:
    by_id = {t.get("id"): t for t in _dicts(raw.get("tools")) if t.get("id")}
    tools = [by_id[i] for i in agent.get("tool_ids") or [] if i in by_id]
    return tools + _dicts(agent.get("tools"))


def _asking(raw: dict[str, Any], agent: dict[str, Any]) -> list[str]:
    """The tools of `agent` that Letta marks as requiring approval (the tool's
    own flag; the rules of that kind are read with the other rules)."""
    names = [
        t.get("name")
        for t in _agent_tools(raw, agent)
        if t.get("default_requires_approval") is True or t.get("requires_approval") is True
    ]
    return list(dict.fromkeys(str(name) for name in names if name))


def imported_rules(raw: dict[str, Any], index: int) -> tuple[list[ToolRule], list[str]]:
    """Agent `index`'s tool rules that we enforce, and notes: how many were
    imported, and one for each kind left out. A tool Letta marks as requiring
    approval gets a `requires_approval` rule, as Letta's rule of that kind does;
    those are named on a line of their own, with the tools."""
    agent = _dicts(raw.get("agents"))[index]
    raw_rules = _dicts(agent.get("tool_rules"))
    ruled = {r.get("tool_name") for r in raw_rules if r.get("type") == "requires_approval"}
    flagged = [
        {"type": "requires_approval", "tool_name": name}
        for name in _asking(raw, agent)
        if name not in ruled
    ]
    own, problems = rules_from_letta(raw_rules)
    approval_rules, approval_problems = rules_from_letta(flagged)
    rules = own + approval_rules
    notes = []
    others = [rule for rule in rules if rule.type != "requires_approval"]
    if others:
        kinds = _names(dict.fromkeys(rule.type for rule in others))
        notes.append(f"tool rules ({len(others)}: {kinds}): imported, enforced by the loop")
    asking = list(dict.fromkeys(r.tool_name for r in rules if r.type == "requires_approval"))
    if asking:
        notes.append(
            f"tools that require approval ({len(asking)}: {_names(asking)}): imported; "
            "each call of them waits for the user's approval"
        )
    notes += approval_problems
    left = Counter(str(r.get("type")) for r in raw_rules) - Counter(r.type for r in own)
    notes += [_left_out(kind, n, problems) for kind, n in left.items()]
    return rules, notes


def _left_out(kind: str, count: int, problems: list[str]) -> str:
    """The note for the `count` rules of `kind` not imported: a kind we do
    not enforce, or rules of one we do that are not valid (the first
    problem said)."""
    if kind not in LETTA_RULE_KINDS:
        return f"tool rules of kind {kind!r} ({count}): not supported here; left out"
    first = next((p for p in problems if p.startswith(f"tool rule {kind!r}")), "")
    why = first.removesuffix("; left out")
    return f"tool rules of kind {kind!r} ({count}): not valid ({why}); left out"


def tool_set_of(raw: dict[str, Any], index: int) -> tuple[str, list[str]]:
    """Our memory tool set for agent `index`: Letta's V1 memory tools become
    the letta-v1 set (with a note), anything else the classic one."""
    names = {t.get("name") for t in _agent_tools(raw, _dicts(raw.get("agents"))[index])}
    v1 = sorted(str(name) for name in names & set(LETTA_MEMORY_TOOLS) if name)
    if not v1:
        return "memgpt", []
    return "letta-v1", [f"Letta's memory tools ({', '.join(v1)}): the letta-v1 tool set"]


# Custom tools with their code


def file_tools(
    raw: dict[str, Any], index: int, names: Sequence[str]
) -> tuple[list[FileTool], list[str]]:
    """The tools of agent `index` among `names` (its custom tools) that the
    file carries with their Python source, or, for an MCP tool, its server's
    name; and a note on those that take Letta's `agent_state`, which stay
    names only (nothing here gives it, so they could never run)."""
    agent = _dicts(raw.get("agents"))[index]
    found: dict[str, FileTool] = {}
    letta_only: list[str] = []
    for tool in _agent_tools(raw, agent):
        name = tool.get("name")
        if name not in names or name in found or name in letta_only:
            continue
        made = _file_tool(tool)
        if made is not None and takes_agent_state(made):
            letta_only.append(str(name))
        elif made is not None:
            found[str(name)] = made
    notes = []
    if letta_only:
        notes.append(
            f"tools that take Letta's agent_state ({len(letta_only)}: {_names(letta_only)}): "
            "kept by name only, since nothing gives it here; give Agent.load an "
            "implementation, or the model will not see them"
        )
    return list(found.values()), notes


def _file_tool(tool: dict[str, Any]) -> FileTool | None:
    name, description = str(tool.get("name")), str(tool.get("description") or "")
    schema = _schema(tool, name, description)
    if tool.get("tool_type") == "external_mcp":
        server = _mcp_server(tool)
        if server is None:
            return None
        return FileTool(
            name=name, description=description, json_schema=schema, kind="mcp", mcp_server=server
        )
    source = tool.get("source_code")
    if not isinstance(source, str) or not source.strip():
        return None
    if tool.get("source_type") not in (None, "python"):
        return None
    return FileTool(
        name=name,
        description=description,
        json_schema=schema,
        source_code=source,
        requirements=_requirements(tool.get("pip_requirements")),
    )


def _schema(tool: dict[str, Any], name: str, description: str) -> dict[str, Any]:
    """Letta's JSON schema of the tool, as ours: its parameters without
    `request_heartbeat` (added when the tool is offered)."""
    given = tool.get("json_schema") if isinstance(tool.get("json_schema"), dict) else {}
    parameters = given.get("parameters") if isinstance(given.get("parameters"), dict) else {}
    parameters = {"type": "object", **parameters}
    properties = parameters.get("properties")
    if isinstance(properties, dict):
        parameters["properties"] = {k: v for k, v in properties.items() if k != HEARTBEAT_PARAM}
    required = parameters.get("required")
    if isinstance(required, list):
        parameters["required"] = [r for r in required if r != HEARTBEAT_PARAM]
    schema: dict[str, Any] = {"name": name, "parameters": parameters}
    if description:
        schema["description"] = description
    return schema


def _mcp_server(tool: dict[str, Any]) -> str | None:
    metadata = tool.get("metadata_") if isinstance(tool.get("metadata_"), dict) else {}
    mcp = metadata.get("mcp") if isinstance(metadata.get("mcp"), dict) else {}
    if isinstance(mcp.get("server_name"), str) and mcp["server_name"]:
        return mcp["server_name"]
    tags = [t for t in tool.get("tags") or [] if isinstance(t, str) and t.startswith("mcp:")]
    return (tags[0].removeprefix("mcp:") or None) if tags else None


def _requirements(given: Any) -> list[str]:
    """Letta's `pip_requirements` ({"name", "version"}) as requirement
    strings; one that is not valid is left out (the call would refuse it)."""
    found = []
    for item in given if isinstance(given, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        text = item["name"] + (f"=={item['version']}" if item.get("version") else "")
        try:
            parse_requirement(text)
        except RequirementError:
            continue
        found.append(text)
    return found


def takes_agent_state(tool: FileTool) -> bool:
    """Whether the tool's function takes Letta's `agent_state`, which Letta
    gives its tools and memgpt_lite does not (read without running it)."""
    try:
        tree = ast.parse(tool.source_code or "")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name == tool.name
        and any(arg.arg == "agent_state" for arg in [*node.args.args, *node.args.kwonlyargs])
        for node in tree.body
    )
