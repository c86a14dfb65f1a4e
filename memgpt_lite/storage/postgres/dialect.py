"""PostgreSQL's words for what the core's statements say alike (core/sql.py).

Times are `timestamptz` (psycopg passes datetimes as they are), lists are
arrays (`= ANY(?)` holds any number of values, `&&` finds a shared tag).
Writers run at once here, so a write that reads before it writes locks what
it read (`FOR UPDATE`, `FOR NO KEY UPDATE` where the key stays), and a
failed statement aborts the whole transaction: one whose failure the store
turns into an error of its own runs in a savepoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg

from memgpt_lite.storage.core.sql import Dialect


class PostgresDialect(Dialect):
    for_update = " FOR UPDATE"
    for_no_key_update = " FOR NO KEY UPDATE"
    failure_aborts_transaction = True
    unique_violation = (psycopg.errors.UniqueViolation,)
    # An agent's block ids ride along with its row: one round trip, not two.
    block_ids = (
        "ARRAY(SELECT block_id FROM agent_blocks ab WHERE ab.agent_id = agents.id "
        "ORDER BY position)"
    )

    def time(self, value: datetime) -> datetime:
        return value

    def block_id_list(self, stored: Any) -> list[str]:
        return stored

    def among(self, column: str, values: Sequence[Any]) -> list[tuple[str, list[Any]]]:
        return [(f"{column} = ANY(?)", [list(values)])]

    def any_tag(self, tags: Sequence[str]) -> tuple[str, list[Any]]:
        return "p.tags && CAST(? AS TEXT[])", [list(tags)]


POSTGRES = PostgresDialect()
