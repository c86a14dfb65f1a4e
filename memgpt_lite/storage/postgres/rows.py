"""How the PostgreSQL store reads messages and passages back from rows, and
what its writes share: agent locks, day bounds, removed vectors.

Rows are turned into models without validating them again (they were
validated on the way in, and revalidating a long window on every turn cost
more than reading it), with storage/records.py, as SQLite's store does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

import psycopg

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import Message, Passage, ToolCall
from memgpt_lite.storage.core.rows import trusted

MESSAGE_COLUMNS = (
    "m.seq, m.id, m.agent_id, m.role, m.content, m.tool_calls, m.tool_call_id, m.name,"
    " m.step_id, m.created_at"
)
PASSAGE_COLUMNS = (
    "p.seq, p.id, p.agent_id, p.text, p.tags, p.created_at, p.context,"
    " p.superseded_by, p.superseded_at"
)
_CALL_KEYS = {"id", "name", "arguments"}


def _tool_calls(text: str | None) -> list[ToolCall]:
    """Stored tool calls; one of another shape than the store writes (a row
    written by hand) is validated."""
    if not text:
        return []
    calls = []
    for call in json.loads(text):
        if (
            isinstance(call, dict)
            and call.keys() == _CALL_KEYS
            and all(isinstance(value, str) for value in call.values())
        ):
            calls.append(trusted(ToolCall, dict(call)))
        else:
            calls.append(ToolCall.model_validate(call))
    return calls


def message_from_row(row: Sequence[Any]) -> Message:
    seq, id_, agent_id, role, content, calls, tool_call_id, name, step_id, created = row[:10]
    values = {
        "id": id_,
        "agent_id": agent_id,
        "role": role,
        "content": content,
        "tool_calls": _tool_calls(calls),
        "tool_call_id": tool_call_id,
        "name": name,
        "step_id": step_id,
        "created_at": created,
        "seq": seq,
    }
    return trusted(Message, values)


def passage_from_row(row: Sequence[Any]) -> Passage:
    seq, id_, agent_id, text, tags, created_at, context, superseded_by, superseded_at = row[:9]
    values = {
        "id": id_,
        "agent_id": agent_id,
        "text": text,
        "tags": list(tags),
        "created_at": created_at,
        "context": context,
        "seq": seq,
        "superseded_by": superseded_by,
        "superseded_at": superseded_at,
    }
    return trusted(Passage, values)


def day_bounds(start: date | None, end: date | None) -> tuple[datetime | None, datetime | None]:
    """Bounds for `created_at` covering whole UTC days, `end` inclusive."""
    low = datetime.combine(start, datetime.min.time(), UTC) if start else None
    high = datetime.combine(end + timedelta(days=1), datetime.min.time(), UTC) if end else None
    return low, high


def lock_agents(conn: psycopg.Connection, agent_ids: Sequence[str]) -> None:
    """Lock the agents' rows (as an UPDATE of their counters would) in one
    order, so that two writers of the same agents never deadlock; and their
    items are numbered and committed in the same order. NotFoundError for an
    agent that does not exist (deleted meanwhile, say)."""
    wanted = sorted(set(agent_ids))
    rows = conn.execute(
        "SELECT id FROM agents WHERE id = ANY(%s) ORDER BY id FOR NO KEY UPDATE", [wanted]
    ).fetchall()
    missing = set(wanted) - {r[0] for r in rows}
    if missing:
        raise NotFoundError(f"no agent with id {min(missing)!r}")


def delete_vectors_of(conn: psycopg.Connection, agent_id: str, owner: str, seqs: list[int]) -> None:
    """Remove the vectors of deleted or edited items, and count them in the
    agent's `vector_deletes` (as SQLite's triggers do)."""
    if not seqs:
        return
    gone = conn.execute(
        "DELETE FROM vectors WHERE owner = %s AND item_seq = ANY(%s)", [owner, seqs]
    ).rowcount
    if gone:
        conn.execute(
            "UPDATE agents SET vector_deletes = vector_deletes + %s WHERE id = %s",
            [gone, agent_id],
        )
