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
- appends are the rows past the last one held, as many as `message_count`
  grew by (SQLite numbers a new row past every row there is; PostgreSQL's
  writes lock the agent's row before a row takes its seq, so one agent's
  rows commit in seq order; a row stored with a seq of its own, by another
  program, reads the whole window again);
- a window start before the one held reads it again; a later one (compaction
  moved it) drops what fell out.

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
    Record,
    kept_message_from_record,
    message_from_record,
    record_from_row,
)
from memgpt_lite.storage.core.rows import message_from_row as message_from_row

# Windows of this many agents are kept per store, the most recently read. A
# server steps all its agents through one store: with 8, ten busy agents
# evicted each other and every step read and counted its window anew (180
# token encodes per step instead of 12). A window is its working window's
# messages, a few hundred kB at most, so 128 of them stay well under 100 MB.
MAX_AGENTS = 128


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
    """An agent's messages from `start` on, as a committed state had them."""

    start: int
    stamp: Any  # the agent's edit stamp, as `WindowRead` gives it
    count: int  # agents.message_count
    held: _Held  # changed only by the read that replaces this window


class WindowCache:
    """The last window read of up to `MAX_AGENTS` agents. Not thread-safe:
    the store calls it holding its lock. The store reads what `read` needs
    (in one snapshot, or the stamp and count before the rows): the agent's
    edit stamp, its `message_count`, and its rows from `rows_from`."""

    def __init__(self) -> None:
        self._windows: OrderedDict[str, _Window] = OrderedDict()

    def rows_from(self, agent_id: str, start: int) -> int:
        """Where a read of the agent's window from `start` needs its rows
        from: past the last message kept, when the window kept covers
        `start`; else `start`, the whole window."""
        window = self._windows.get(agent_id)
        if window is None or window.start > start or not window.held.records:
            return start
        return max(start, window.held.records[-1].seq + 1)

    def read(
        self,
        agent_id: str,
        start: int,
        found: WindowRead,
        read_all: Callable[[], Iterable[Sequence[Any]]],
        keep: bool,
        copies: bool = False,
    ) -> list[Message]:
        """The agent's messages with `seq >= start`, oldest first, from what
        the store `found`: the kept, read-only ones, or new `copies` a caller
        may change. `read_all()` reads the rows from `start` when these do not
        account for every change. `keep` only when what was read is committed
        state alone (no write transaction of the store is open)."""
        window = self._windows.get(agent_id)
        held = None
        if found.rows_from != start and window is not None and window.stamp == found.stamp:
            in_place = keep and found.count is not None  # it replaces the kept window
            try:
                held = _extended(window, start, found, in_place)
            except BaseException:
                self._windows.pop(agent_id, None)  # it may be half changed
                raise
        if held is None:
            held = _Held()
            for row in found.rows if found.rows_from == start else read_all():
                held.hand_out(record_from_row(row))
        if keep and found.count is not None:
            self._windows[agent_id] = _Window(start, found.stamp, found.count, held)
            self._windows.move_to_end(agent_id)
            while len(self._windows) > MAX_AGENTS:
                self._windows.popitem(last=False)
        elif found.count is None:  # the agent is gone
            self._windows.pop(agent_id, None)
        if copies:
            return [message_from_record(record) for record in held.records]
        return list(held.messages)


class WindowRead(NamedTuple):
    """What a store read for `WindowCache.read`."""

    stamp: Any  # the agent's edit stamp (None on SQLite until a first edit)
    count: int | None  # agents.message_count (None: no such agent)
    rows_from: int  # `WindowCache.rows_from`
    rows: list[Sequence[Any]]  # the agent's rows (`MESSAGE_COLUMNS`) from there, by seq


def _extended(window: _Window, start: int, found: WindowRead, in_place: bool) -> _Held | None:
    """`window` from `start` on plus the rows appended since, or None when
    they do not account for every change (see the module's docstring). The
    window's own lists are changed `in_place`, else a copy."""
    if found.count is None:
        return None
    if len(found.rows) != found.count - window.count:  # one stored out of order
        return None
    held = window.held.since(start, in_place)
    for row in found.rows:
        held.hand_out(record_from_row(row))
    return held


def _seq(record: Record) -> int:
    return record.seq
