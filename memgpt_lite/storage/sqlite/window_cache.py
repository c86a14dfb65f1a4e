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
"""

from __future__ import annotations

from bisect import bisect_left
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlite_utils import Database

from memgpt_lite.models import Message
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
_TOOL_CALLS = list(Message.model_fields).index("tool_calls")  # its place in a Message's values


class _Held(NamedTuple):
    """A message handed out, and what it held then (`Message` field values
    in order, then each tool call's), to tell whether a caller changed it."""

    record: Record
    message: Message
    values: tuple[Any, ...]
    calls: tuple[tuple[Any, ...], ...]


def _hand_out(record: Record) -> _Held:
    message = message_from_record(record)
    calls = tuple(tuple(c.__dict__.values()) for c in message.tool_calls)
    return _Held(record, message, tuple(message.__dict__.values()), calls)


def _as_handed_out(held: _Held) -> bool:
    """Whether `held.message` still holds what it was given (compared by
    value: a field set to an equal value is no change)."""
    if tuple(held.message.__dict__.values()) != held.values:
        return False
    tool_calls = held.values[_TOOL_CALLS]  # the list it was given, still there (checked above)
    if len(tool_calls) != len(held.calls):
        return False
    for call, values in zip(tool_calls, held.calls, strict=False):  # lengths checked
        if tuple(call.__dict__.values()) != values:
            return False
    return True


@dataclass(frozen=True)
class _Window:
    """An agent's messages from `start` on, as a committed state had them."""

    start: int
    stamp: int | None  # message_edits.stamp: None until a first edit
    count: int  # agents.message_count
    held: list[_Held]  # never changed once kept: a read makes a new list


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
            held = _extended(db, window, agent_id, start, count)
        if held is None:
            held = [_hand_out(record_from_row(r)) for r in db.execute(_FROM, [agent_id, start])]
        if keep and count is not None:
            self._windows[agent_id] = _Window(start, stamp, count, held)
            self._windows.move_to_end(agent_id)
            while len(self._windows) > MAX_AGENTS:
                self._windows.popitem(last=False)
        elif count is None:  # the agent is gone
            self._windows.pop(agent_id, None)
        return [h.message for h in held]


def _extended(
    db: Database, window: _Window, agent_id: str, start: int, count: int | None
) -> list[_Held] | None:
    """`window` from `start` on plus the rows appended since, or None when
    they do not account for every change (see the module's docstring). A
    message a caller changed is handed out anew, from its record."""
    if count is None:
        return None
    after = window.held[-1].record.seq + 1 if window.held else window.start
    rows = db.execute(_FROM, [agent_id, after]).fetchall()
    if len(rows) != count - window.count:  # one stored out of order (not by this store)
        return None
    kept = window.held[bisect_left(window.held, start, key=_seq) :]
    for i, held in enumerate(kept):
        if not _as_handed_out(held):
            kept[i] = _hand_out(held.record)
    kept.extend(_hand_out(record_from_row(r)) for r in rows if r[0] >= start)
    return kept


def _seq(held: _Held) -> int:
    return held.record.seq
