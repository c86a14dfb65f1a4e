"""The store's SQL for token usage: one row per model answer (a part of `Store`).

Totals are summed when asked for (one GROUP BY over the agent's rows, by
its index): `show` and the chat's footer ask rarely, while a step writes a
row each time, so no counter is kept up to date on every write.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

from sqlite_utils import Database

from memgpt_lite.models import ModelUsage, UsageRecord
from memgpt_lite.storage.records import USAGE_RECORD_KEYS, model_usages, usage_records
from memgpt_lite.storage.sqlite.primitives import guarded
from memgpt_lite.storage.sqlite.rows import require_agents, stored_time


class UsageStore:
    """Token usage. Mixed into `Store`, which provides `db` and `transaction`."""

    db: Database
    transaction: Callable[[], AbstractContextManager[None]]  # provided by Store

    @guarded
    def add_usage(self, record: UsageRecord) -> None:
        with self.transaction():
            require_agents(self.db, [record.agent_id])
            self.db.execute(
                "INSERT INTO token_usage (agent_id, step_id, model, prompt_tokens, "
                "completion_tokens, total_tokens, requests, estimated, created_at) "
                "VALUES (?,?,?,?,?,?,?,?,?)",
                [
                    record.agent_id,
                    record.step_id,
                    record.model,
                    record.prompt_tokens,
                    record.completion_tokens,
                    record.total_tokens,
                    record.requests,
                    int(record.estimated),
                    stored_time(record.created_at),
                ],
            )

    @guarded
    def usage_by_model(self, agent_id: str) -> list[ModelUsage]:
        rows = self.db.execute(
            "SELECT model, SUM(prompt_tokens), SUM(completion_tokens), SUM(total_tokens), "
            "SUM(requests), COUNT(DISTINCT step_id), SUM(CASE WHEN estimated THEN requests "
            "ELSE 0 END) FROM token_usage WHERE agent_id = ? GROUP BY model ORDER BY model",
            [agent_id],
        ).fetchall()
        return model_usages(rows)

    @guarded
    def step_usage(self, agent_id: str, step_id: str) -> list[UsageRecord]:
        return self._records("agent_id = ? AND step_id = ?", [agent_id, step_id])

    @guarded
    def agent_usage(self, agent_id: str) -> list[UsageRecord]:
        return self._records("agent_id = ?", [agent_id])

    def _records(self, where: str, params: list[str]) -> list[UsageRecord]:
        columns = ", ".join(USAGE_RECORD_KEYS)
        return usage_records(
            self.db.execute(
                f"SELECT {columns} FROM token_usage WHERE {where} ORDER BY seq", params
            ).fetchall()
        )
