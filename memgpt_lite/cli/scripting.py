"""What `send` and `retry` offer scripts: the message from an argument, a
file or standard input; the step's output as text, replies only or JSON lines;
and exit statuses that tell the outcomes apart (`ExitStatus`).

Start-up: like every module of `cli/`, this one imports only click and the
standard library at module level (see `base.py`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from enum import Enum, IntEnum
from pathlib import Path
from typing import TYPE_CHECKING

import click

from memgpt_lite.errors import LLMError

if TYPE_CHECKING:
    from memgpt_lite.agent import Agent
    from memgpt_lite.events import StepEvent, StepFailed, StepFinished
    from memgpt_lite.models import StepInput, StepResult


class ExitStatus(IntEnum):
    """How a command ends, for scripts. Documented in the README; stable."""

    REPLIED = 0  # success (for send and retry: the agent replied)
    FAILED = 1  # any other error: no such agent, the database, the configuration
    BAD_INPUT = 2  # click's own status for usage errors, so one code for all bad input
    NO_REPLY = 3  # the step finished, but the agent ended its turn without a reply
    ENDPOINT_FAILED = 4  # the model endpoint failed (LLMError): retry may work later
    APPROVAL_REQUIRED = 5  # a tool call waits for approval: `approve` or `deny` goes on
    INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT


class BadInput(click.ClickException):
    """Input the user gave that cannot be used: one line, ExitStatus.BAD_INPUT."""

    exit_code = ExitStatus.BAD_INPUT


class Output(Enum):
    """What `send` and `retry` print."""

    TEXT = "text"  # the replies, and a note on stderr when there is none
    VERBOSE = "verbose"  # TEXT, with thoughts and tool calls on stderr
    QUIET = "quiet"  # the replies only; stderr only when failing
    JSON = "json"  # every event as one JSON object per line, nothing else on stdout


def output_mode(verbose: bool, quiet: bool, as_json: bool) -> Output:
    """The output the flags ask for; two that contradict are a usage error."""
    chosen = [
        name for name, on in (("--verbose", verbose), ("--quiet", quiet), ("--json", as_json)) if on
    ]
    if len(chosen) > 1:
        raise click.UsageError(f"{' and '.join(chosen)} cannot be used together")
    if as_json:
        return Output.JSON
    return Output.QUIET if quiet else Output.VERBOSE if verbose else Output.TEXT


def read_message(argument: str | None) -> str:
    """The message to send: the argument's text; `-` (or no argument, with
    standard input not a terminal) reads standard input; `@FILE` reads a file;
    `@@TEXT` stands for the text `@TEXT`. A file's or standard input's trailing
    line breaks are dropped. Empty or undecodable input is BadInput."""
    if argument is None:
        if sys.stdin is not None and sys.stdin.isatty():
            raise click.UsageError(
                "Missing argument 'MESSAGE' (give it, `-` or @FILE, or pipe it in)."
            )
        argument = "-"
    if argument == "-":
        data = sys.stdin.buffer.read() if sys.stdin is not None else b""
        text = _decoded(data, "standard input").rstrip("\r\n")
    elif argument.startswith("@@"):
        text = _clean(argument[1:])
    elif argument == "@":
        raise BadInput("@ needs a file name after it (@@ for a message starting with @)")
    elif argument.startswith("@"):
        text = _read_file(argument).rstrip("\r\n")
    else:
        text = argument
    if not text.strip():
        raise BadInput("the message is empty")
    return text


def _clean(text: str) -> str:
    """`text` made storable: an argv byte that is not UTF-8 became a lone
    surrogate (see base.CleanText)."""
    from memgpt_lite.text import clean_text

    return clean_text(text)


def _decoded(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{source} is not UTF-8 text (byte {exc.start})") from None


def _read_file(argument: str) -> str:
    shown = _clean(argument if len(argument) <= 80 else argument[:79] + "…")
    try:
        data = Path(argument[1:]).expanduser().read_bytes()
    except FileNotFoundError:
        raise BadInput(f"cannot read {shown}: no such file") from None
    except OSError as exc:
        raise BadInput(f"cannot read {shown}: {exc.strerror or exc}") from None
    return _decoded(data, shown)


def quiet_agent(agent: Agent) -> None:
    """Nothing on stderr unless failing: no note while waiting for another
    step, no warnings (they still go to the log file)."""
    from memgpt_lite.cli.log import hide_warnings

    agent.on_wait = lambda message: None
    hide_warnings()


def run_step(agent: Agent, text: StepInput, output: Output) -> ExitStatus:
    """Send `text` to `agent` (or its answer to the calls waiting for
    approval) and print what `output` asks for. Returns REPLIED, NO_REPLY or
    APPROVAL_REQUIRED; raises a one-line ClickException if the step failed
    (after printing the replies it delivered before failing)."""
    from memgpt_lite.events import StepFailed

    if output in (Output.TEXT, Output.VERBOSE) and sys.stdout.isatty():
        last = _rendered(agent, text, verbose=output is Output.VERBOSE)
        result = last.result
    else:
        last = _printed(agent.stream(text), output)
        result = last.result
        if output is not Output.JSON:
            if output is Output.VERBOSE:
                show_steps(result)
            for reply in result.replies:
                click.echo(reply)
    if isinstance(last, StepFailed):
        raise _failure(agent, last)
    if result.stop_reason == "approval_required":
        if output in (Output.TEXT, Output.VERBOSE):
            from memgpt_lite.cli.approvals import waiting_note

            click.echo(waiting_note(agent.state.name, result.pending_approvals), err=True)
        return ExitStatus.APPROVAL_REQUIRED
    if result.replies:
        return ExitStatus.REPLIED
    if output in (Output.TEXT, Output.VERBOSE):
        name = agent.state.name
        click.echo(f"({name} ended its turn without a reply: {result.stop_reason})", err=True)
        note = agent.history.unanswered_note(f"memgpt-lite retry {name}", f"memgpt-lite pop {name}")
        if note:  # the message is left out of later requests: say how to send it again
            click.echo(note, err=True)
    return ExitStatus.NO_REPLY


def _rendered(agent: Agent, text: StepInput, verbose: bool) -> StepFinished | StepFailed:
    """On a terminal: the step shown as it happens, as the chat shows it (the
    reply as the model writes it; with -v its thoughts and tool calls too)."""
    from rich.console import Console

    from memgpt_lite.cli.render import StepRenderer
    from memgpt_lite.events import StepFailed, StepFinished

    last: StepEvent | None = None
    with StepRenderer(Console(highlight=False), agent.state.name, verbose=verbose) as renderer:
        for event in agent.stream(text):
            renderer.show(event)
            last = event
    if not isinstance(last, StepFinished | StepFailed):
        raise RuntimeError(f"a step ended with {last!r}")  # run_step always ends with one
    return last


def _printed(events: Iterable[StepEvent], output: Output) -> StepFinished | StepFailed:
    """Go through a step's events, printing each as a JSON line in JSON mode;
    returns the last (StepFinished or StepFailed)."""
    from memgpt_lite.events import StepFailed, StepFinished

    last: StepEvent | None = None
    for event in events:
        if output is Output.JSON:
            click.echo(event.model_dump_json())
        last = event
    if not isinstance(last, StepFinished | StepFailed):
        raise RuntimeError(f"a step ended with {last!r}")  # run_step always ends with one
    return last


def _failure(agent: Agent, failed: StepFailed) -> click.ClickException:
    """The step's error as one line that also says how to send the message
    again or drop it; the status tells an endpoint failure from the rest."""
    name = agent.state.name
    note = agent.history.unanswered_note(f"memgpt-lite retry {name}", f"memgpt-lite pop {name}")
    # One line, so scripts and logs keep one line per failure.
    error = click.ClickException(
        f"{failed.message} — {note[0].lower()}{note[1:]}" if note else failed.message
    )
    endpoint = isinstance(failed.error, LLMError)
    error.exit_code = ExitStatus.ENDPOINT_FAILED if endpoint else ExitStatus.FAILED
    return error


def show_steps(result: StepResult) -> None:
    """Thoughts and tool calls with their results, on stderr: `-v`."""
    from rich.console import Console
    from rich.markup import escape

    console = Console(stderr=True, highlight=False)
    for thought in result.thoughts:
        console.print(f"[dim]thought: {escape(thought)}[/dim]")
    for tool_result in result.tool_results:
        call = tool_result.call
        mark = "" if tool_result.ok else " [red](failed)[/red]"
        console.print(
            f"[dim]{escape(call.name)}({escape(call.arguments)}) -> "
            f"{escape(tool_result.content)}[/dim]{mark}"
        )
