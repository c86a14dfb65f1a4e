"""Messages (recall memory), for every backend.

Reads are the core's: pages of history, messages by seq, by date. A backend
provides the writes, which keep what it keeps beside the rows (SQLite's
triggers keep the full-text index and the agent's counters; PostgreSQL's
writes keep the tsvector, the word counts and the counters themselves), the
full-text ranking (FTS5 against tsvector ranking), and may read the window
through a cache of its own (SQLite's window_cache.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import Message, UsageRecord
from memgpt_lite.storage.core.accounts import ADD_USAGE, usage_values
from memgpt_lite.storage.core.errors import NO_MESSAGE, unknown_agent
from memgpt_lite.storage.core.rows import (
    CONVERSATION_AT,
    MESSAGE_COLUMNS,
    kept_message_from_record,
    message_from_row,
    record_from_row,
)
from memgpt_lite.storage.core.sql import Cursor, Fetched, Filters, Search
from memgpt_lite.storage.core.transactions import Transactions, guarded
from memgpt_lite.storage.core.window_cache import WholeRead, WindowRead
from memgpt_lite.storage.protocol import Ranking
from memgpt_lite.text import clean_text

Read = tuple[str, list[Any]]  # a statement and its parameters

# Leaves out the searching step's own messages (two parameters, both the
# step's id); a NULL one leaves out none.
NOT_IN_STEP = " AND (CAST(? AS TEXT) IS NULL OR m.step_id IS NULL OR m.step_id <> ?)"


def in_conversation(conversation: str | None) -> Filters:
    """The condition that the message `m` is of `conversation` (None: the
    agent's default one, whose messages have no conversation id), and its
    parameters. Two statements rather than one null-safe comparison: each
    is served by its index (the agent's, or the conversations' partial one)."""
    if conversation is None:
        return " AND m.conversation_id IS NULL", []
    return " AND m.conversation_id = ?", [conversation]


def window_read(agent_id: str, start_seq: int, conversation: str | None) -> Read:
    """The read of a conversation's messages from `start_seq`, oldest first."""
    where, params = in_conversation(conversation)
    return (
        f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.agent_id = ? AND m.seq >= ?{where} "
        "ORDER BY m.seq",
        [agent_id, start_seq, *params],
    )


# The agent's messages from a seq, of every conversation, oldest first.
_ALL_FROM = (
    f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.agent_id = ? AND m.seq >= ? ORDER BY m.seq"
)
# `WindowRead.span`: how many rows the agent has from a seq, and the highest
# seq; read after the rows, in the span that they extend a window by.
_SPAN = "SELECT count(*), max(m.seq) FROM messages m WHERE m.agent_id = ? AND m.seq >= ?"
# The agent's highest seq, read after a window's rows from its start (an
# index probe, however long the span: `WholeRead.top`).
_TOP = "SELECT 0, max(m.seq) FROM messages m WHERE m.agent_id = ?"


def window_reads(
    agent_id: str, start_seq: int, rows_from: int, conversation: str | None
) -> list[Read]:
    """What a window read through the window cache sends, in this order,
    after the agent's stamp and count (`WindowRead`, in core/window_cache.py):
    the conversation's rows from `rows_from`, then the span they are in; but
    to extend a window of the default conversation, the agent's rows of
    every conversation alone (the one statement a step sent before
    conversations: the cache keeps the default conversation's)."""
    if rows_from > start_seq:
        if conversation is None:
            return [(_ALL_FROM, [agent_id, rows_from])]
        return [window_read(agent_id, rows_from, conversation), (_SPAN, [agent_id, rows_from])]
    return [window_read(agent_id, start_seq, conversation), (_TOP, [agent_id])]


def window_found(
    stamp: Any, count: int | None, rows_from: int, results: Sequence[list[Any]]
) -> WindowRead:
    """What the reads of `window_reads` found, for `WindowCache.read`."""
    span = None
    if len(results) > 1:
        [(counted, top)] = results[1]
        span = (counted, top)
    return WindowRead(stamp, count, rows_from, results[0], span)


def whole_found(results: Sequence[list[Any]]) -> WholeRead:
    """What the reads of `window_reads` found from a window's start."""
    top = results[1][0][1]
    return WholeRead(results[0], -1 if top is None else top)


# The agent's newest messages of every conversation, newest first (the
# limit: its second parameter).
_NEWEST = (
    f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.agent_id = ? ORDER BY m.seq DESC LIMIT ?"
)


def newest_read(agent_id: str, limit: int, conversation: str | None) -> Read:
    """The read of a conversation's newest `limit` messages, newest first;
    for the default conversation, of the agent's newest of every
    conversation, which `Messages._newest_rows` reads again, filtered, when
    one is another conversation's. (The filter on an agent's many default
    messages is one PostgreSQL plans, before its statistics have the
    column, as a sort of them all; the plain read walks the index back.)"""
    if conversation is None:
        return _NEWEST, [agent_id, limit]
    return _filtered_newest(agent_id, limit, conversation)


def _filtered_newest(agent_id: str, limit: int, conversation: str | None) -> Read:
    where, params = in_conversation(conversation)
    return (
        f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.agent_id = ?{where} "
        "ORDER BY m.seq DESC LIMIT ?",
        [agent_id, *params, limit],
    )


def window_key(agent_id: str, conversation: str | None) -> str:
    """What the window cache keeps a conversation's window under: the
    agent's id for its default conversation, else the conversation's (ids
    are unique across agents)."""
    return agent_id if conversation is None else conversation


def check_stored(
    messages: Sequence[Message],
    inserted: Cursor,
    usage: UsageRecord | None,
    added: Cursor | None,
) -> None:
    """Set each message's `seq` from the rows `inserted`; NotFoundError for
    an agent that got nothing (a message without a row, a usage not added)."""
    seqs = {id_: seq for seq, id_ in inserted.fetchall()}
    missing = sorted({m.agent_id for m in messages if m.id not in seqs})
    if missing:
        raise unknown_agent(missing[0])
    for message in messages:
        message.seq = seqs[message.id]
    if usage is not None and added is not None and added.rowcount == 0:
        raise unknown_agent(usage.agent_id)


class Messages(Transactions):
    """Messages (see `MessageStorage`)."""

    # How many matches a ranking scores at most, unless asked otherwise.
    rank_budget: int

    def _insert_messages(self, messages: Sequence[Message]) -> Cursor:
        """Append the messages (at least one), in order, inside a transaction;
        their `(seq, id)` rows, which may be read only once the level ended
        (`_execute_later`). NotFoundError if one belongs to an unknown agent,
        or, where the backend cannot tell at once, no row for its messages
        and nothing of that agent written."""
        raise NotImplementedError

    def _update_message(self, message: Message) -> None:
        """Rewrite the message's content, tool calls and search text, and
        drop its vector; NotFoundError if it is not stored. Inside a transaction."""
        raise NotImplementedError

    def _delete_messages_from(
        self, agent_id: str, start_seq: int, conversation: str | None = None
    ) -> int:
        """Delete the conversation's messages from `start_seq`, with their
        vectors; how many. Inside a transaction."""
        raise NotImplementedError

    def _rank_messages(self, search: Search) -> Ranking[Message]:
        """`rank_messages`, by the backend's full-text index."""
        raise NotImplementedError

    def _window(
        self,
        agent_id: str,
        start_seq: int,
        copies: bool = False,
        conversation: str | None = None,
    ) -> list[Message]:
        """`window`, or with `copies` `messages_from`: read afresh (a backend
        may keep the window)."""
        rows = self._all(*window_read(agent_id, start_seq, conversation))
        if copies:
            return [message_from_row(r) for r in rows]
        return [kept_message_from_record(record_from_row(r)) for r in rows]

    @guarded
    def add_messages(
        self,
        messages: Sequence[Message],
        usage: UsageRecord | None = None,
        release_lock: tuple[str, str] | None = None,
    ) -> None:
        """Append messages to recall memory, in order, setting their `seq`,
        and store `usage` with them; give up the step lock `release_lock`
        when they commit."""
        if not messages and usage is None and release_lock is None:
            return
        agents = {m.agent_id for m in messages} | ({usage.agent_id} if usage else set())
        with self._write(gives_up=release_lock):
            added = None  # the usage first: a backend holding writes sends it with the rows
            if usage is not None:
                added = self._execute_later(ADD_USAGE, usage_values(usage, self.dialect))
            inserted = self._insert_messages(messages) if messages else Fetched([], 0)
            if len(agents) > 1:  # an unknown agent must leave the others' items unwritten
                check_stored(messages, inserted, usage, added)
        # Of one agent, checked once sent: an unknown one had nothing written.
        check_stored(messages, inserted, usage, added)

    @guarded
    def get_message(self, message_id: str, owner: str) -> Message:
        """The message of that id, if one of `owner`'s agents holds it."""
        rows = self._all(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m JOIN agents a ON a.id = m.agent_id "
            "WHERE m.id = ? AND a.owner = ?",
            [message_id, clean_text(owner)],
        )
        if not rows:
            raise NotFoundError(NO_MESSAGE.format(message_id))
        return message_from_row(rows[0])

    @guarded
    def owner_messages(
        self,
        owner: str,
        limit: int,
        *,
        newest_first: bool = True,
        beyond: Message | None = None,
        conversation: str | None = None,
    ) -> list[Message]:
        """`owner`'s messages across their agents, in the order of their
        times (then agent and seq, so that one agent's keep their order):
        `limit` of them, newest first or oldest first, from the one after
        `beyond` in that order; of one `conversation` if given."""
        where, params = "a.owner = ?", [clean_text(owner)]
        if conversation is not None:
            where, params = where + " AND m.conversation_id = ?", [*params, conversation]
        if beyond is not None:
            where += (
                f" AND (m.created_at, m.agent_id, m.seq) {'<' if newest_first else '>'} (?, ?, ?)"
            )
            params += [self.dialect.time(beyond.created_at), beyond.agent_id, beyond.seq]
        way = "DESC" if newest_first else "ASC"
        rows = self._all(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m JOIN agents a ON a.id = m.agent_id "
            f"WHERE {where} ORDER BY m.created_at {way}, m.agent_id {way}, m.seq {way} LIMIT ?",
            [*params, limit],
        )
        return [message_from_row(r) for r in rows]

    @guarded
    def update_message(self, message: Message) -> None:
        """Rewrite a stored message's content and tool calls, and what search
        indexes. Its vector, now stale, is dropped, so the next search embeds
        the message again."""
        with self.transaction():
            self._update_message(message)

    @guarded
    def delete_messages_from(
        self, agent_id: str, start_seq: int, conversation: str | None = None
    ) -> int:
        """Delete the conversation's messages with `seq >= start_seq`;
        returns how many."""
        with self.transaction():
            return self._delete_messages_from(agent_id, start_seq, conversation)

    @guarded
    def messages_from(
        self, agent_id: str, start_seq: int, conversation: str | None = None
    ) -> list[Message]:
        """The conversation's messages with `seq >= start_seq`, oldest first,
        new objects: the window, to change."""
        return self._window(agent_id, start_seq, copies=True, conversation=conversation)

    @guarded
    def window(
        self, agent_id: str, start_seq: int, conversation: str | None = None
    ) -> list[Message]:
        """`messages_from`, read-only messages that the store keeps (see the
        protocol): the window, to read."""
        return self._window(agent_id, start_seq, conversation=conversation)

    @guarded
    def last_messages(
        self, agent_id: str, limit: int, conversation: str | None = None
    ) -> list[Message]:
        """The conversation's newest `limit` messages, oldest first."""
        read = newest_read(agent_id, limit, conversation)
        rows = self._newest_rows(agent_id, limit, conversation, self._all(*read))
        return [message_from_row(r) for r in reversed(rows)]

    def _newest_rows(
        self, agent_id: str, limit: int, conversation: str | None, rows: list[Any]
    ) -> list[Any]:
        """The rows of the conversation's newest `limit` messages, from those
        `newest_read` read: these, unless one is of another conversation."""
        if conversation is not None or all(row[CONVERSATION_AT] is None for row in rows):
            return rows
        return self._all(*_filtered_newest(agent_id, limit, conversation))

    @guarded
    def first_messages(self, agent_id: str, start_seq: int, limit: int) -> list[Message]:
        """The agent's oldest `limit` messages from `start_seq`, oldest first
        (not through a window cache: a page of history is no window)."""
        rows = self._all(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.agent_id = ? AND m.seq >= ? "
            "ORDER BY m.seq LIMIT ?",
            [agent_id, start_seq, limit],
        )
        return [message_from_row(r) for r in rows]

    @guarded
    def recent_messages(
        self, agent_id: str, limit: int, offset: int = 0, since: datetime | None = None
    ) -> tuple[list[Message], int]:
        """One page of the agent's messages counted from the newest, oldest
        first, and how many there are (from `since`)."""
        where, params = "m.agent_id = ?", [agent_id]
        if since is not None:
            where += " AND m.created_at >= ?"
            params.append(self.dialect.time(since))
        return self._page(where, params, "m.seq DESC", limit, offset, newest_first=True)

    def _page(
        self,
        where: str,
        params: list[Any],
        order: str,
        limit: int,
        offset: int,
        newest_first: bool = False,
    ) -> tuple[list[Message], int]:
        """One page of the messages `where` selects, oldest first, and how
        many it selects: both from the same moment."""
        with self.snapshot():
            total = self._one(f"SELECT COUNT(*) FROM messages m WHERE {where}", params)[0]
            rows = self._all(
                f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE {where} "
                f"ORDER BY {order} LIMIT ? OFFSET ?",
                [*params, limit, offset],
            )
        page = [message_from_row(r) for r in rows]
        return (page[::-1] if newest_first else page), total

    @guarded
    def search_messages(
        self,
        agent_id: str,
        query: str,
        limit: int,
        offset: int = 0,
        exclude_step_id: str | None = None,
    ) -> tuple[list[Message], int]:
        """Rank the agent's user and assistant messages by BM25 for plain-text
        `query`. Returns one page and how many matched (see `rank_messages`)."""
        ranking = self.rank_messages(agent_id, query, offset + limit, exclude_step_id)
        return [message for message, _ in ranking.scored[offset:]], ranking.total

    @guarded
    def rank_messages(
        self,
        agent_id: str,
        query: str,
        limit: int,
        exclude_step_id: str | None = None,
        *,
        budget: int | None = None,
    ) -> Ranking[Message]:
        """The best `limit` user and assistant messages holding any word of
        `query`, with their BM25 scores (higher is better), and how many
        match; budgeted like `rank_passages` when the words are common
        (`budget`: the store's `rank_budget` unless given)."""
        filters = (NOT_IN_STEP, [exclude_step_id, exclude_step_id])
        budget = self.rank_budget if budget is None else budget
        return self._rank_messages(Search(agent_id, query, limit, filters, limit, budget))

    @guarded
    def messages_by_seq(
        self, agent_id: str, seqs: Sequence[int], exclude_step_id: str | None = None
    ) -> dict[int, Message]:
        found: dict[int, Message] = {}
        if not seqs:
            return found
        # int(): seqs from a vector index are numpy integers, which drivers refuse
        for among, params in self.dialect.among("m.seq", [int(s) for s in seqs]):
            rows = self._all(
                f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.agent_id = ? "
                f"AND {among}{NOT_IN_STEP}",
                [agent_id, *params, exclude_step_id, exclude_step_id],
            )
            found.update((r[0], message_from_row(r)) for r in rows)
        return found

    @guarded
    def messages_by_id(self, agent_id: str, ids: Sequence[str]) -> list[Message]:
        return self._messages_among(agent_id, "m.id", ids)

    @guarded
    def step_messages(self, agent_id: str, step_ids: Sequence[str]) -> list[Message]:
        return self._messages_among(agent_id, "m.step_id", step_ids)

    def _messages_among(self, agent_id: str, column: str, values: Sequence[str]) -> list[Message]:
        """The agent's messages whose `column` is among `values`, oldest first."""
        rows: list[Any] = []
        if not values:
            return []
        with self.snapshot():
            for among, params in self.dialect.among(column, list(values)):
                rows += self._all(
                    f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.agent_id = ? AND {among}",
                    [agent_id, *params],
                )
        rows.sort(key=lambda row: row[0])  # by seq
        return [message_from_row(r) for r in rows]

    @guarded
    def messages_between(
        self,
        agent_id: str,
        start: date,
        end: date,
        limit: int,
        offset: int = 0,
        exclude_step_id: str | None = None,
    ) -> tuple[list[Message], int]:
        """The agent's user and assistant messages from `start` to `end`
        inclusive (UTC days), oldest first: one page, and the total."""
        low, high = self.dialect.day_bounds(start, end)
        where = (
            "m.agent_id = ? AND m.created_at >= ? AND m.created_at < ? "
            "AND m.search_text IS NOT NULL" + NOT_IN_STEP
        )
        params = [agent_id, low, high, exclude_step_id, exclude_step_id]
        return self._page(where, params, "m.seq", limit, offset)
