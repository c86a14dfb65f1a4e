"""The interactive chat session behind `memgpt-lite chat NAME`.

One loop: read an entry, then either run a slash command (`repl_commands.py`)
or send it to the agent and show what happened. Output goes through one rich
`Console`: colours, markdown and a spinner in a terminal; plain text when the
output is a pipe or a file, so no escape code ever reaches a log.

A step that ends waiting for the user's approval of tool calls (see
loop/approvals.py) is asked about at the next turn of the loop: each call is
shown and approved or denied, and the step goes on. A chat that opens on an
agent with calls waiting asks first. Ctrl-C or Ctrl-D at the question leaves
them waiting, for /approve or /deny.

Ctrl-C while the model works cancels the step. What the loop committed stays
(the user's message first, then each model response together with all its tool
results), so the history is consistent and the next request is valid; the
user is told how to drop or resend the message. Ctrl-C at the prompt drops the
line being typed; Ctrl-D ends the session.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from types import ModuleType
from typing import TypeVar

from rich.console import Console
from rich.text import Text

from memgpt_lite.agent.agent import Agent
from memgpt_lite.agent.workspace import Workspace
from memgpt_lite.cli.approvals import call_text
from memgpt_lite.cli.render import StepRenderer
from memgpt_lite.cli.repl_commands import COMMANDS, run_command
from memgpt_lite.errors import ConfigError, MemGPTError
from memgpt_lite.events import StepEvent, StepFailed, StepFinished
from memgpt_lite.llm.prices import dollars, total_cost, turn_cost_text
from memgpt_lite.models import Approval, StepInput, StepResult, ToolCall
from memgpt_lite.settings.resolve import ensure_folder, home_dir

PROMPT = "you> "
CONTINUATION_PROMPT = "...> "
HISTORY_FILENAME = "chat_history"
HISTORY_LENGTH = 1000
BLOCK_QUOTE = '"""'
T = TypeVar("T")


class _Elapsed:
    """The spinner's text: what is going on and for how long."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.started = time.monotonic()

    def __rich__(self) -> Text:
        return Text(f"{self.what} {time.monotonic() - self.started:.0f}s", style="dim")


def _load_readline(history_path: Path) -> tuple[ModuleType | None, str | None]:
    """GNU readline (or libedit) with command completion and the history file
    loaded; None where the platform has none, and input is then plain `input()`.
    Also why the history file cannot be used, if it cannot."""
    try:
        import readline
    except ImportError:
        return None, None
    names = sorted(f"/{name}" for name in COMMANDS)
    readline.set_completer(
        lambda text, state: ([n for n in names if n.startswith(text)] + [None])[state]
    )
    readline.set_completer_delims(" \t\n")
    if "libedit" in (readline.__doc__ or ""):  # macOS: another syntax
        readline.parse_and_bind("bind ^I rl_complete")
    else:
        readline.parse_and_bind("tab: complete")
    readline.set_history_length(HISTORY_LENGTH)
    try:
        ensure_folder(history_path.parent)
        history_path.touch(exist_ok=True)
        readline.read_history_file(history_path)
        if readline.get_current_history_length() > HISTORY_LENGTH:
            readline.write_history_file(history_path)  # trims the file to the length
    except ConfigError as exc:  # the home folder is a file, or read-only
        return readline, _not_kept(str(exc))
    except OSError as exc:  # an unusable history file must not stop the chat
        return readline, _not_kept(f"cannot use {history_path}: {exc.strerror or exc}")
    return readline, None


def _not_kept(reason: str) -> str:
    return f"The input history is not kept: {reason}."


class LineReader:
    """Reads one entry from the user. A line ending in a backslash continues on
    the next line; a line starting with three double quotes opens a block that
    ends at a line ending with them. Raises EOFError (Ctrl-D) at the prompt;
    Ctrl-D in the middle of an entry ends the entry, so nothing typed is lost
    (`ended_by_eof` says so). Lets KeyboardInterrupt (Ctrl-C) through,
    dropping whatever was typed. Without `prompts` (piped input) it prints none."""

    def __init__(self, history_path: Path | None, *, prompts: bool = True) -> None:
        self.history_path = history_path
        self.prompt, self.continuation = (PROMPT, CONTINUATION_PROMPT) if prompts else ("", "")
        self.ended_by_eof = False  # the last entry was ended by Ctrl-D, not by its closing
        self.readline: ModuleType | None = None
        self.problem: str | None = None  # why the history file is not kept, to tell once
        if history_path is not None:
            self.readline, self.problem = _load_readline(history_path)
            if self.problem is not None:
                self.history_path = None  # line editing goes on, without the file

    def read(self) -> str:
        before = self._history_length()
        try:
            return self._read_entry()
        finally:
            self._save_history(before)

    def _read_entry(self) -> str:
        self.ended_by_eof = False
        first = input(self.prompt)
        if first.lstrip().startswith(BLOCK_QUOTE):
            return self._read_block(first.lstrip()[len(BLOCK_QUOTE) :])
        lines = [first]
        while lines[-1].endswith("\\"):
            lines[-1] = lines[-1][:-1]
            line = self._next_line("\n".join(lines))
            if line is None:
                break
            lines.append(line)
        return "\n".join(lines)

    def _read_block(self, first: str) -> str:
        lines, line = [], first
        while not line.rstrip().endswith(BLOCK_QUOTE):
            lines.append(line)
            next_line = self._next_line("\n".join(lines))
            if next_line is None:
                return "\n".join(lines).strip("\n")
            line = next_line
        lines.append(line.rstrip()[: -len(BLOCK_QUOTE)])
        return "\n".join(lines).strip("\n")

    def _next_line(self, so_far: str) -> str | None:
        """The entry's next line; None when Ctrl-D ends an entry that has text
        (it is sent, not thrown away). Ctrl-D on an empty one still leaves."""
        try:
            return input(self.continuation)
        except EOFError:
            if not so_far.strip():
                raise
            self.ended_by_eof = True
            return None

    def ask(self, question: str) -> str:
        """One line of answer, left out of the history."""
        before = self._history_length()
        answer = input(question)
        if self.readline is not None and self._history_length() > before:
            self.readline.remove_history_item(self._history_length() - 1)
        return answer

    def _history_length(self) -> int:
        return self.readline.get_current_history_length() if self.readline else 0

    def _save_history(self, before: int) -> None:
        if self.readline is None or self.history_path is None:
            return
        added = self.readline.get_current_history_length() - before
        if added > 0:
            try:  # appended entry by entry, so a crash loses nothing typed before it
                self.readline.append_history_file(added, self.history_path)
            except OSError as exc:  # stop trying; the chat itself goes on
                self.problem = _not_kept(f"cannot write {self.history_path}: {exc.strerror}")
                self.history_path = None


class ChatSession:
    """A chat with one agent, until /exit or Ctrl-D."""

    def __init__(
        self,
        agent: Agent,
        workspace: Workspace,
        *,
        console: Console | None = None,
        verbose: bool = False,
        history_path: Path | None = None,
    ) -> None:
        self.agent = agent
        self.workspace = workspace  # the agent's database: its token usage, /dump, /model
        self.console = console or Console(highlight=False)
        self.verbose = verbose
        self.running = True
        # Calls waiting for approval, to ask about before the next entry.
        self.waiting: list[ToolCall] = []
        # Piped input (a script, a file): no prompts, no spinner, no footer;
        # the replies, one after the other, are the output.
        self.piped = not sys.stdin.isatty()
        interactive = not self.piped and self.console.is_terminal
        if history_path is None and interactive:
            history_path = home_dir() / HISTORY_FILENAME
        # readline only for a person at a terminal: piped input needs no line
        # editing, and readline may write escape codes to a non-terminal.
        self.reader = LineReader(history_path if interactive else None, prompts=not self.piped)

    @property
    def fancy(self) -> bool:
        """Colours, markdown and spinners: only on a real terminal."""
        return self.console.is_terminal and not self.console.is_dumb_terminal

    def print(self, text: str = "", style: str | None = None) -> None:
        """Print text as it is (no markup), in `style` on a terminal."""
        self.console.print(Text(text, style=style or ""), soft_wrap=True)

    def error(self, message: str) -> None:
        self.print(f"Error: {message}", "red")

    def run(self) -> None:
        state = self.agent.state
        if not self.piped:
            self.print(
                f"Chatting with {state.name} ({state.llm.model}). Type /help for commands, "
                "Ctrl-D to leave.",
                "dim",
            )
        self.note_unanswered()
        self.waiting = self.agent.pending_approvals()  # left waiting by an earlier session
        while self.running:
            if self.waiting:
                self.ask_approvals()
                continue  # the step it continued may ask again
            if self.reader.problem is not None:
                self.print(self.reader.problem, "yellow")
                self.reader.problem = None
            try:
                entry = self.reader.read()
            except KeyboardInterrupt:
                self.print()  # Ctrl-C at the prompt: drop the line, ask again
                continue
            except EOFError:
                if not self.piped:
                    self.print()  # the line Ctrl-D left the cursor on
                break
            if self.reader.ended_by_eof and not self.piped:
                self.print()
                self.print("(Ctrl-D ended the entry: sending what you typed)", "dim")
            try:
                self.handle(entry)
            except KeyboardInterrupt:
                self.cancelled()
            except MemGPTError as exc:
                self.error(str(exc))

    def handle(self, entry: str) -> None:
        text = entry.strip()
        if not text:
            return
        if text.startswith("//"):  # a message that starts with a slash
            self.send(entry.strip()[1:])
        elif text.startswith("/"):
            name, *rest = text[1:].split(maxsplit=1) or [""]
            run_command(self, name, rest[0] if rest else "")
        else:
            self.send(entry)

    def confirm(self, question: str) -> bool:
        """Ask a yes/no question; no, unless the answer starts with y."""
        try:
            answer = self.reader.ask(f"{question} [y/N] ")
        except (EOFError, KeyboardInterrupt):
            self.print()
            return False
        return answer.strip().lower().startswith("y")

    # Approvals

    def ask_approvals(self) -> None:
        """Ask about each call in `waiting`, then go on with the step. Ctrl-C
        or Ctrl-D at a question leaves them all waiting: nothing runs."""
        calls, self.waiting = self.waiting, []
        answers = []
        try:
            for call in calls:
                answers.append(self._ask_about(call))
        except (EOFError, KeyboardInterrupt):
            self.tell()  # the line the question left the cursor on
            names = ", ".join(dict.fromkeys(call.name for call in calls))
            what = f"{names} still waits" if len(calls) == 1 else f"{names} calls still wait"
            self.tell(f"Not answered: {what}; /approve or /deny [reason] answers.")
            return
        self.answer(answers)

    def _ask_about(self, call: ToolCall) -> Approval:
        self.tell(f"{self.agent.state.name} wants to run {call_text(call)}", "bold yellow")
        # By id: the answer is to this call, not to whatever else may wait.
        if self._ask("Approve? [y/N] ").strip().lower().startswith("y"):
            return Approval(approve=True, tool_call_id=call.id)
        reason = self._ask("Reason for the agent (optional): ").strip()
        return Approval(approve=False, reason=reason, tool_call_id=call.id)

    def tell(self, text: str = "", style: str | None = None) -> None:
        """Print what the user is asked, and about what: on stderr when the
        chat is piped, where stdout carries the replies only."""
        if not self.piped:
            self.print(text, style)
            return
        print(text, file=sys.stderr, flush=True)

    def _ask(self, question: str) -> str:
        if not self.piped:
            return self.reader.ask(question)
        print(question, end="", file=sys.stderr, flush=True)
        return self.reader.ask("")  # input() would write its prompt to stdout

    # Model calls

    def call_model(self, what: str, work: Callable[[], T]) -> T | None:
        """Run `work` (which calls the model) under a spinner with the elapsed
        time. Ctrl-C cancels it: returns None."""
        try:
            if not self.fancy or self.piped:
                return work()
            with self.console.status(_Elapsed(what), spinner="dots"):
                return work()
        except KeyboardInterrupt:
            self.cancelled()
            return None

    def cancelled(self) -> None:
        # The step's writes are transactions: an interrupted one rolled back,
        # so the history holds whole responses only; the user message is kept.
        self.agent.runner.rollback_interrupted()
        self.print("(cancelled)", "yellow")
        if self.note_unanswered():
            return
        self.print(
            "What was stored stays: /pop removes the last message and anything after it, "
            "/retry sends it again.",
            "dim",
        )

    def send(self, text: str) -> None:
        """Send `text` to the agent and show the step as it happens."""
        self._step(text)

    def answer(self, answers: list[Approval]) -> None:
        """Go on with the step waiting for approval, with the user's
        `answers`, and show it as it happens."""
        self._step(answers)

    def _step(self, step_input: StepInput) -> None:
        """Run a step and show it; a step that ends waiting for approval
        leaves its calls in `waiting`, which the loop asks about next."""
        renderer = StepRenderer(
            self.console,
            self.agent.state.name,
            live=self.fancy and not self.piped,
            markdown=self.fancy and not self.piped,
            verbose=self.verbose,
            replies_only=self.piped,
        )
        try:
            events = self.agent.stream(step_input)
            with renderer:
                last = self._render(events, renderer)
        except KeyboardInterrupt:
            self.cancelled()
            return
        except MemGPTError as exc:  # before the step began: no API key, an empty message
            self.error(str(exc))
            return
        if isinstance(last, StepFailed):
            self.error(last.message)
            self.note_unanswered()
        elif isinstance(last, StepFinished):
            if last.result.stop_reason == "approval_required":
                self.waiting = list(last.result.pending_approvals)
            self.finished(last.result)

    @staticmethod
    def _render(events: Iterator[StepEvent], renderer: StepRenderer) -> StepEvent | None:
        """Feed the events to the renderer; the last one. Closing the stream
        however this ends stops the step cleanly (a Ctrl-C may land here, in
        the rendering, rather than in the step)."""
        last = None
        try:
            for last in events:
                renderer.show(last)
        finally:
            if isinstance(events, Generator):
                events.close()
        return last

    def note_unanswered(self) -> bool:
        """Say so when the user's last message went unanswered; True if it did."""
        note = self.agent.history.unanswered_note("/retry", "/pop")
        if note:
            self.print(note, "yellow")
        return note is not None

    # What a step showed

    def finished(self, result: StepResult) -> None:
        if self.piped:
            return  # the replies are the output
        if not result.replies and not self.waiting:
            self.print(
                f"({self.agent.state.name} ended its turn without a reply: {result.stop_reason})",
                "dim",
            )
            self.note_unanswered()  # so the message is left out: say how to send it again
        self.footer(result)

    def footer(self, result: StepResult) -> None:
        view = self.agent.context_overview()
        used = 100 * view.total_tokens / view.context_window
        model = self.agent.state.llm.model
        totals = self.workspace.usage_by_model(self.agent.state.id)
        spent = total_cost(totals)
        total = f"{sum(t.total_tokens for t in totals):,} tokens in all"
        parts = [
            f"{view.total_tokens:,}/{view.context_window:,} tokens in context ({used:.0f}%)",
            f"this turn: {turn_cost_text(model, result.usage)} in {result.usage.requests} "
            f"call(s), {result.llm_seconds:.1f}s",
            total if spent is None else f"{total}, {dollars(spent)}",
        ]
        if result.compactions:
            parts.append(f"compacted {result.compactions}x")
        if result.memory_warnings:
            parts.append("memory pressure alert sent")
        self.print(" · ".join(parts), "dim")
