"""Which user messages went unanswered: their step stopped before a reply
reached the user.

A step answers its user message when a reply the user saw is stored in it:
a send_message call whose result was stored without an error, or a final
assistant text. The loop stores a call and its result in one transaction,
so a step killed at any point leaves exactly this to read: killed before
the model answered, after tool calls that did not reply, or in a chain of
heartbeats, its user message counts as unanswered; killed after a reply, as
answered. A step that ended without a reply (no heartbeat, the step limit)
is unanswered too: the user saw nothing, and is told so. A step that waits
for the user's approval (a call stored without its result) is not: it goes
on when the user answers. Nor is the step in progress.

Unanswered user messages stay stored, but are left out of requests (see
`compile_context`): the user was told and can send the message again
(`retry`) or drop it (`pop`), and the next turn must not answer a heap of
messages the user thought were gone. What the model did in such a step
stays in view: its memory edits stand, and its calls and their results
tell it so.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

from memgpt_lite.llm.object_runs import common_run
from memgpt_lite.models import SEND_MESSAGE, Message

# Every failed or denied call's result starts with this (tools/schema.py,
# loop/approvals.py, loop/step.py); a reply whose result does is not delivered.
_FAILED = "Error:"


def delivered_reply(messages: Iterable[Message]) -> bool:
    """Whether the messages of one step hold a reply that reached the user."""
    sends: set[str] = set()
    delivered: set[str] = set()
    for message in messages:
        if message.role == "assistant":
            if not message.tool_calls and message.content:
                return True
            sends.update(c.id for c in message.tool_calls if c.name == SEND_MESSAGE)
        elif (
            message.role == "tool"
            and message.tool_call_id
            and not (message.content or "").startswith(_FAILED)
        ):
            delivered.add(message.tool_call_id)
    return not sends.isdisjoint(delivered)


def _step_unanswered(messages: Sequence[Message]) -> bool:
    """Whether a step's messages (those in the window) hold a user message
    and no reply, and no call waits for its result (an approval)."""
    if not any(m.role == "user" for m in messages) or delivered_reply(messages):
        return False
    calls = {c.id for m in messages if m.role == "assistant" for c in m.tool_calls}
    results = {m.tool_call_id for m in messages if m.role == "tool"}
    return calls <= results


def unanswered_steps(messages: Sequence[Message], step_id: str | None = None) -> set[str]:
    """The steps among `messages` whose user message went unanswered, but
    step `step_id`, the one in progress."""
    steps: dict[str, list[Message]] = {}
    for message in messages:
        if message.step_id is not None and message.step_id != step_id:
            steps.setdefault(message.step_id, []).append(message)
    return {step for step, held in steps.items() if _step_unanswered(held)}


def unanswered(messages: Sequence[Message], step_id: str | None = None) -> list[Message]:
    """The user messages among `messages` whose step stopped before a reply
    reached the user (see the module's docstring), but those of step
    `step_id`, the one in progress; oldest first."""
    asked = unanswered_steps(messages, step_id)
    return [m for m in messages if m.role == "user" and m.step_id in asked] if asked else []


class KeptSteps:
    """What `unanswered` needs of one agent's window, kept between requests
    (compile_context runs it over the whole window on every one): each
    message's step as it came in, the messages of each step, and which steps
    are unanswered. A new window is brought up to date from the messages that
    left the last one and those that entered it, found by object in C
    (`common_run`), and only their steps are looked at again; so a turn walks
    in Python only its new messages and their steps. Same object, same
    content: the store hands out the same read-only object again only while
    its row is unchanged (`Storage.window`)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # a server may compile one agent's context twice at once
        self.messages: list[Message] = []  # the window's, held: compared by object
        self.steps: list[str | None] = []  # the step of each
        self.by_step: dict[str, list[Message]] = {}
        self.unanswered: set[str] = set()

    def unanswered_in(self, messages: Sequence[Message], step_id: str | None) -> list[Message]:
        """`unanswered(messages, step_id)`, from what is kept."""
        with self.lock:
            self._update(messages)
            asked = self.unanswered - {step_id}
            if not asked:
                return []
            return [
                m
                for m, step in zip(messages, self.steps, strict=True)
                if step in asked and m.role == "user"
            ]

    def _update(self, messages: Sequence[Message]) -> None:
        at, run = common_run(self.messages, messages)
        if run == 0:  # nothing kept (a store that hands out new objects): count afresh
            self.messages, self.steps = [], []
            self.by_step.clear()
            self.unanswered.clear()
        touched: set[str] = set()
        for message, step in zip(
            self.messages[:at] + self.messages[at + run :],
            self.steps[:at] + self.steps[at + run :],
            strict=True,
        ):  # those that left
            if step is not None:
                held = self.by_step[step]
                del held[next(i for i, m in enumerate(held) if m is message)]
                touched.add(step)
        del self.messages[at + run :], self.steps[at + run :]
        del self.messages[:at], self.steps[:at]
        for message in messages[run:]:  # those that entered
            step = message.step_id
            if step is not None:
                self.by_step.setdefault(step, []).append(message)
                touched.add(step)
            self.messages.append(message)
            self.steps.append(step)
        for step in touched:
            held = self.by_step.get(step)
            if not held:
                self.by_step.pop(step, None)
            if held and _step_unanswered(held):
                self.unanswered.add(step)
            else:
                self.unanswered.discard(step)
