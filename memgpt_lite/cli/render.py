"""A step's events on a terminal, as they happen (`agent.stream(text)`).

`StepRenderer` consumes the events of one step (memgpt_lite/events.py) and prints:
the reply as the model writes it, rendered as markdown; inner thoughts dimmed;
each tool call and its result on one line; a spinner with the seconds elapsed
only while nothing is arriving. It prints nothing of the footer or of errors:
the caller has the step's result (or failure) in the last event.

On a terminal, one `rich.live.Live` region at the bottom holds what is still
being written: the paragraph of the reply in progress, the thought in
progress, or the spinner. Whatever is finished (a paragraph of the reply, a
thought, a tool line) is printed above it for good, so the live region stays
a few lines high and its redraws never flicker through the whole reply.

The model's text streams as `ThoughtDelta` before it is known whether it is a
thought (tool calls follow) or a plain text reply (`ReplyDelivered` with the
same text follows), so it is shown as a thought until one or the other comes.
A `send_message` reply streams as `MessageDelta` and is delivered whole, as
`ReplyDelivered`, after the answer's tools ran.

Without a terminal there is no live region: each thing is printed when it is
finished, in plain text. With `replies_only` (a piped chat), only the replies.
"""

from __future__ import annotations

import json
import time
from types import TracebackType

from rich.console import Console, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.spinner import Spinner
from rich.text import Text

from memgpt_lite.events import (
    MessageDelta,
    ReplyDelivered,
    RequestSent,
    StepEvent,
    StepFailed,
    StepFinished,
    ThoughtDelta,
    ToolCallStarted,
    ToolReturned,
)
from memgpt_lite.models import ToolCall
from memgpt_lite.text import JSONProblem, parse_json

SEND_MESSAGE = "send_message"
# Redraws of the live region per second: smooth enough for text arriving at
# reading speed, and rare enough that re-rendering the paragraph is cheap.
REFRESH_PER_SECOND = 8
THOUGHT_STYLE = "dim italic"
# The spinner comes back only after this long without new text: not for the
# moment between two paragraphs, or between a reply and the end of the step.
QUIET_SECONDS = 0.5
FENCES = ("```", "~~~")


class ReplyMarkdown(Markdown):
    """Markdown that keeps the model's single line breaks: a chat reply's
    lines (an address, a short poem, steps) are meant as written, where
    markdown would join them into one paragraph."""

    def __init__(self, markup: str) -> None:
        super().__init__(markup)
        for token in self.parsed:
            for child in token.children or ():
                if child.type == "softbreak":
                    child.type = "hardbreak"


def finished_length(text: str) -> int:
    """How much of `text` is whole markdown blocks: up to the last blank line
    outside a code fence. The rest may still change as more text arrives."""
    end = position = 0
    in_fence = False
    for line in text.splitlines(keepends=True):
        position += len(line)
        if not line.endswith("\n"):
            break  # the line is still being written
        stripped = line.strip()
        if stripped.startswith(FENCES):
            in_fence = not in_fence
        elif not stripped and not in_fence:
            end = position
    return end


def one_line(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: max(1, width - 1)] + "…"


def pretty_arguments(arguments: str) -> str:
    try:
        return json.dumps(parse_json(arguments), indent=2, ensure_ascii=False)
    except JSONProblem:
        return arguments


class StepRenderer:
    """Shows one step's events on `console`. Use as a context manager around
    the loop that feeds it, so the live region is cleared however it ends:

        with StepRenderer(console, "sam") as renderer:
            for event in agent.stream(text):
                renderer.show(event)
    """

    def __init__(
        self,
        console: Console,
        agent_name: str,
        *,
        live: bool = True,
        markdown: bool = True,
        verbose: bool = False,
        replies_only: bool = False,
    ) -> None:
        self.console = console
        self.agent_name = agent_name
        self.markdown = markdown
        self.verbose = verbose
        self.replies_only = replies_only and not verbose
        self.thought = ""  # model text not yet known to be a thought or a reply
        self.message = ""  # send_message text streamed and not yet delivered
        self.message_shown = 0  # how much of `message` is printed for good
        self.blocks_shown = 0  # reply blocks printed since the last delivery
        self.running_tool: str | None = None
        self.calls: dict[str, ToolCall] = {}  # by id, for the tool lines
        self.started = time.monotonic()  # when the spinner's wait began
        self.last_text_at = 0.0  # when the model's text last arrived
        self.spinner = Spinner("dots", style="dim")
        self.live = (
            Live(
                console=console,
                get_renderable=self._live_view,
                refresh_per_second=REFRESH_PER_SECOND,
                transient=True,
                # What else prints meanwhile (a step waiting for another of
                # its agent says so on stderr) goes above the region, not through it.
                redirect_stdout=True,
                redirect_stderr=True,
            )
            if live
            else None
        )

    def __enter__(self) -> StepRenderer:
        if self.live is not None:
            self.live.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.live is not None:
            self.live.stop()
        if kind is not None:  # cancelled or broken off: keep what was on screen
            self._flush_unfinished()

    # Events

    def show(self, event: StepEvent) -> None:
        was_waiting, tool = self._waiting(), self.running_tool
        self._take(event)
        if self._waiting() and (not was_waiting or tool != self.running_tool):
            self.started = time.monotonic()  # the spinner counts this wait's seconds

    def _take(self, event: StepEvent) -> None:
        if isinstance(event, ThoughtDelta | MessageDelta):
            self.last_text_at = time.monotonic()
        if isinstance(event, ThoughtDelta):
            self.thought += event.text
        elif isinstance(event, MessageDelta):
            self._flush_thought()
            self.message += event.text
            self._print_finished_blocks()
        elif isinstance(event, ToolCallStarted):
            self._flush_thought()
            self.calls[event.call.id] = event.call
            if event.call.name != SEND_MESSAGE:
                self.running_tool = event.call.name
        elif isinstance(event, ToolReturned):
            self._tool_returned(event)
        elif isinstance(event, ReplyDelivered):
            self._deliver(event.text)
        elif isinstance(event, RequestSent):
            self.thought = self.message = ""  # text of an answer that was retried
            self.message_shown = self.blocks_shown = 0
        elif isinstance(event, StepFinished | StepFailed):
            self._flush_unfinished()

    def _waiting(self) -> bool:
        return not self.thought and not self.message[self.message_shown :]

    def _tool_returned(self, event: ToolReturned) -> None:
        self.running_tool = None
        if event.name == SEND_MESSAGE and event.ok:
            return  # the reply itself follows as ReplyDelivered
        if event.name == SEND_MESSAGE:
            self.message, self.message_shown = "", 0  # not delivered: the model is told why
        if not self.replies_only:
            self._print_tool(event)

    def _deliver(self, text: str) -> None:
        # Text still pending as a thought with no tool call after it was a
        # plain text answer: this reply.
        self.thought = ""
        if self.message.startswith(text):
            rest = text[self.message_shown :] if self.message_shown <= len(text) else ""
            self.message = self.message[len(text) :]
            self.message_shown = max(0, self.message_shown - len(text))
        else:  # arrived otherwise than streamed (or not streamed at all)
            rest = text if not self.message_shown else text[self.message_shown :]
            self.message, self.message_shown = "", 0
        if rest.strip() or not self.blocks_shown:
            self._print_reply(rest)
        self.blocks_shown = 0

    # Printing for good, above the live region

    def _print_finished_blocks(self) -> None:
        if self.live is None:
            return  # without a terminal, the reply is printed whole when delivered
        end = finished_length(self.message)
        if end > self.message_shown:
            # Moved out of the live region before printing: printing redraws
            # the region, which must not show the same text a second time.
            finished, self.message_shown = self.message[self.message_shown : end], end
            self._print_reply(finished)

    def _print_reply(self, text: str) -> None:
        text = text.strip("\n")
        if self.markdown:
            if self.blocks_shown:
                self._print()  # the blank line markdown puts between blocks
            self._print(ReplyMarkdown(text))
        else:
            self._print(Text(text), soft_wrap=True)
        self.blocks_shown += 1

    def _print(self, *renderables: RenderableType, soft_wrap: bool = False) -> None:
        """Print above the live region for good. The region is redrawn below
        what is printed from its last refresh, so it is refreshed first: else
        it would show again, for a moment, text just moved out of it."""
        if self.live is not None:
            self.live.refresh()
        self.console.print(*renderables, soft_wrap=soft_wrap)

    def _flush_thought(self) -> None:
        thought, self.thought = self.thought, ""  # out of the live region first
        if thought and not self.replies_only:
            self._print(Text(f"thought: {thought}", THOUGHT_STYLE), soft_wrap=True)

    def _flush_unfinished(self) -> None:
        """What was still being written when the step broke off, dimmed: it
        was seen, and it was not delivered."""
        self._flush_thought()
        rest = self.message[self.message_shown :].strip("\n")
        self.message, self.message_shown = "", 0
        if rest and not self.replies_only:
            self._print(Text(rest, "dim"), soft_wrap=True)

    def _print_tool(self, event: ToolReturned) -> None:
        mark, style = ("ok", "dim") if event.ok else ("failed", "red dim")
        arguments = self._arguments_of(event)
        if self.verbose:
            text = f"tool {event.name} ({mark})\n{pretty_arguments(arguments)}\n-> {event.content}"
            self._print(Text(text, style), soft_wrap=True)
            return
        width = self.console.width
        half = max(20, (width - len(event.name) - 16) // 2)
        line = f"tool {event.name}({one_line(arguments, half)}) -> {one_line(event.content, half)}"
        self._print(Text(one_line(line, width - 1), style), soft_wrap=True)

    def _arguments_of(self, event: ToolReturned) -> str:
        call = self.calls.get(event.call_id)
        return call.arguments if call is not None else ""

    # The live region

    def _live_view(self) -> RenderableType:
        pending = self.message[self.message_shown :].strip("\n")
        if pending:
            return ReplyMarkdown(pending) if self.markdown else Text(pending)
        if self.thought:
            return Text(f"thought: {self.thought}", THOUGHT_STYLE)
        if time.monotonic() - self.last_text_at < QUIET_SECONDS and not self.running_tool:
            return Text("")
        what = (
            f"running {self.running_tool}…"
            if self.running_tool
            else f"{self.agent_name} is thinking…"
        )
        self.spinner.update(text=Text(f"{what} {time.monotonic() - self.started:.0f}s", "dim"))
        return self.spinner
