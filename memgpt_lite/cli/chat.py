"""`memgpt-lite chat [NAME]`: an interactive session with an agent.

The session (`repl.py`, with rich) and the agent are imported when the chat
starts, so that `--help` stays fast (see `base.py`).
"""

from __future__ import annotations

import io
import sys
from typing import TYPE_CHECKING

import click

from memgpt_lite.cli.base import (
    conversation_option,
    load_agent,
    say_waiting,
    timeout_option,
    workspace_for,
)
from memgpt_lite.cli.log import show_details
from memgpt_lite.errors import AlreadyExistsError, ConfigError
from memgpt_lite.settings.resolve import effective_config

if TYPE_CHECKING:
    from memgpt_lite.agent.agent import Agent
    from memgpt_lite.agent.workspace import Workspace

# Offered when neither the environment nor config.toml names a model.
DEFAULT_MODEL = "gpt-4o-mini"


def create_interactively(workspace: Workspace, timeout: float | None = None) -> Agent:
    """Ask for a name and a model until an agent can be created. The model
    offered, the context window and the embedder come from the environment
    and config.toml, as for `memgpt-lite create`; the persona and human blocks
    start from the templates."""
    from memgpt_lite.models import AgentSettings

    config = effective_config()
    default_model = str(config.model.value or DEFAULT_MODEL)
    window = config.context_window.value
    settings = AgentSettings(context_window=window if isinstance(window, int) else None)
    embedder = None if config.embedder.value is None else str(config.embedder.value)
    err = not sys.stdin.isatty()  # piped: stdout carries the replies only
    while True:
        name = click.prompt("Name of the new agent", err=err).strip()
        model = click.prompt("Model", default=default_model, err=err).strip()
        try:
            agent = workspace.create_agent(
                name, model, settings=settings, embedder=embedder, timeout=timeout
            )
        except (ConfigError, AlreadyExistsError) as exc:
            click.echo(f"Error: {exc}", err=err)
            continue
        click.echo(f"Created agent {name!r} ({model}).", err=err)
        return agent


def choose_agent(workspace: Workspace, timeout: float | None = None) -> Agent:
    """Offer the stored agents by number (or name), or a new one."""
    # Piped, the choice is read from the input like any line, and the menu
    # goes to stderr: stdout carries the replies only.
    err = not sys.stdin.isatty()
    rows = workspace.list_agents()
    if not rows:
        click.echo("No agents yet: let's create one.", err=err)
        return create_interactively(workspace, timeout)
    for number, (state, stats) in enumerate(rows, start=1):
        line = f"  {number}. {state.name} ({state.llm.model}, {stats.message_count} messages)"
        click.echo(line, err=err)
    click.echo("  n. a new agent", err=err)
    names = [state.name for state, _ in rows]
    while True:
        answer = click.prompt("Chat with", default="1", err=err).strip()
        if answer.lower() in ("n", "new"):
            return create_interactively(workspace, timeout)
        if answer.isdigit() and 1 <= int(answer) <= len(rows):
            return workspace.load_agent(names[int(answer) - 1], timeout=timeout)
        if answer in names:
            return workspace.load_agent(answer, timeout=timeout)
        click.echo(f"Type a number from 1 to {len(rows)}, an agent's name, or n.", err=err)


@click.command()
@click.argument("name", required=False)
@click.option(
    "--verbose", "-v", is_flag=True, help="Show tool calls with full arguments and results."
)
@timeout_option
@conversation_option
@click.pass_context
def chat(
    ctx: click.Context,
    name: str | None,
    verbose: bool,
    timeout: float | None,
    conversation: str | None,
) -> None:
    """Chat with agent NAME; without NAME, pick an agent or create one.

    Type /help in the chat for its commands (/memory, /edit, /retry, /pop, ...).
    A line ending in \\ goes on to the next line; \"\"\" opens and closes a block.
    Ctrl-C cancels a reply in progress; Ctrl-D leaves. A tool call that waits
    for your approval is shown and asked about (Ctrl-C there leaves it
    waiting, for /approve or /deny).

    With --conversation ID, the chat is in that conversation of the agent:
    its own history and window, over the agent's one memory.

    Example: memgpt-lite chat sam
    """
    from memgpt_lite.cli.repl import ChatSession

    if verbose:
        show_details()
    if isinstance(sys.stdin, io.TextIOWrapper):
        # A typed or piped line that is not UTF-8 is read with U+FFFD, not refused.
        sys.stdin.reconfigure(errors="replace")
    if name:
        agent = load_agent(ctx, name, timeout, conversation)
    else:
        agent = choose_agent(workspace_for(ctx), timeout)
        agent.on_wait = say_waiting
        if conversation is not None:
            agent = agent.conversations.open(conversation)
    ChatSession(agent, workspace_for(ctx), verbose=verbose).run()
