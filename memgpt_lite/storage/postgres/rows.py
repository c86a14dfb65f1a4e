"""What the PostgreSQL store's writes of messages and passages share:
agent locks, and removed vectors counted."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from memgpt_lite.errors import NotFoundError


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
