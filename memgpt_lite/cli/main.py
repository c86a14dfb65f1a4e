"""The `memgpt-lite` command. Each command's docstring is its --help.

Only click and the light modules of `cli/` load at start-up; each command
imports what it runs (see `base.py`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from memgpt_lite.cli.agents import AGENT_COMMANDS
from memgpt_lite.cli.archival import archival
from memgpt_lite.cli.base import (
    FriendlyGroup,
    TextOrFile,
    conversation_option,
    load_agent,
    timeout_option,
    workspace_for,
)
from memgpt_lite.cli.chat import chat
from memgpt_lite.cli.conversations import conversations
from memgpt_lite.cli.copydb import copy_db
from memgpt_lite.cli.doctor import doctor, models
from memgpt_lite.cli.history import log_command
from memgpt_lite.cli.keys import keys
from memgpt_lite.cli.log import configure_logging, show_details
from memgpt_lite.cli.mcp import mcp
from memgpt_lite.cli.scripting import (
    ExitStatus,
    Output,
    output_mode,
    quiet_agent,
    read_message,
    run_step,
)
from memgpt_lite.cli.serve import serve
from memgpt_lite.cli.tools import tools
from memgpt_lite.cli.transfer import export_command, import_command
from memgpt_lite.cli.ui import ui
from memgpt_lite.cli.window import window
from memgpt_lite.errors import is_interrupt

if TYPE_CHECKING:
    from memgpt_lite.agent.agent import Agent
    from memgpt_lite.models import AgentState


@click.group(cls=FriendlyGroup)
@click.version_option(package_name="memgpt-lite")
@click.option(
    "--db",
    # A str, not a pathlib.Path: a postgresql:// URL is a location too. Still
    # click.Path, which keeps a file name's bytes (plain text would be
    # cleaned, see CleanText). settings.resolve.resolve_db falls back to
    # $MEMGPT_LITE_DB, then config.toml, and expands `~`.
    type=click.Path(dir_okay=False),
    metavar="FILE|URL",
    help="Database: a SQLite file or a postgresql://user@host:5432/db URL (default: "
    "$MEMGPT_LITE_DB, then db in config.toml, then $MEMGPT_LITE_HOME/memgpt_lite.db).",
)
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """memgpt-lite: agents that remember, with state in SQLite or PostgreSQL."""
    configure_logging()
    ctx.ensure_object(dict)
    ctx.obj["db"] = db


def _output_options(command: Callable[..., None]) -> Callable[..., None]:
    """-v, --quiet and --json: what `send` and `retry` print."""
    options = [
        click.option(
            "--verbose", "-v", is_flag=True, help="Also show inner thoughts and tool calls."
        ),
        click.option(
            "--quiet",
            "-q",
            is_flag=True,
            help="Only the replies; nothing on stderr unless failing.",
        ),
        click.option(
            "--json",
            "as_json",
            is_flag=True,
            help="Every event of the step as one JSON object per line (see the README).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@cli.command()
@click.argument("name")
@click.argument("message", required=False, type=TextOrFile())
@_output_options
@timeout_option
@conversation_option
@click.pass_context
def send(
    ctx: click.Context,
    name: str,
    message: str | None,
    verbose: bool,
    quiet: bool,
    as_json: bool,
    timeout: float | None,
    conversation: str | None,
) -> None:
    """Send MESSAGE to agent NAME and print its replies, one per line.

    MESSAGE may be `-` to read it from standard input (as is done without
    MESSAGE when standard input is not a terminal), or @FILE to read it from a
    file; write @@ for a message that starts with a literal @. Use these for
    long messages: the system limits one argument to 128 KB.

    Exit status: 0 replied, 1 error, 2 bad input, 3 finished without a reply,
    4 the model endpoint failed, 5 a tool call waits for approval (`memgpt-lite
    approve NAME` or `memgpt-lite deny NAME` answers it). If it fails, the
    message stays stored but unanswered, and is left out of later requests:
    `memgpt-lite retry NAME` sends it again, `memgpt-lite pop NAME` drops it.

    With --conversation ID, the message goes to that conversation of the
    agent (`memgpt-lite conversations NAME --new` makes one): its own
    history and window, over the agent's one memory.

    Example: memgpt-lite send sam "Hi, my name is Alice" --timeout 60
    """
    output = output_mode(verbose, quiet, as_json)
    text = read_message(message)
    agent = _agent_for(ctx, name, timeout, output, conversation)
    ctx.exit(run_step(agent, text, output))


@cli.command()
@click.argument("name")
@_output_options
@timeout_option
@click.pass_context
def retry(
    ctx: click.Context,
    name: str,
    verbose: bool,
    quiet: bool,
    as_json: bool,
    timeout: float | None,
) -> None:
    """Send agent NAME's last message again, after removing its last exchange
    (that message and everything that followed it): for a message the endpoint
    failed to answer, or an answer you want redone. Output and exit status as
    for `send`."""
    output = output_mode(verbose, quiet, as_json)
    agent = _agent_for(ctx, name, timeout, output)
    _ = agent.runner.llm  # a missing API key fails here, before anything is removed
    with agent.runner.step_lock():  # no other step between the pop and the new one
        text = agent.history.pop_for_retry()
        if output is not Output.QUIET:
            click.echo(f"Sending again: {text}", err=True)
        status = run_step(agent, text, output)
    ctx.exit(status)


_call_option = click.option(
    "--call",
    "call_ids",
    multiple=True,
    metavar="ID",
    help="Answer the waiting tool call with this id (see `memgpt-lite show NAME`): a check "
    "that it is the call you looked at. When several wait, all are answered at once: "
    "repeat --call for each. Default: every waiting call.",
)


@cli.command()
@click.argument("name")
@_call_option
@_output_options
@timeout_option
@click.pass_context
def approve(
    ctx: click.Context,
    name: str,
    call_ids: tuple[str, ...],
    verbose: bool,
    quiet: bool,
    as_json: bool,
    timeout: float | None,
) -> None:
    """Approve the tool call agent NAME is waiting to run: it runs, and the
    step goes on, printed as `send` prints it (exit status as for `send`).

    Example: memgpt-lite approve sam
    """
    _answer(ctx, name, True, "", call_ids, timeout, (verbose, quiet, as_json))


@cli.command()
@click.argument("name")
@click.option("--reason", default="", help="Why, for the model to read.")
@_call_option
@_output_options
@timeout_option
@click.pass_context
def deny(
    ctx: click.Context,
    name: str,
    reason: str,
    call_ids: tuple[str, ...],
    verbose: bool,
    quiet: bool,
    as_json: bool,
    timeout: float | None,
) -> None:
    """Deny the tool call agent NAME is waiting to run: it does not run; the
    model reads that you denied it, with --reason, and the step goes on,
    printed as `send` prints it (exit status as for `send`).

    Example: memgpt-lite deny sam --reason "keep that file"
    """
    _answer(ctx, name, False, reason, call_ids, timeout, (verbose, quiet, as_json))


def _answer(
    ctx: click.Context,
    name: str,
    approve: bool,
    reason: str,
    call_ids: tuple[str, ...],
    timeout: float | None,
    flags: tuple[bool, bool, bool],
) -> None:
    """Go on with agent NAME's step with the user's answer to the calls
    `call_ids` (every waiting call when there is none); `flags` are -v, -q
    and --json."""
    from memgpt_lite.models import Approval

    output = output_mode(*flags)
    answers = [
        Approval(approve=approve, reason=reason, tool_call_id=call_id)
        for call_id in call_ids or [None]
    ]
    agent = _agent_for(ctx, name, timeout, output)
    ctx.exit(run_step(agent, answers, output))


@cli.command()
@click.argument("name")
@click.argument("count", default=1, type=click.IntRange(min=1))
@click.pass_context
def pop(ctx: click.Context, name: str, count: int) -> None:
    """Remove agent NAME's last COUNT exchanges (default 1): each a message of
    yours and everything after it. Memory edits the agent made stay."""
    deleted = load_agent(ctx, name).history.pop_exchanges(count)
    click.echo(f"Removed {count} exchange(s): {deleted} messages.")


def _agent_for(
    ctx: click.Context,
    name: str,
    timeout: float | None,
    output: Output,
    conversation: str | None = None,
) -> Agent:
    """Agent NAME (in `conversation`, if given), with the terminal output
    `output` asks for."""
    if output is Output.VERBOSE:
        show_details()
    agent = load_agent(ctx, name, timeout, conversation)
    if output is Output.QUIET:
        quiet_agent(agent)
    return agent


@cli.command()
@click.argument("name")
@click.pass_context
def memory(ctx: click.Context, name: str) -> None:
    """Show agent NAME's core memory blocks."""
    agent = load_agent(ctx, name)
    for block in agent.blocks:
        flags = ", read-only" if block.read_only else ""
        click.echo(f"[{block.label}] {len(block.value)}/{block.limit} chars{flags}")
        click.echo(block.value)
        click.echo()


@cli.command()
@click.argument("name")
@click.pass_context
def context(ctx: click.Context, name: str) -> None:
    """Show where the tokens of agent NAME's next request go, section by section."""
    from rich.console import Console

    from memgpt_lite.cli.repl_commands import context_summary, context_table

    view = load_agent(ctx, name).context_overview()
    Console(highlight=False).print(context_table(f"{name}: {view.model}", view))
    click.echo(context_summary(view))


@cli.command()
@click.argument("name")
@click.pass_context
def summarize(ctx: click.Context, name: str) -> None:
    """Compact agent NAME's context now: older messages are folded into the
    summary and leave the window (they stay searchable)."""
    click.echo(load_agent(ctx, name).runner.summarize().describe())


@cli.command()
@click.argument("name")
@click.option(
    "--every",
    type=click.IntRange(min=0),
    metavar="N",
    help="Instead of reflecting now, reflect in the background after every N turns "
    "from now on (0: only when asked).",
)
@click.pass_context
def reflect(ctx: click.Context, name: str, every: int | None) -> None:
    """Let agent NAME reflect now: one model call reads the messages no
    reflection has read yet, saves the facts they hold as dated archival
    passages (superseding the ones they make out of date) and updates core
    memory, the human block above all. Nothing else is sent to the model.

    Example: memgpt-lite reflect sam; memgpt-lite reflect sam --every 10
    """
    agent = load_agent(ctx, name)
    if every is not None:

        def use(state: AgentState) -> None:
            state.settings.reflect_every = every or None

        workspace_for(ctx).update_agent(agent.state.id, use)
        when = f"after every {every} turns" if every else "only when asked"
        click.echo(f"Agent {name!r} reflects {when}.")
        return
    report = agent.runner.reflect()
    click.echo(report.describe())
    for note in report.notes:
        click.echo(f"note: {note}")


# Command families kept in their own modules.
cli.add_command(archival)
cli.add_command(chat)
cli.add_command(conversations)
cli.add_command(copy_db)
cli.add_command(doctor)
cli.add_command(models)
cli.add_command(export_command)
cli.add_command(import_command)
cli.add_command(keys)
cli.add_command(log_command)
cli.add_command(mcp)
cli.add_command(serve)
cli.add_command(tools)
cli.add_command(ui)
cli.add_command(window)
for command in AGENT_COMMANDS:
    cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI. Our errors are one line (FriendlyGroup); Ctrl-C anywhere,
    at a prompt included, is "Interrupted.", never click's "Aborted!"."""
    try:
        status = cli.main(args=argv, prog_name="memgpt-lite", standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except (click.Abort, KeyboardInterrupt, EOFError) as exc:
        if isinstance(exc, EOFError) or isinstance(exc.__context__, EOFError):
            click.echo("Stopped: the input ended before an answer.", err=True)
            sys.exit(ExitStatus.FAILED)
        click.echo("Interrupted.", err=True)
        sys.exit(ExitStatus.INTERRUPTED)
    except RuntimeError as exc:
        if not is_interrupt(exc):
            raise
        click.echo("Interrupted.", err=True)
        sys.exit(ExitStatus.INTERRUPTED)
    sys.exit(status if isinstance(status, int) else 0)
