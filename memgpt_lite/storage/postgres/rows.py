"""What the PostgreSQL store's writes of messages and passages share:
agent locks, and removed vectors counted."""

from __future__ import annotations

import psycopg


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
