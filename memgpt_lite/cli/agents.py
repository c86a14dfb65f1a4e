"""Managing agents from the shell: create, agents, show, rename, delete, blocks,
and config (the defaults new agents get, and where each comes from).

What the commands run is imported inside them, so that `--help` stays fast
(see `base.py`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import click

from memgpt_lite.cli.base import (
    TextOrFile,
    confirm_or_stop,
    db_location,
    print_rows,
    workspace_for,
)
from memgpt_lite.cli.block_options import build_blocks, read_text_arg
from memgpt_lite.errors import ConfigError
from memgpt_lite.settings.resolve import ENV_VARS, configured_base_url, effective_config

if TYPE_CHECKING:
    from memgpt_lite.agent.workspace import Workspace
    from memgpt_lite.models import AgentState, AgentStats, Block
    from memgpt_lite.settings.effective import EffectiveConfig
    from memgpt_lite.tool_rules import RequiresApprovalToolRule

# Shown for a setting that has no value anywhere; base_url's is the default
# endpoint, added where it is shown (its module loads openai).
UNSET_MEANING = {
    "model": "(none: pass --model)",
    "embedder": "(none: word search only)",
    "context_window": "(from the model's name)",
}


def _when(value: datetime) -> str:
    return value.astimezone().strftime("%Y-%m-%d %H:%M")


def _last_active(state: AgentState, stats: AgentStats) -> datetime:
    return stats.last_active or state.created_at


@click.command()
@click.argument("name")
@click.option("--model", "-m", help="Model, e.g. gpt-4o-mini or llama3.2 (default: see `config`).")
@click.option(
    "--persona",
    type=TextOrFile(),
    help="Persona block: TEXT or @FILE (default: the built-in persona).",
)
@click.option(
    "--human",
    type=TextOrFile(),
    help="Human block: TEXT or @FILE (default: the built-in template).",
)
@click.option(
    "--block",
    "extra_blocks",
    type=TextOrFile(labelled=True),
    multiple=True,
    metavar="LABEL=TEXT",
    help="Another core memory block; TEXT may be @FILE. Repeatable.",
)
@click.option(
    "--block-limit",
    "block_limits",
    multiple=True,
    metavar="LABEL=CHARS",
    help="Character limit of a block (default 5000), persona and human too. Repeatable.",
)
@click.option(
    "--system",
    type=TextOrFile(),
    help="System instructions: TEXT or @FILE (default: prompts/system.md).",
)
@click.option("--base-url", help="OpenAI-compatible endpoint, stored with the agent.")
@click.option("--context-window", type=int, help="Context window of the model, in tokens.")
@click.option(
    "--working-window",
    type=click.IntRange(min=0),
    metavar="TOKENS",
    help="The window the agent works in when the model's is larger "
    "(default 32000; 0: the model's whole window).",
)
@click.option("--embedder", help='Embedder for hybrid search: "local" or "endpoint:MODEL".')
@click.option(
    "--tools",
    "tool_set",
    type=click.Choice(["memgpt", "letta-v1", "anthropic-memory"]),
    default="memgpt",
    show_default=True,
    help="The core memory tools: MemGPT's core_memory_append/replace, Letta's V1 "
    "memory_insert/replace/rethink and memory, or Anthropic's memory tool (/memories files).",
)
@click.option(
    "--multi-agent",
    is_flag=True,
    help="Let the agent message your other agents and wait for their replies "
    "(send_message_to_agent_and_wait_for_reply, send_message_to_agents_matching_tags).",
)
@click.option(
    "--tag",
    "tags",
    multiple=True,
    metavar="TAG",
    help="A tag other agents find this one by (send_message_to_agents_matching_tags). Repeatable.",
)
@click.option(
    "--approve",
    "approval_tools",
    multiple=True,
    metavar="TOOL",
    help="A tool whose calls wait for your approval before they run "
    "(`memgpt-lite approve` or `deny` answers them). Repeatable.",
)
@click.pass_context
def create(
    ctx: click.Context,
    name: str,
    model: str | None,
    persona: str | None,
    human: str | None,
    extra_blocks: tuple[str, ...],
    block_limits: tuple[str, ...],
    system: str | None,
    base_url: str | None,
    context_window: int | None,
    working_window: int | None,
    embedder: str | None,
    tool_set: str,
    multi_agent: bool,
    tags: tuple[str, ...],
    approval_tools: tuple[str, ...],
) -> None:
    """Create an agent called NAME.

    --model, --context-window and --embedder default to $MEMGPT_LITE_MODEL,
    $MEMGPT_LITE_CONTEXT_WINDOW and $MEMGPT_LITE_EMBEDDER, then to config.toml
    (see `memgpt-lite config`). Without --base-url the agent uses
    $OPENAI_BASE_URL, then config.toml's base_url, each time it runs.
    Write @@ for a text that starts with @.

    Example: memgpt-lite create sam -m gpt-4o-mini --persona @sam.md
    --block "project=Deadline: May"
    """
    from memgpt_lite.models import AgentSettings
    from memgpt_lite.settings.endpoint import check_base_url
    from memgpt_lite.tools.multi_agent import MULTI_AGENT_TOOLS

    config = _create_config(model, embedder, context_window)
    chosen_model = str(config.model.value)
    window = config.context_window.value
    if base_url is not None:
        base_url = check_base_url(base_url, "--base-url")
    embedder_name = None if config.embedder.value is None else str(config.embedder.value)
    attached = list(MULTI_AGENT_TOOLS) if multi_agent else []
    workspace_for(ctx).create_agent(
        name,
        chosen_model,
        blocks=build_blocks(name, persona, human, extra_blocks, block_limits),
        system=None if system is None else read_text_arg(system),
        base_url=base_url,
        settings=AgentSettings(
            context_window=window if isinstance(window, int) else None,
            working_window=working_window,
            tool_set=tool_set,
            tool_rules=_approval_rules(tool_set, attached, approval_tools),
            tags=list(tags),
        ),
        embedder=embedder_name,
        tools=attached,
    )
    origin = "" if model else f", model from {config.model.source}"
    click.echo(f"Created agent {name!r} ({chosen_model}{origin}).")


def _create_config(
    model: str | None, embedder: str | None, context_window: int | None
) -> EffectiveConfig:
    """The settings `create` starts the agent with: the flags, else the
    environment, else config.toml; a model is required, an embedder's name
    is checked."""
    from memgpt_lite.embeddings.embedder import check_embedder_name

    flags = {"model": model, "embedder": embedder, "context_window": context_window}
    config = effective_config(flags)
    if config.model.value is None:
        raise ConfigError(
            f'no model: pass --model, set ${ENV_VARS["model"]}, or put model = "..." in '
            f"{config.path}"
        )
    if config.embedder.value is not None:
        check_embedder_name(str(config.embedder.value), config.embedder.source)
    return config


def _approval_rules(
    tool_set: str, attached: Sequence[str], names: Sequence[str]
) -> list[RequiresApprovalToolRule]:
    """The requires_approval rules of `create --approve`, for tools the
    agent has (a rule naming another tool would never apply)."""
    from memgpt_lite.tools.rules import needs_approval
    from memgpt_lite.tools.sets import agent_tools

    tools = agent_tools(tool_set, {}, attached)
    unknown = [name for name in names if name not in tools]
    if unknown:
        raise ConfigError(
            f"--approve {unknown[0]}: the agent has no such tool; its tools: {', '.join(tools)}"
        )
    return [needs_approval(name) for name in dict.fromkeys(names)]


@click.command(name="agents")
@click.pass_context
def list_agents(ctx: click.Context) -> None:
    """List the agents: name, model, messages, archival passages, last active.

    When the output is piped, each agent is one tab-separated line.
    """
    rows = workspace_for(ctx).list_agents()
    if not rows:
        click.echo("No agents yet. Create one with: memgpt-lite create NAME --model MODEL")
        return
    columns = [
        ("name", "left"),
        ("model", "left"),
        ("messages", "right"),
        ("passages", "right"),
        ("last active", "left"),
    ]
    cells = [
        [
            state.name,
            state.llm.model,
            str(stats.message_count),
            str(stats.passage_count),
            _when(_last_active(state, stats)),
        ]
        for state, stats in rows
    ]
    print_rows(columns, cells)


@click.command()
@click.argument("name")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def delete(ctx: click.Context, name: str, yes: bool) -> None:
    """Delete agent NAME with its messages and archival memory. Blocks shared
    with other agents stay with them."""
    workspace = workspace_for(ctx)
    state = workspace.agent_state(name)
    stats = workspace.agent_stats(state.id)
    if not yes:
        confirm_or_stop(
            f"Delete agent {state.name!r}, its {stats.message_count} messages and "
            f"{stats.passage_count} passages? This cannot be undone"
        )
    workspace.delete_agent(state.id)
    click.echo(f"Deleted agent {state.name!r}.")


@click.command()
@click.argument("old")
@click.argument("new")
@click.pass_context
def rename(ctx: click.Context, old: str, new: str) -> None:
    """Rename agent OLD to NEW; its memory and history stay."""
    workspace = workspace_for(ctx)
    workspace.rename_agent(workspace.agent_state(old), new)
    click.echo(f"Renamed agent {old!r} to {new!r}.")


def _endpoint(state: AgentState) -> tuple[str, str]:
    """The URL the agent will call and why (mirrors settings.resolve.resolve_endpoint)."""
    from memgpt_lite.settings.endpoint import OPENAI_DEFAULT_BASE_URL

    if state.llm.base_url:
        return state.llm.base_url, "stored with the agent"
    from_env = os.environ.get(ENV_VARS["base_url"])
    if from_env:
        return from_env, f"${ENV_VARS['base_url']}"
    from_file = configured_base_url()
    if from_file:
        return from_file, "config.toml"
    return OPENAI_DEFAULT_BASE_URL, "default"


def _block_notes(workspace: Workspace, state: AgentState, block: Block) -> str:
    notes = ["read-only"] if block.read_only else []
    others = [n for n in workspace.block_owners(block.id) if n != state.name]
    if others:
        notes.append(f"shared with {', '.join(others)}")
    return ", ".join(notes)


def _window_text(state: AgentState) -> str:
    from memgpt_lite.memory.recall.window import window_for_model, working_window

    settings = state.settings
    model_window = settings.context_window or window_for_model(state.llm.model)
    origin = "" if settings.context_window else " (from the model's name)"
    window = working_window(model_window, settings.working_window)
    if window < model_window:
        return f"{window:,} tokens (working window; the model has {model_window:,}{origin})"
    return f"{model_window:,} tokens{origin}"


def _usage_lines(workspace: Workspace, state: AgentState) -> list[tuple[str, str]]:
    """The agent's stored token totals, with their cost where prices are known."""
    from memgpt_lite.llm.prices import totals_text

    totals = workspace.usage_by_model(state.id)
    if not totals:
        return [("tokens", "none yet")]
    lines = [("tokens", totals_text(totals))]
    if len(totals) > 1:
        lines += [(f"  {t.model}", totals_text([t])) for t in totals]
    return lines


def _custom_tools_text(workspace: Workspace, owner: str, names: list[str]) -> str:
    """An agent's custom tools (`names`): those of its owner's registry, with
    where they come from, then those its code must give (`Agent.load(tools=...)`)."""
    from memgpt_lite.tools.external import origin_of

    registered = {tool.name: tool for tool, _ in workspace.tools.listed(owner)}
    parts = [
        f"{name} ({origin_of(registered[name])}"
        + ("" if registered[name].trusted else ", not trusted")
        + ")"
        for name in names
        if name in registered
    ]
    given = [name for name in names if name not in registered]
    if given:
        parts.append(f"{', '.join(given)} (give them to Agent.load)")
    return "; ".join(parts)


def _settings_text(state: AgentState) -> list[tuple[str, str]]:
    llm, settings = state.llm, state.settings
    temperature = "default" if llm.temperature is None else str(llm.temperature)
    loop = settings.model_dump(
        exclude={"context_window", "working_window", "embedder", "tool_rules", "tags"}
    )
    return [
        ("context window", _window_text(state)),
        (
            "llm",
            f"tool_choice={llm.tool_choice}, temperature={temperature}, "
            f"max_retries={llm.max_retries}, timeout_seconds={llm.timeout_seconds or 'default'}",
        ),
        ("settings", ", ".join(f"{key}={value}" for key, value in loop.items())),
        ("embedder", settings.embedder or "none (word search only)"),
        *([("tags", ", ".join(settings.tags))] if settings.tags else []),
    ]


@click.command()
@click.argument("name")
@click.pass_context
def show(ctx: click.Context, name: str) -> None:
    """Show agent NAME: model, endpoint, settings, blocks, counts, tools, and
    the tokens it has used, with their cost in dollars for models whose
    prices are known."""
    from memgpt_lite.cli.approvals import calls_text
    from memgpt_lite.settings.folders import redacted
    from memgpt_lite.tools.rules import describe
    from memgpt_lite.tools.sets import ATTACHABLE_TOOLS, agent_tools

    workspace = workspace_for(ctx)
    state = workspace.agent_state(name)
    stats = workspace.agent_stats(state.id)
    url, why = _endpoint(state)
    lines = [("name", state.name), ("model", state.llm.model), ("endpoint", f"{url} ({why})")]
    if state.display_name:  # given by a Letta client ("My Helper Bot")
        lines.insert(1, ("display name", state.display_name))
    lines.append(("database", redacted(db_location(ctx))))  # a URL's password as ***
    lines += _settings_text(state)
    lines += [
        ("messages", f"{stats.message_count}"),
        ("archival passages", f"{stats.passage_count}"),
        *_usage_lines(workspace, state),
        ("created", _when(state.created_at)),
        ("last active", _when(_last_active(state, stats))),
        ("tools", ", ".join(agent_tools(state.settings.tool_set, {}, state.tool_names))),
    ]
    custom = [name for name in state.tool_names if name not in ATTACHABLE_TOOLS]
    if custom:
        lines.append(("custom tools", _custom_tools_text(workspace, state.owner, custom)))
    if state.settings.tool_rules:
        lines.append(("tool rules", "; ".join(map(describe, state.settings.tool_rules))))
    waiting = workspace.waiting_calls(state)
    if waiting:
        lines.append(("waiting for approval", calls_text(waiting)))
    for key, value in lines:
        click.echo(f"{key}: {value}")
    click.echo("blocks:")
    for block in workspace.blocks(state.id):
        notes = _block_notes(workspace, state, block)
        notes = f"  ({notes})" if notes else ""
        click.echo(f"  {block.label}: {len(block.value)}/{block.limit} chars{notes}")


@click.command()
@click.argument("name")
@click.argument("label", required=False)
@click.option(
    "--set",
    "new_text",
    type=TextOrFile(),
    metavar="TEXT",
    help="Replace the block's text: TEXT or @FILE.",
)
@click.option("--edit", is_flag=True, help="Edit the block in $VISUAL or $EDITOR (else vi).")
@click.option("--history", is_flag=True, help="Show every change of the block, the newest last.")
@click.option(
    "--revert", type=int, metavar="N", help="Set the block back to version N (-1 is the last)."
)
@click.pass_context
def blocks(
    ctx: click.Context,
    name: str,
    label: str | None,
    new_text: str | None,
    edit: bool,
    history: bool,
    revert: int | None,
) -> None:
    """List agent NAME's core memory blocks, or print, set or edit block LABEL,
    or show its history or revert it.

    Limits and read-only blocks are enforced; if an edit does not fit, your
    text is saved to a file whose path is shown, so nothing is lost. Every
    change (by the agent, you or an import) is kept: --history shows each as
    a diff with its time and author, numbered from 0; --revert N sets that
    version back, as a new change.

    Examples: memgpt-lite blocks sam; memgpt-lite blocks sam human --edit;
    memgpt-lite blocks sam human --history; memgpt-lite blocks sam human --revert -2
    """
    from memgpt_lite.cli.block_history import history_command
    from memgpt_lite.cli.editor import edit_block

    if new_text is not None and edit:
        raise ConfigError("give --set or --edit, not both")
    workspace = workspace_for(ctx)
    agent = workspace.agent_for(workspace.agent_state(name))
    if history or revert is not None:
        chosen = [new_text is not None, edit, history, revert is not None]
        click.echo(history_command(agent, label, revert, sum(chosen) > 1))
        return
    if label is None:
        if new_text is not None or edit:
            raise ConfigError("name the block to change: memgpt-lite blocks NAME LABEL ...")
        columns = [("label", "left"), ("used", "right"), ("limit", "right"), ("notes", "left")]
        rows = [
            [b.label, str(len(b.value)), str(b.limit), _block_notes(workspace, agent.state, b)]
            for b in agent.blocks
        ]
        print_rows(columns, rows)
        return
    if new_text is None and not edit:
        click.echo(agent.block(label).value)
        return
    saved = edit_block(agent, label) if edit else agent.set_block(label, read_text_arg(new_text))
    if saved is None:
        click.echo(f"Block {label!r} is unchanged.")
        return
    click.echo(f"Saved block {label!r} ({len(saved.value)}/{saved.limit} chars).")


@click.command(name="config")
@click.option("--model", "-m", help="Show the settings as if given this flag.")
@click.option("--base-url", help="Show the settings as if given this flag.")
@click.option("--embedder", help="Show the settings as if given this flag.")
@click.option("--context-window", type=int, help="Show the settings as if given this flag.")
@click.pass_context
def show_config(
    ctx: click.Context,
    model: str | None,
    base_url: str | None,
    embedder: str | None,
    context_window: int | None,
) -> None:
    """Show the settings new agents get, and where each comes from.

    A flag wins over the environment ($MEMGPT_LITE_MODEL, $OPENAI_BASE_URL,
    $MEMGPT_LITE_EMBEDDER, $MEMGPT_LITE_CONTEXT_WINDOW, $MEMGPT_LITE_DB),
    which wins over config.toml in $MEMGPT_LITE_HOME (default ~/.memgpt_lite),
    for example:

    \b
        model = "llama3.2"
        base_url = "http://localhost:11434/v1"
        embedder = "local"
        context_window = 8192
        db = "postgresql://sam@localhost:5432/agents"

    db is where every command stores agents (--db before the command wins);
    a password in its URL is shown as ***. API keys never go in the file;
    set OPENAI_API_KEY.
    """
    from memgpt_lite.settings.endpoint import OPENAI_DEFAULT_BASE_URL
    from memgpt_lite.settings.folders import redacted

    flags = {
        "model": model,
        "base_url": base_url,
        "embedder": embedder,
        "context_window": context_window,
        "db": ctx.find_root().params.get("db"),
    }
    config = effective_config(flags)
    unset = {**UNSET_MEANING, "base_url": f"({OPENAI_DEFAULT_BASE_URL})"}
    rows = []
    for key, setting in config.settings().items():
        value = unset[key] if setting.value is None else str(setting.value)
        rows.append([key, redacted(value) if key == "db" else value, setting.source])
    print_rows([("setting", "left"), ("value", "left"), ("from", "left")], rows)
    state = "" if config.path.exists() else " (not created yet)"
    click.echo(f"Config file: {config.path}{state}", err=True)


AGENT_COMMANDS = [create, list_agents, show, rename, delete, blocks, show_config]
