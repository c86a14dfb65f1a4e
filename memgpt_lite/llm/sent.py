"""What a `TokenCounter` keeps of the last context window it counted: each
message as the request carries it (`RequestMessage`, read-only) and its
tokens, so a turn builds and counts only the messages new to the window.

A turn's window is most often the last one with new messages at its end:
that is found in C (`common_run`, by object) and the kept lists are
extended in place, without walking (or even touching) the messages kept.
A window that lost messages from its front (compaction) drops them; one
that changed within (an edited message comes back from the store as a new
object) is rebuilt, reusing what was built for every message that is
still the very same object.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from memgpt_lite.llm.object_runs import common_run
from memgpt_lite.llm.request_body import RequestMessage

if TYPE_CHECKING:
    from memgpt_lite.models import Message


class Sent(NamedTuple):
    """A stored message as requests carry it, and its tokens."""

    message: Message
    request: RequestMessage
    tokens: int


class SentWindow(NamedTuple):
    """A context window's messages as the request carries them, and the
    tokens of each, in the window's order (lists of the caller's own)."""

    requests: list[RequestMessage]
    tokens: list[int]


class KeptWindow:
    """The last window's messages and what was built for each, as parallel
    lists. Safe to share between threads (a server may compile one agent's
    context twice at once): the lists change under a lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        # The window's message objects: kept alive, so an id() among them is theirs.
        self.messages: list[Message] = []
        self.sents: list[Sent] = []
        self.requests: list[RequestMessage] = []
        self.tokens: list[int] = []

    def update(self, messages: Sequence[Message], build: Callable[[Message], Sent]) -> None:
        """Keep `messages` instead, building (`build`) what is not kept for
        the very same object. Call it holding `lock`."""
        at, run = common_run(self.messages, messages)
        if at + run < len(self.messages):  # changed within: rebuilt, reusing what is the same
            by_object = {id(sent.message): sent for sent in self.sents}
            self.replace(
                [kept if (kept := by_object.get(id(m))) is not None else build(m) for m in messages]
            )
            return
        if at:  # the first `at` left the window
            del self.messages[:at], self.sents[:at], self.requests[:at], self.tokens[:at]
        for message in messages[run:]:
            sent = build(message)
            self.messages.append(message)
            self.sents.append(sent)
            self.requests.append(sent.request)
            self.tokens.append(sent.tokens)

    def replace(self, sents: list[Sent]) -> None:
        """Keep `sents` (their messages, in order) instead."""
        self.messages = [sent.message for sent in sents]
        self.sents = sents
        self.requests = [sent.request for sent in sents]
        self.tokens = [sent.tokens for sent in sents]
