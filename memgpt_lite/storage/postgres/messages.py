"""PostgreSQL's writes and full-text ranking of messages (a part of
`PostgresStore`); the reads are core/messages.py's.

What SQLite's triggers do, each write does itself: it moves the agent's
counters first, which locks its row (so one agent's messages are numbered
and committed in the same order), then writes the rows with their tsvector
and length (fulltext.py); deleting or editing a message drops its vector.
The window is read through the window cache (core/window_cache.py): only
the rows stored since the last read, with the stamp the edits and deletions
here move.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import Message
from memgpt_lite.storage.core.agents import ATTACHED_PASSAGES, stats_from_row
from memgpt_lite.storage.core.blocks import AGENT_BLOCKS, block_from_row
from memgpt_lite.storage.core.errors import NO_MESSAGE, unknown_agent
from memgpt_lite.storage.core.messages import (
    check_stored,
    in_conversation,
    whole_found,
    window_found,
    window_key,
    window_reads,
)
from memgpt_lite.storage.core.rows import (
    AFTER_MESSAGE,
    MESSAGE_COLUMNS,
    message_edit,
    message_from_row,
    message_row,
)
from memgpt_lite.storage.core.sql import Cursor, Search
from memgpt_lite.storage.core.transactions import guarded
from memgpt_lite.storage.core.window_cache import WindowCache
from memgpt_lite.storage.postgres.dialect import POSTGRES
from memgpt_lite.storage.postgres.fulltext import (
    PG_RANK_BUDGET,
    TextSearch,
    plain_text,
    to_tsvector,
    word_count,
)
from memgpt_lite.storage.postgres.vectors import delete_vectors_of
from memgpt_lite.storage.protocol import MainContext, Ranking

_INSERT = (
    sql.SQL(
        "INSERT INTO messages (id, agent_id, role, content, tool_calls, tool_call_id, name, "
        "step_id, created_at, search_text, conversation_id, search_length, search_vector) "
        "SELECT r.id, r.agent_id, r.role, r.content, r.tool_calls, r.tool_call_id, r.name, "
        "r.step_id, r.created_at, r.search_text, r.conversation_id, r.search_length, {vector} "
        "FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
        "%s::text[], %s::text[], %s::timestamptz[], %s::text[], %s::text[], %s::int[], "
        "%s::text[]) "
        "WITH ORDINALITY AS r(id, agent_id, role, content, tool_calls, tool_call_id, name, "
        "step_id, created_at, search_text, conversation_id, search_length, plain, n) "
        # An unknown agent's rows are left out (its counters' UPDATE found no
        # row: NotFoundError, not a foreign-key error).
        "WHERE EXISTS (SELECT 1 FROM agents a WHERE a.id = r.agent_id) ORDER BY r.n "
        "RETURNING seq, id"
    )
    .format(vector=to_tsvector("r.plain"))
    .as_string()
)
# The agent's edit stamp, then its stats (`stats_from_row`), which start with
# its message count: what `WindowRead` takes.
_STAMPED_STATS = (
    "SELECT message_edits, message_count, passage_count, last_active, memory_updated_at, "
    f"{ATTACHED_PASSAGES} FROM agents WHERE id = ?"
)
# Moves an agent's counters, locking its row until the write ends (an
# unknown agent: no row, nothing written).
_COUNT = (
    "UPDATE agents SET message_count = message_count + %s, "
    "message_tokens = message_tokens + %s, last_active = %s WHERE id = %s"
)


def _columns(messages: Sequence[Message]) -> list[list[Any]]:
    """The messages as one array per column of `_INSERT`."""
    rows = [message_row(m, POSTGRES.time) for m in messages]
    columns = [list(column) for column in zip(*rows, strict=True)]
    texts = columns[9]  # search_text (`message_row`'s order)
    return [
        *columns,
        [word_count(t) for t in texts],
        [plain_text(t) if t is not None else None for t in texts],
    ]


class MessageStore(TextSearch):
    """Mixed into `PostgresStore` (`_hold` and `_all_together` are its
    primitives'), which provides `window_cache`."""

    conn: psycopg.Connection
    window_cache: WindowCache
    rank_budget = PG_RANK_BUDGET

    def _insert_messages(self, messages: Sequence[Message]) -> Cursor:
        """Each agent's counters moved (locking its row, in the agents'
        order), then the rows in one statement, all held: they go with the
        level's end, or with whatever reads the rows first."""
        columns = _columns(messages)
        added: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        last: dict[str, datetime] = {}
        for message, length in zip(messages, columns[11], strict=True):
            added[message.agent_id][0] += 1
            added[message.agent_id][1] += length
            last[message.agent_id] = message.created_at
        for agent_id in sorted(added):
            self._hold(_COUNT, [*added[agent_id], last[agent_id], agent_id])
        return self._hold(_INSERT, columns)

    @guarded
    def main_context(
        self,
        agent_id: str,
        start_seq: int,
        adding: Sequence[Message] = (),
        conversation: str | None = None,
    ) -> MainContext:
        """Its reads in one round trip, the window through `window_cache`;
        with `adding`, the same round trip stores them first: BEGIN, the
        writes, the reads, COMMIT."""
        rows_from = self.window_cache.rows_from(window_key(agent_id, conversation), start_seq)
        reads = [(_STAMPED_STATS, [agent_id]), (AGENT_BLOCKS, [agent_id])]
        reads += window_reads(agent_id, start_seq, rows_from, conversation)
        if adding and any(message.agent_id != agent_id for message in adding):
            self.add_messages(adding)  # (checked before it commits: see add_messages)
            adding = ()
        if adding:
            with self._write():  # held, all of it: sent with its COMMIT
                inserted = self._insert_messages(adding)
                held = [self._execute_later(statement, params) for statement, params in reads]
            check_stored(adding, inserted, None, None)
            stamped, blocks, *window = (later.fetchall() for later in held)
        else:
            stamped, blocks, *window = self._all_together(*reads)
        head = stamped[0] if stamped else None
        if head is None:
            raise unknown_agent(agent_id)
        where = (agent_id, conversation)
        messages = self._window_read(where, start_seq, head, rows_from, window)
        stats = stats_from_row(head[1:])
        return MainContext(messages, [block_from_row(r) for r in blocks], stats)

    def _window(
        self,
        agent_id: str,
        start_seq: int,
        copies: bool = False,
        conversation: str | None = None,
    ) -> list[Message]:
        """Through `window_cache`: one round trip, and one more to read the
        whole window when what was kept does not account for every change.
        The stamp is read before the rows, so that a change committed in
        between is one the next read sees."""
        rows_from = self.window_cache.rows_from(window_key(agent_id, conversation), start_seq)
        reads = window_reads(agent_id, start_seq, rows_from, conversation)
        stamped, *window = self._all_together((_STAMPED_STATS, [agent_id]), *reads)
        head = stamped[0] if stamped else None
        where = (agent_id, conversation)
        return self._window_read(where, start_seq, head, rows_from, window, copies)

    def _window_read(
        self,
        where: tuple[str, str | None],
        start_seq: int,
        head: Any,
        rows_from: int,
        window: list[list[Any]],
        copies: bool = False,
    ) -> list[Message]:
        """The window from what `window_reads` read from `rows_from` on and
        the agent's `_STAMPED_STATS` row `head` (None: no such agent), for
        the agent and conversation `where`."""
        agent_id, conversation = where
        stamp, count = head[:2] if head else (None, None)
        whole = window_reads(agent_id, start_seq, start_seq, conversation)
        return self.window_cache.read(
            window_key(agent_id, conversation),
            start_seq,
            window_found(stamp, count, rows_from, window),
            lambda: whole_found(self._all_together(*whole)),
            keep=not self._levels,  # outside any transaction: what was read is committed
            copies=copies,
        )

    def _update_message(self, message: Message) -> None:
        edit = message_edit(message)
        text = edit[2]
        self._lock_agents([message.agent_id])  # an unknown agent: NotFoundError
        row = self.conn.execute(
            sql.SQL(
                "WITH old AS (SELECT seq, search_length FROM messages "
                "WHERE id = %s AND agent_id = %s FOR UPDATE) "
                "UPDATE messages m SET content = %s, tool_calls = %s, search_text = %s, "
                "search_length = %s, search_vector = {} FROM old WHERE m.seq = old.seq "
                "RETURNING m.seq, old.search_length"
            ).format(to_tsvector("%s")),
            [
                message.id,
                message.agent_id,
                *edit,
                word_count(text),
                plain_text(text) if text is not None else None,
            ],
        ).fetchone()
        if row is None:
            raise NotFoundError(NO_MESSAGE.format(message.id))
        seq, old_length = row
        self.conn.execute(
            "UPDATE agents SET message_tokens = message_tokens + %s, "
            "message_edits = message_edits + 1 WHERE id = %s",
            [word_count(text) - old_length, message.agent_id],
        )
        delete_vectors_of(self.conn, message.agent_id, "message", [seq])

    def _delete_messages_from(
        self, agent_id: str, start_seq: int, conversation: str | None = None
    ) -> int:
        if not self.conn.execute(
            "SELECT 1 FROM agents WHERE id = %s FOR NO KEY UPDATE", [agent_id]
        ).fetchone():
            return 0
        where, params = in_conversation(conversation)
        gone = self._all(
            f"DELETE FROM messages AS m WHERE m.agent_id = ? AND m.seq >= ?{where} "
            "RETURNING m.seq, m.search_length",
            [agent_id, start_seq, *params],
        )
        if not gone:
            return 0
        self.conn.execute(
            "UPDATE agents SET message_count = message_count - %s, "
            "message_tokens = message_tokens - %s, message_edits = message_edits + 1 WHERE id = %s",
            [len(gone), sum(r[1] for r in gone), agent_id],
        )
        delete_vectors_of(self.conn, agent_id, "message", [r[0] for r in gone])
        return len(gone)

    def _rank_messages(self, search: Search) -> Ranking[Message]:
        """By BM25 over the tsvectors (budgeted: see fulltext.py)."""
        found = self.ranked_rows("messages", MESSAGE_COLUMNS, search)
        scored = [(message_from_row(r), r[AFTER_MESSAGE]) for r in found.rows]
        return Ranking(scored, found.total, found.proven)
