"""Messages read back from rows, and each agent's window kept in memory.

Every turn reads the whole context window (`Store.messages_from`), thousands
of messages of which only the last few are new. `WindowCache` keeps what the
last read found, as immutable records, and a read fetches only the rows
stored since, after checking in one query that nothing it holds changed:

- an edit or deletion of any of the agent's messages moves its stamp in
  `message_edits` (a trigger, migration m009): the whole window is read again;
- appends are the rows past the last one held, as many as `message_count`
  grew by (SQLite numbers a new row past every row there is; a row stored
  with a seq of its own, by another program, reads the whole window again);
- a window start before the one held reads it again; a later one (compaction
  moved it) drops what fell out.

Triggers keep the stamp and the count for every connection, so this holds
whichever process or `Store` changed the rows. What a read keeps is read in
one snapshot and only outside a write transaction, so the cache only ever
holds committed states (a rolled-back stamp can be given again, a committed
one never).

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
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from sqlite_utils import Database

from memgpt_lite.models import Message, ToolCall
from memgpt_lite.storage.core.rows import (
    MESSAGE_COLUMNS,
    Record,
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

_STAMP = (
    "SELECT (SELECT stamp FROM message_edits WHERE agent_id = ?),"
    " (SELECT message_count FROM agents WHERE id = ?)"
)
_FROM = (
    f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.agent_id = ? AND m.seq >= ? ORDER BY m.seq"
)
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
    stamp: int | None  # message_edits.stamp: None until a first edit
    count: int  # agents.message_count
    held: _Held  # changed only by the read that replaces this window


class WindowCache:
    """The last window read of up to `MAX_AGENTS` agents. Not thread-safe:
    the store calls it holding its lock."""

    def __init__(self) -> None:
        self._windows: OrderedDict[str, _Window] = OrderedDict()

    def read(self, db: Database, agent_id: str, start: int, keep: bool) -> list[Message]:
        """The agent's messages with `seq >= start`, oldest first. Call it in
        one snapshot; `keep` only when that snapshot holds committed state
        alone (no write transaction of this connection is open)."""
        stamp, count = db.execute(_STAMP, [agent_id, agent_id]).fetchone()
        window = self._windows.get(agent_id)
        held = None
        if window is not None and window.stamp == stamp and window.start <= start:
            in_place = keep and count is not None  # it replaces the kept window
            try:
                held = _extended(db, window, agent_id, start, count, in_place)
            except BaseException:
                self._windows.pop(agent_id, None)  # it may be half changed
                raise
        if held is None:
            held = _Held()
            for row in db.execute(_FROM, [agent_id, start]):
                held.hand_out(record_from_row(row))
        if keep and count is not None:
            self._windows[agent_id] = _Window(start, stamp, count, held)
            self._windows.move_to_end(agent_id)
            while len(self._windows) > MAX_AGENTS:
                self._windows.popitem(last=False)
        elif count is None:  # the agent is gone
            self._windows.pop(agent_id, None)
        return list(held.messages)


def _extended(
    db: Database, window: _Window, agent_id: str, start: int, count: int | None, in_place: bool
) -> _Held | None:
    """`window` from `start` on plus the rows appended since, or None when
    they do not account for every change (see the module's docstring). A
    message a caller changed is handed out anew, from its record. The
    window's own lists are changed `in_place`, else a copy."""
    if count is None:
        return None
    records = window.held.records
    after = records[-1].seq + 1 if records else window.start
    rows = db.execute(_FROM, [agent_id, after]).fetchall()
    if len(rows) != count - window.count:  # one stored out of order (not by this store)
        return None
    held = window.held.since(start, in_place)
    if not held.as_handed_out():
        held.remake_changed()
    for row in rows:
        if row[0] >= start:
            held.hand_out(record_from_row(row))
    return held


def _seq(record: Record) -> int:
    return record.seq
