"""The store's SQL for token usage: one row per model answer (a part of `PostgresStore`)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import psycopg

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import ModelUsage, UsageRecord
from memgpt_lite.storage.postgres.primitives import guarded
from memgpt_lite.storage.records import USAGE_RECORD_KEYS, model_usages, usage_records


class UsageStore:
    """Token usage. Mixed into `PostgresStore`."""

    conn: psycopg.Connection
    transaction: Callable[[], AbstractContextManager[None]]

    @guarded
    def add_usage(self, record: UsageRecord) -> None:
        with self.transaction():
            inserted = self.conn.execute(
                f"INSERT INTO token_usage ({', '.join(USAGE_RECORD_KEYS)}) "
                "SELECT %s, %s, %s, %s, %s, %s, %s, %s, %s WHERE EXISTS "
                "(SELECT 1 FROM agents WHERE id = %s)",
                [
                    record.agent_id,
                    record.step_id,
                    record.model,
                    record.prompt_tokens,
                    record.completion_tokens,
                    record.total_tokens,
                    record.requests,
                    record.estimated,
                    record.created_at,
                    record.agent_id,
                ],
            )
            if inserted.rowcount == 0:
                raise NotFoundError(f"no agent with id {record.agent_id!r}")

    @guarded
    def usage_by_model(self, agent_id: str) -> list[ModelUsage]:
        rows = self.conn.execute(
            "SELECT model, SUM(prompt_tokens), SUM(completion_tokens), SUM(total_tokens), "
            "SUM(requests), COUNT(DISTINCT step_id), SUM(CASE WHEN estimated THEN requests "
            "ELSE 0 END) FROM token_usage WHERE agent_id = %s GROUP BY model ORDER BY model",
            [agent_id],
        ).fetchall()
        return model_usages(rows)

    @guarded
    def step_usage(self, agent_id: str, step_id: str) -> list[UsageRecord]:
        return self._records("agent_id = %s AND step_id = %s", [agent_id, step_id])

    @guarded
    def agent_usage(self, agent_id: str) -> list[UsageRecord]:
        return self._records("agent_id = %s", [agent_id])

    def _records(self, where: str, params: list[str]) -> list[UsageRecord]:
        columns = ", ".join(USAGE_RECORD_KEYS)
        return usage_records(
            self.conn.execute(
                f"SELECT {columns} FROM token_usage WHERE {where} ORDER BY seq", params
            ).fetchall()
        )
