"""Messages read back from rows, and each agent's window kept in memory,
for every backend.

Every turn reads the whole context window (`Storage.messages_from`),
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

A read hands out the `Message` objects the last one did, after checking that
each still holds what it was given (a caller may have changed one: it is
made again from its record, so no caller can change what the next one
reads). Building thousands of objects per turn cost more than the rest of
the turn, its garbage collections above all; and a message that comes back
as the same object lets the token counter reuse what it built for it
(`TokenCounter.sent`).

That check runs over the whole window on every read, so it is made in C,
with no Python call per message (`_Held.as_handed_out`): each message's
`__dict__` is compared with a copy taken when it was handed out, whose
`tool_calls` is a copy of the list (so a list changed in place differs
from it), and each tool call's `__dict__` with a copy of its own (the list
and its tool calls are the only mutable values the store gives a message).
Compared by value, as `==` compares them: a field set to an equal value is
no change. Only when something differs does a Python loop find which
messages to make again. On a 3,468-message window, a Python call per
message checking the same took about a third of the whole turn; in C the
check is mostly the memory it walks (nothing else touches the kept
messages between turns), so a read that keeps its window extends it in
place instead of copying it, and the agent id, role and tool names of
every message are one shared string each.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, NamedTuple

from memgpt_lite.models import Message, ToolCall
from memgpt_lite.storage.core.rows import Record, message_from_record, record_from_row
from memgpt_lite.storage.core.rows import message_from_row as message_from_row

# Windows of this many agents are kept per store, the most recently read. A
# server steps all its agents through one store: with 8, ten busy agents
# evicted each other and every step read and counted its window anew (180
# token encodes per step instead of 12). A window is its working window's
# messages, a few hundred kB at most, so 128 of them stay well under 100 MB.
MAX_AGENTS = 128

_dict_of = attrgetter("__dict__")


class _Held:
    """Messages handed out, oldest first, with what each held then: a copy
    of its `__dict__` (`states`, its `tool_calls` a copy of the list), and of
    each of its tool calls' (`calls`, all of the window's in one list, and
    `call_states`). A read that keeps what it finds changes the kept one in
    place; any other read changes a copy (`since`)."""

    __slots__ = ("records", "messages", "states", "calls", "call_states", "call_seqs")

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.messages: list[Message] = []
        self.states: list[dict[str, Any]] = []
        self.calls: list[ToolCall] = []
        self.call_states: list[dict[str, Any]] = []
        self.call_seqs: list[int] = []  # the seq of each call's message

    def hand_out(self, record: Record) -> None:
        """Append a new message made from `record`."""
        message = message_from_record(record)
        state = dict(message.__dict__)
        state["tool_calls"] = list(message.tool_calls)
        self.records.append(record)
        self.messages.append(message)
        self.states.append(state)
        for call in message.tool_calls:
            self.calls.append(call)
            self.call_states.append(dict(call.__dict__))
            self.call_seqs.append(record.seq)

    def since(self, start: int, in_place: bool) -> _Held:
        """The messages with `seq >= start`: these, the others dropped
        (`in_place`), or a copy (a kept window's, which must not change)."""
        at = bisect_left(self.records, start, key=_seq)
        call_at = bisect_left(self.call_seqs, start)
        held = self if in_place else _Held()
        for name in self.__slots__:
            items: list[Any] = getattr(self, name)
            drop = call_at if name.startswith("call") else at
            if in_place:
                del items[:drop]  # no copy: touching every kept object cost more
            else:
                setattr(held, name, items[drop:])
        return held

    def as_handed_out(self) -> bool:
        """Whether every message still holds what it was given, compared by
        value: a list comparison of the `__dict__`s with their copies, of the
        messages and of their tool calls, all in C."""
        return (
            list(map(_dict_of, self.messages)) == self.states
            and list(map(_dict_of, self.calls)) == self.call_states
        )

    def remake_changed(self) -> None:
        """Make each message that no longer holds what it was given again,
        from its record (with new tool calls: a caller may hold the old)."""
        first_call = 0
        for i, record in enumerate(self.records):
            calls = slice(first_call, first_call + len(record.tool_calls))  # one per stored call
            first_call = calls.stop
            if self.messages[i].__dict__ == self.states[i] and all(
                map(_same_dict, self.calls[calls], self.call_states[calls])
            ):
                continue
            remade = _Held()
            remade.hand_out(record)
            self.messages[i], self.states[i] = remade.messages[0], remade.states[0]
            self.calls[calls], self.call_states[calls] = remade.calls, remade.call_states


def _same_dict(model: ToolCall, state: dict[str, Any]) -> bool:
    return model.__dict__ == state


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
    ) -> list[Message]:
        """The agent's messages with `seq >= start`, oldest first, from what
        the store `found`; `read_all()` reads the rows from `start` when these
        do not account for every change. `keep` only when what was read is
        committed state alone (no write transaction of the store is open)."""
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
        return list(held.messages)


class WindowRead(NamedTuple):
    """What a store read for `WindowCache.read`."""

    stamp: Any  # the agent's edit stamp (None on SQLite until a first edit)
    count: int | None  # agents.message_count (None: no such agent)
    rows_from: int  # `WindowCache.rows_from`
    rows: list[Sequence[Any]]  # the agent's rows (`MESSAGE_COLUMNS`) from there, by seq


def _extended(window: _Window, start: int, found: WindowRead, in_place: bool) -> _Held | None:
    """`window` from `start` on plus the rows appended since, or None when
    they do not account for every change (see the module's docstring). A
    message a caller changed is handed out anew, from its record. The
    window's own lists are changed `in_place`, else a copy."""
    if found.count is None:
        return None
    if len(found.rows) != found.count - window.count:  # one stored out of order
        return None
    held = window.held.since(start, in_place)
    if not held.as_handed_out():
        held.remake_changed()
    for row in found.rows:
        held.hand_out(record_from_row(row))
    return held


def _seq(record: Record) -> int:
    return record.seq
