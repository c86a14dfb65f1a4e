"""SQLite's writes and full-text ranking of messages (a part of `Store`);
the reads are core/messages.py's.

Triggers keep the full-text index and the agent's counters in step with every
insert, update and delete, and drop a deleted message's vector (migrations.py);
`_update_message` drops an edited message's vector itself. The window is read
through `window_cache` (only the rows stored since the last read).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlite_utils import Database

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import Message
from memgpt_lite.storage.core.errors import NO_MESSAGE
from memgpt_lite.storage.core.messages import (
    Read,
    in_conversation,
    whole_found,
    window_found,
    window_key,
    window_reads,
)
from memgpt_lite.storage.core.rows import (
    AFTER_MESSAGE,
    MESSAGE_COLUMNS,
    MESSAGE_FIELDS,
    message_edit,
    message_from_row,
    message_row,
)
from memgpt_lite.storage.core.sql import Fetched, Search
from memgpt_lite.storage.core.window_cache import WindowCache
from memgpt_lite.storage.core.words import RANK_BUDGET, fts_words
from memgpt_lite.storage.protocol import Ranking
from memgpt_lite.storage.sqlite.dialect import stored_time
from memgpt_lite.storage.sqlite.fulltext import BudgetedSearch, Part

_INSERT = f"INSERT INTO messages ({MESSAGE_FIELDS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
# The agent's edit stamp (None until a first edit) and message count (None:
# no such agent), for `WindowCache.read`.
_STAMP = (
    "SELECT (SELECT stamp FROM message_edits WHERE agent_id = ?),"
    " (SELECT message_count FROM agents WHERE id = ?)"
)


class MessageStore(BudgetedSearch):
    """Mixed into `Store`, which provides `db` and `window_cache`."""

    db: Database
    window_cache: WindowCache
    rank_budget = RANK_BUDGET

    def _insert_messages(self, messages: Sequence[Message]) -> Fetched:
        self._lock_agents(m.agent_id for m in messages)
        execute = self.db.conn.execute
        rows = [(execute(_INSERT, message_row(m, stored_time)).lastrowid, m.id) for m in messages]
        return Fetched(rows, len(rows))

    def _update_message(self, message: Message) -> None:
        """The FTS trigger follows the new text; the vector is dropped here."""
        cursor = self.db.conn.execute(
            "UPDATE messages SET content = ?, tool_calls = ?, search_text = ? "
            "WHERE id = ? AND agent_id = ?",
            [*message_edit(message), message.id, message.agent_id],
        )
        if cursor.rowcount == 0:
            raise NotFoundError(NO_MESSAGE.format(message.id))
        self.db.conn.execute(
            "DELETE FROM vectors WHERE owner = 'message' AND item_seq = "
            "(SELECT seq FROM messages WHERE id = ?)",
            [message.id],
        )

    def _delete_messages_from(
        self, agent_id: str, start_seq: int, conversation: str | None = None
    ) -> int:
        """Triggers keep the full-text index, counters and vectors in step."""
        where, params = in_conversation(conversation)
        cursor = self.db.conn.execute(
            f"DELETE FROM messages AS m WHERE m.agent_id = ? AND m.seq >= ?{where}",
            [agent_id, start_seq, *params],
        )
        return cursor.rowcount

    def _window(
        self,
        agent_id: str,
        start_seq: int,
        copies: bool = False,
        conversation: str | None = None,
    ) -> list[Message]:
        """Read through `window_cache` (only new rows are fetched), in one
        snapshot; kept only when read outside a write, which may hold
        uncommitted rows."""
        committed = not self.db.conn.in_transaction
        execute = self.db.execute
        key = window_key(agent_id, conversation)

        def read(reads: list[Read]) -> list[list[Any]]:
            return [execute(statement, params).fetchall() for statement, params in reads]

        with self.snapshot():
            rows_from = self.window_cache.rows_from(key, start_seq)
            stamp, count = execute(_STAMP, [agent_id, agent_id]).fetchone()
            found = window_found(
                stamp,
                count,
                rows_from,
                read(window_reads(agent_id, start_seq, rows_from, conversation)),
            )
            return self.window_cache.read(
                key,
                start_seq,
                found,
                lambda: whole_found(
                    read(window_reads(agent_id, start_seq, start_seq, conversation))
                ),
                keep=committed,
                copies=copies,
            )

    def _rank_messages(self, search: Search) -> Ranking[Message]:
        """By FTS5's BM25 (see `fts_words`); budgeted like `rank_passages`
        when the words are common."""
        words = fts_words(search.query)
        if not words:
            return Ranking([], 0, proven=True)
        where, params = search.filters
        # CROSS JOIN makes SQLite start from the full-text match; left to
        # itself it scans every message of the agent and probes the index.
        candidates = self.candidates("messages", words, search.budget).filtered(
            lambda part: Part(
                f"SELECT b.seq, b.score FROM ({part.sql}) b "
                f"CROSS JOIN messages m ON m.seq = b.seq WHERE m.agent_id = ?{where}",
                [*part.args, search.agent_id, *params],
            )
        )
        rows, total = self.top_rows("messages", MESSAGE_COLUMNS, candidates.parts, search.limit)
        scored = [(message_from_row(r), r[AFTER_MESSAGE]) for r in rows]
        proven = candidates.left_out.proves([s for _, s in scored], search.exact)
        return Ranking(scored, total, proven)
