"""The chat's slash commands. Each is a function registered with `@command`,
whose usage line and summary are what `/help` shows.

A command given bad arguments raises `BadArguments` and its usage line is
printed; our errors (`MemGPTError`) are printed by the session as one line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from rich.console import Console
from rich.table import Table
from rich.text import Text

from memgpt_lite.cli.block_history import history_text
from memgpt_lite.cli.editor import edit_text, keep_text
from memgpt_lite.errors import ConfigError
from memgpt_lite.memory.recall.window import UNKNOWN_MODEL_WINDOW, known_window
from memgpt_lite.models import Approval
from memgpt_lite.tools.sets import tool_origin

if TYPE_CHECKING:
    from memgpt_lite.agent.agent import Agent
    from memgpt_lite.agent.workspace import Workspace
    from memgpt_lite.memory.recall.window import ContextOverview
    from memgpt_lite.models import AgentState, Message, Passage

T = TypeVar("T")


class Session(Protocol):
    """What a command may use of the chat session (`repl.ChatSession`), named
    here so that this module need not import the session's, which imports it."""

    agent: Agent
    workspace: Workspace
    console: Console
    running: bool

    def print(self, text: str = "", style: str | None = None) -> None: ...

    def error(self, message: str) -> None: ...

    def confirm(self, question: str) -> bool: ...

    def call_model(self, what: str, work: Callable[[], T]) -> T | None: ...

    def send(self, text: str) -> None: ...

    def answer(self, answers: list[Approval]) -> None: ...


Handler = Callable[[Session, str], None]

DEFAULT_DUMP = 10
ARCHIVAL_LIST = 10
SEARCH_RESULTS = 10
INPUT_HELP = """\
Type a message and press Enter. End a line with \\ to go on to the next line, or
open and close a block of lines with \"\"\". Start with // to send a message that
begins with a slash. Tab completes command names.
Ctrl-C cancels a reply in progress, or clears the line; Ctrl-D leaves (inside
an unfinished entry, it sends what was typed).
/pop and /retry remove messages only: memory edits the agent made stay."""


class BadArguments(Exception):
    """A command was given arguments it cannot use; its usage line is shown."""


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    summary: str
    run: Handler


COMMANDS: dict[str, Command] = {}
ALIASES = {"quit": "exit", "q": "exit", "?": "help"}


def command(usage: str, summary: str) -> Callable[[Handler], Handler]:
    """Register a slash command; its name is the first word of `usage`."""

    def register(run: Handler) -> Handler:
        name = usage.split()[0].removeprefix("/")
        COMMANDS[name] = Command(name, usage, summary, run)
        return run

    return register


def run_command(session: Session, name: str, arguments: str) -> None:
    found = COMMANDS.get(ALIASES.get(name, name))
    if found is None:
        session.print(f"Unknown command /{name}. Type /help to list the commands.", "yellow")
        return
    try:
        found.run(session, arguments)
    except BadArguments:
        session.print(f"Usage: {found.usage}", "yellow")


def _no_arguments(arguments: str) -> None:
    if arguments:
        raise BadArguments


def _required(arguments: str) -> str:
    if not arguments:
        raise BadArguments
    return arguments


def _count(arguments: str, default: int) -> int:
    if not arguments:
        return default
    if not (arguments.isascii() and arguments.isdigit()) or int(arguments) < 1:
        raise BadArguments
    return int(arguments)


# The context breakdown, shared with `memgpt-lite context`.


def context_table(title: str, view: ContextOverview) -> Table:
    table = Table(title=title, show_edge=False)
    table.add_column("section")
    table.add_column("tokens", justify="right")
    for section, tokens in view.sections.items():
        table.add_row(section, f"{tokens:,}")
    table.add_row("total (exact request)", f"{view.total_tokens:,}", style="bold")
    return table


def context_summary(view: ContextOverview) -> str:
    used = 100 * view.total_tokens / view.context_window
    return (
        f"{view.total_tokens:,} of {view.context_window:,} tokens ({used:.0f}%), "
        f"{view.reply_reserve:,} reserved for the reply; messages: "
        f"{view.messages_in_context} in context, {view.messages_in_storage} stored"
    )


# Commands, in the order /help lists them.


@command("/help", "List the commands and how to type messages.")
def _help(session: Session, arguments: str) -> None:
    _no_arguments(arguments)
    table = Table(show_header=False, box=None, padding=(0, 2, 0, 0))
    for item in COMMANDS.values():
        table.add_row(Text(item.usage), Text(item.summary))
    session.console.print(table)
    session.print(INPUT_HELP, "dim")


@command("/memory", "Show the core memory blocks, with their size out of their limit.")
def _memory(session: Session, arguments: str) -> None:
    _no_arguments(arguments)
    for block in session.agent.blocks:
        flags = ", read-only" if block.read_only else ""
        session.print(f"[{block.label}] {len(block.value)}/{block.limit} chars{flags}", "bold")
        session.print(block.value or "(empty)")


@command("/edit LABEL", "Edit a core memory block in $VISUAL or $EDITOR.")
def _edit(session: Session, arguments: str) -> None:
    label = _required(arguments)
    if " " in label:
        raise BadArguments
    agent = session.agent
    if agent.block(label).read_only:
        raise ConfigError(f"block {label!r} is read-only: it cannot be edited")
    stem = f"{agent.state.name}-{label}"
    text = agent.block(label).value
    while True:
        current = agent.block(label).value
        # The editor failing is a ConfigError naming where changed text was kept;
        # Ctrl-C in the editor is left to it (see editor.ctrl_c_left_to_the_editor).
        text = edit_text(text, stem=stem)
        if text == current:
            session.print("No change.", "dim")
            return
        try:
            block = agent.set_block(label, text, expected=current)
        except ConfigError as exc:
            session.error(str(exc))
            session.print(f"Your text is kept in {keep_text(text, stem)}", "yellow")
            if not session.confirm("Edit it again?"):
                return
            continue
        session.print(f"Saved block {label!r} ({len(block.value)}/{block.limit} chars).")
        return


@command("/block LABEL TEXT", "Replace the text of a core memory block.")
def _block(session: Session, arguments: str) -> None:
    label, *text = arguments.split(maxsplit=1)
    if not text:
        raise BadArguments
    block = session.agent.set_block(label, text[0])
    session.print(f"Saved block {label!r} ({len(block.value)}/{block.limit} chars).")


@command("/history LABEL", "Show every change of a core memory block, the newest last.")
def _history(session: Session, arguments: str) -> None:
    session.print(history_text(session.agent, _required(arguments)))


def _show_passages(session: Session, passages: list[Passage], total: int) -> None:
    for passage in passages:
        when = passage.created_at.strftime("%Y-%m-%d %H:%M")
        tags = f"  [{', '.join(passage.tags)}]" if passage.tags else ""
        session.print(f"{passage.id}  {when}{tags}", "dim")
        session.print(f"  {passage.text}")
    session.print(f"({len(passages)} shown of {total})", "dim")


@command("/archival [QUERY]", "Search archival memory, or list the newest passages.")
def _archival(session: Session, arguments: str) -> None:
    archival = session.agent.archival
    if arguments:
        _show_passages(session, *archival.search(arguments, SEARCH_RESULTS))
    else:
        _show_passages(session, *archival.list(ARCHIVAL_LIST))


@command("/search QUERY", "Search past messages (recall memory).")
def _search(session: Session, arguments: str) -> None:
    found, total = session.agent.history.search(_required(arguments), SEARCH_RESULTS)
    for message in found:
        when = message.created_at.strftime("%Y-%m-%d %H:%M")
        session.print(f"#{message.seq} [{when}] {message.role}: {message.search_text()}")
    session.print(f"({len(found)} shown of {total})", "dim")


@command("/context", "Show where the tokens of the next request go.")
def _context(session: Session, arguments: str) -> None:
    _no_arguments(arguments)
    view = session.agent.context_overview()
    session.console.print(context_table(f"{session.agent.state.name}: {view.model}", view))
    session.print(context_summary(view))


@command("/summarize", "Fold older messages into the summary now.")
def _summarize(session: Session, arguments: str) -> None:
    _no_arguments(arguments)
    report = session.call_model("summarizing…", session.agent.runner.summarize)
    if report is not None:
        session.print(report.describe())


@command("/reflect", "Go over the new messages now and update memory from them.")
def _reflect(session: Session, arguments: str) -> None:
    _no_arguments(arguments)
    report = session.call_model("reflecting…", session.agent.runner.reflect)
    if report is not None:
        session.print(report.describe())
        for note in report.notes:
            session.print(f"note: {note}")


@command("/retry", "Remove the last exchange and send its message again.")
def _retry(session: Session, arguments: str) -> None:
    _no_arguments(arguments)
    agent = session.agent
    _ = agent.runner.llm  # a missing API key fails here, before anything is removed
    with agent.runner.step_lock():  # no other step between the pop and the new one
        text = agent.history.pop_for_retry()
        session.print(f"Sending again: {text}", "dim")
        session.send(text)


@command("/pop [N]", "Remove the last N exchanges (default 1).")
def _pop(session: Session, arguments: str) -> None:
    count = _count(arguments, 1)
    deleted = session.agent.history.pop_exchanges(count)
    session.print(f"Removed {count} exchange(s): {deleted} messages.")


@command("/rethink TEXT", "Replace the agent's last inner thought.")
def _rethink(session: Session, arguments: str) -> None:
    session.agent.history.rethink(_required(arguments))
    session.print("Replaced the last inner thought.")


@command("/rewrite TEXT", "Replace the agent's last reply.")
def _rewrite(session: Session, arguments: str) -> None:
    session.agent.history.rewrite(_required(arguments))
    session.print("Replaced the last reply.")


def _dump_message(session: Session, message: Message, context_start: int) -> None:
    head = f"#{message.seq} {message.role}"
    if message.name:
        head += f" name={message.name}"
    if message.tool_call_id:
        head += f" tool_call_id={message.tool_call_id}"
    if (message.seq or 0) < context_start:
        head += " (folded into the summary)"
    session.print(head, "bold")
    if message.content is not None:
        session.print(message.content)
    if message.tool_calls:
        calls = [call.to_openai() for call in message.tool_calls]
        session.print(json.dumps(calls, indent=2, ensure_ascii=False))


@command("/dump [N]", f"Show the last N stored messages raw (default {DEFAULT_DUMP}).")
def _dump(session: Session, arguments: str) -> None:
    count = _count(arguments, DEFAULT_DUMP)
    state = session.workspace.agent_state(session.agent.state.id)
    for message in session.workspace.newest_messages(state.id, count):
        _dump_message(session, message, state.context_start)


@command("/tools", "List the agent's tools, and where each comes from.")
def _tools(session: Session, arguments: str) -> None:
    _no_arguments(arguments)
    tool_set = session.agent.state.settings.tool_set
    for tool in session.agent.tools.values():
        description = " ".join((tool.description or "").split())
        session.print(f"{tool.name}: {description} [{tool_origin(tool, tool_set)}]")


def _window_size(text: str) -> int:
    """A context window typed by the user: a whole number of tokens, with , or _ allowed."""
    digits = text.replace(",", "").replace("_", "")
    if not (digits.isascii() and digits.isdigit()) or int(digits) < 1:
        raise BadArguments
    return int(digits)


@command(
    "/model [NAME [WINDOW]]",
    "Show the model, or switch to another (kept for next time); WINDOW is its "
    "context window in tokens, needed for a model whose window is not known.",
)
def _model(session: Session, arguments: str) -> None:
    agent = session.agent
    if not arguments:
        session.print(f"Model: {agent.state.llm.model} ({_window_text(agent)})")
        return
    name, *rest = arguments.split()
    if len(rest) > 1:
        raise BadArguments
    window = _window_size(rest[0]) if rest else None
    if window is None and agent.state.settings.context_window is None and not known_window(name):
        # Taken as UNKNOWN_MODEL_WINDOW, a small window would silently squeeze
        # the conversation (and a large one overflow it): ask rather than guess.
        session.print(
            f"The context window of {name!r} is not known (it would be taken as "
            f"{UNKNOWN_MODEL_WINDOW:,} tokens). Nothing changed: give it, e.g. "
            f"/model {name} 32768",
            "yellow",
        )
        return
    if window is not None:

        def use(state: AgentState) -> None:
            state.settings.context_window = window

        agent.state = session.workspace.update_agent(agent.state.id, use)
    agent.set_model(name)
    session.print(f"Model set to {name} ({_window_text(agent)}).")


def _window_text(agent: Agent) -> str:
    """The windows of the agent's model, as /model shows them."""
    overview = agent.context_overview()
    if overview.context_window < overview.model_window:
        return (
            f"working window {overview.context_window:,} tokens of its "
            f"{overview.model_window:,}-token context window"
        )
    return f"context window {overview.context_window:,} tokens"


@command("/approve", "Run the tool calls waiting for your approval; the step goes on.")
def _approve(session: Session, arguments: str) -> None:
    _no_arguments(arguments)
    session.answer([Approval(approve=True)])


@command(
    "/deny [REASON]",
    "Refuse the tool calls waiting for your approval; the agent reads REASON.",
)
def _deny(session: Session, arguments: str) -> None:
    session.answer([Approval(approve=False, reason=arguments)])


@command("/exit", "Leave the chat (or press Ctrl-D).")
def _exit(session: Session, arguments: str) -> None:
    _no_arguments(arguments)
    session.running = False
