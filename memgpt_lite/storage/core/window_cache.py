"""Messages read back from rows, and each agent's window kept in memory,
for every backend.

Every turn reads the whole context window (`Storage.window`),
thousands of messages of which only the last few are new. `WindowCache`
keeps what the last read found, as immutable records, and a read fetches
only the rows stored since, with what tells that nothing it holds changed:

- an edit or deletion of any of the agent's messages moves its stamp (SQLite:
  the `message_edits` table, kept by a trigger, its migration m009;
  PostgreSQL: `agents.message_edits`, moved by the store's own edits and
  deletions as they move the counters, its m011): the whole window is read
  again;
- appends are the rows past the last one seen (`_Window.top`), as many as
  `message_count` grew by (SQLite numbers a new row past every row there is;
  PostgreSQL's writes lock the agent's row before a row takes its seq, so one
  agent's rows commit in seq order; a row stored with a seq of its own, by
  another program, reads the whole window again);
- a window start before the one held reads it again; a later one (compaction
  moved it) drops what fell out.

An agent's conversations (storage/core/conversations.py) each have a window
of their own, kept under its own key (the agent's id for its default
conversation, a conversation's id for another), so that several busy
conversations do not evict or invalidate each other: the count is the
agent's, so the rows read past `top` are weighed against it as a whole. A
read in the default conversation reads the agent's new rows of every
conversation (the one statement it sent before conversations) and keeps
its own; a read in another conversation reads its own rows and, after
them, how many rows the agent has in that span and the highest seq
(`WindowRead.span`), so that one idle while others talked reads no more
than its own. A whole read (from the window's start) reads the
conversation's rows and, after them, the agent's highest seq: `top` is
then never below a row the count counted.

So this holds whichever process or store changed the rows. What a read
keeps is read in one snapshot (SQLite), or its stamp and count before its
rows (PostgreSQL, one round trip: a change committed in between makes the
next read's check fail), and only outside a write transaction, so the cache
only ever holds committed states (a rolled-back stamp can be given again, a
committed one never).

A read gives out the messages it keeps, read-only (`KeptMessage`: setting
a field, or changing the list of tool calls or a call, raises), so every
reader of the window is handed the same objects and none can change what
another reads; a caller that wants to change messages asks for copies
(`copies=True`, what `Storage.messages_from` gives), made from the records.
Building thousands of objects per turn cost more than the rest of the turn,
its garbage collections above all; and a message that comes back as the same
object lets the token counter reuse what it built for it
(`TokenCounter.sent`). (The messages used to be handed out changeable and
compared on every read with a copy of what they held, which cost a third
of a 3,468-message turn, mostly walking memory the rest of the turn had
evicted from the caches.)
"""

from __future__ import annotations

from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from memgpt_lite.frozen import KeptMessage
from memgpt_lite.models import Message
from memgpt_lite.storage.core.rows import (
    CONVERSATION_AT,
    Record,
    kept_message_from_record,
    message_from_record,
    record_from_row,
)
from memgpt_lite.storage.core.rows import message_from_row as message_from_row

# Windows of this many agents (or conversations) are kept per store, the
# most recently read. A server steps all its agents through one store: with
# 8, ten busy agents evicted each other and every step read and counted its
# window anew (180 token encodes per step instead of 12). A window is its
# working window's messages, a few hundred kB at most, so 128 of them stay
# well under 100 MB.
MAX_AGENTS = 128
_SEQ = 0  # where a row of MESSAGE_COLUMNS has its seq


class _Held:
    """Messages kept, oldest first, with the records they were made from. A
    read that keeps what it finds changes the kept one in place; any other
    read changes a copy (`since`)."""

    __slots__ = ("records", "messages")

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.messages: list[KeptMessage] = []

    def hand_out(self, record: Record) -> None:
        """Append the message of `record`."""
        self.records.append(record)
        self.messages.append(kept_message_from_record(record))

    def since(self, start: int, in_place: bool) -> _Held:
        """The messages with `seq >= start`: these, the others dropped
        (`in_place`), or a copy (a kept window's, which must not change)."""
        at = bisect_left(self.records, start, key=_seq)
        if in_place:
            del self.records[:at], self.messages[:at]  # no copy of what stays
            return self
        held = _Held()
        held.records, held.messages = self.records[at:], self.messages[at:]
        return held


@dataclass(frozen=True)
class _Window:
    """A conversation's messages from `start` on, as a committed state had them."""

    start: int
    stamp: Any  # the agent's edit stamp, as `WindowRead` gives it
    count: int  # agents.message_count
    top: int  # the agent's highest seq then (-1: none), at or past every row counted
    held: _Held  # changed only by the read that replaces this window


class WindowCache:
    """The last window read of up to `MAX_AGENTS` agents (or conversations:
    a key is `window_key`'s). Not thread-safe: the store calls it holding
    its lock. The store reads what `read` needs (in one snapshot, or the
    stamp and count before the rows): the agent's edit stamp, its
    `message_count`, and its rows from `rows_from`."""

    def __init__(self) -> None:
        self._windows: OrderedDict[str, _Window] = OrderedDict()

    def rows_from(self, key: str, start: int) -> int:
        """Where a read of the window from `start` needs its rows from: past
        the last row seen, when the window kept covers `start`; else `start`,
        the whole window (a read `whole` is to be)."""
        window = self._windows.get(key)
        if window is None or window.start > start:
            return start
        return max(start, window.top + 1)

    def read(
        self,
        key: str,
        start: int,
        found: WindowRead,
        read_all: Callable[[], WholeRead],
        keep: bool,
        copies: bool = False,
    ) -> list[Message]:
        """The window's messages with `seq >= start`, oldest first, from what
        the store `found`: the kept, read-only ones, or new `copies` a caller
        may change. `read_all()` reads the rows from `start` (and the span
        after them) when these do not account for every change. `keep` only
        when what was read is committed state alone (no write transaction of
        the store is open)."""
        window = self._windows.get(key)
        extended = None
        if not found.whole(start) and window is not None and window.stamp == found.stamp:
            in_place = keep and found.count is not None  # it replaces the kept window
            try:
                extended = _extended(window, start, found, in_place)
            except BaseException:
                self._windows.pop(key, None)  # it may be half changed
                raise
        if extended is None:
            rows, top = (found.rows, found.top()) if found.whole(start) else read_all()
            held = _Held()
            for row in rows:
                held.hand_out(record_from_row(row))
        else:
            held, top = extended
        if keep and found.count is not None:
            self._windows[key] = _Window(start, found.stamp, found.count, top, held)
            self._windows.move_to_end(key)
            while len(self._windows) > MAX_AGENTS:
                self._windows.popitem(last=False)
        elif found.count is None:  # the agent is gone
            self._windows.pop(key, None)
        if copies:
            return [message_from_record(record) for record in held.records]
        return list(held.messages)


Span = tuple[int, "int | None"]  # count(*) and max(seq) of the agent's rows read


class WindowRead(NamedTuple):
    """What a store read for `WindowCache.read`."""

    stamp: Any  # the agent's edit stamp (None on SQLite until a first edit)
    count: int | None  # agents.message_count (None: no such agent)
    rows_from: int  # `WindowCache.rows_from`
    # The window's rows (`MESSAGE_COLUMNS`) from there, by seq; with no
    # `span`, the agent's rows of every conversation, of which the rows of
    # the default conversation are the window's.
    rows: Sequence[Sequence[Any]]
    # How many rows the agent has from `rows_from` and its highest seq,
    # read after `rows` (None: count `rows`).
    span: Span | None = None

    def whole(self, start: int) -> bool:
        """Whether these are the window's rows from `start`, all of them."""
        return self.rows_from == start

    def top(self) -> int:
        """The agent's highest seq read (-1: none)."""
        if self.span is None:
            return self.rows[-1][_SEQ] if self.rows else -1
        return -1 if self.span[1] is None else self.span[1]


class WholeRead(NamedTuple):
    """A window read from its start, for `WindowCache.read`: its rows, and
    the agent's highest seq read after them (-1: none)."""

    rows: Iterable[Sequence[Any]]
    top: int


def _extended(
    window: _Window, start: int, found: WindowRead, in_place: bool
) -> tuple[_Held, int] | None:
    """`window` from `start` on plus the rows appended since, and the highest
    seq now seen; None when they do not account for every change (see the
    module's docstring). The window's own lists are changed `in_place`,
    else a copy."""
    if found.count is None:
        return None
    added = len(found.rows) if found.span is None else found.span[0]
    if added != found.count - window.count:  # one stored out of order
        return None
    held = window.held.since(start, in_place)
    for row in found.rows:
        if found.span is not None or row[CONVERSATION_AT] is None:
            held.hand_out(record_from_row(row))
    return held, max(window.top, found.top())


def _seq(record: Record) -> int:
    return record.seq
