"""Token usage and the users' API keys, for every backend.

Usage is one row per model answer; totals are summed when asked for (one
GROUP BY over the agent's rows, by its index): `show` and the chat's footer
ask rarely, while a step writes a row each time, so no counter is kept up
to date on every write. Of an API key only its SHA-256 is stored
(memgpt_lite/agent/keys.py makes and checks keys); the server finds a key by its
hash, through the column's unique index; an admin key (`admin`) may also
run code on the server (memgpt_lite/server/context.py). `"user"` is quoted: a reserved word
in PostgreSQL.

A backend provides nothing more than what the core runs on (core/sql.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import ApiKey, ModelUsage, UsageRecord, utcnow
from memgpt_lite.storage.core.errors import unknown_agent
from memgpt_lite.storage.core.rows import USAGE_RECORD_KEYS, model_usages, usage_records
from memgpt_lite.storage.core.sql import Dialect
from memgpt_lite.storage.core.transactions import Transactions, guarded
from memgpt_lite.storage.protocols.accounts import StepFeedback, StepUsage
from memgpt_lite.text import clean_text

_KEY_COLUMNS = 'id, "user", key_hash, created_at, revoked_at, admin'
# The agent must exist: NotFoundError, not a foreign-key error, for one that
# does not (deleted meanwhile by another process, say). One statement.
ADD_USAGE = (
    f"INSERT INTO token_usage ({', '.join(USAGE_RECORD_KEYS)}) "
    "SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM agents WHERE id = ?)"
)


def usage_values(record: UsageRecord, dialect: Dialect) -> list[Any]:
    """`ADD_USAGE`'s parameters (no row added: an unknown agent)."""
    return [
        record.agent_id,
        record.step_id,
        record.model,
        record.prompt_tokens,
        record.completion_tokens,
        record.total_tokens,
        record.requests,
        record.estimated,
        dialect.time(record.created_at),
        record.agent_id,
    ]


# Each step's totals, of the owner's agents, with its feedback; the last
# column (its first record's seq) orders them.
_STEP_TOTALS = (
    "SELECT u.agent_id, u.step_id, MAX(u.model), SUM(u.prompt_tokens), "
    "SUM(u.completion_tokens), SUM(u.total_tokens), SUM(u.requests), "
    "SUM(CASE WHEN u.estimated THEN u.requests ELSE 0 END), MIN(u.created_at), "
    "MAX(u.created_at), MAX(f.feedback), MAX(f.tags), MIN(u.seq) "
    "FROM token_usage u JOIN agents a ON a.id = u.agent_id "
    "LEFT JOIN step_feedback f ON f.agent_id = u.agent_id AND f.step_id = u.step_id "
    "WHERE a.owner = ?{where} GROUP BY u.agent_id, u.step_id ORDER BY MIN(u.seq) DESC LIMIT ?"
)
_STEP_FIELDS = tuple(StepUsage.model_fields)

# Only a step with usage takes feedback; tags not given (NULL) keep theirs.
_SET_FEEDBACK = (
    "INSERT INTO step_feedback (agent_id, step_id, feedback, tags) "
    "SELECT ?, ?, ?, COALESCE(?, '[]') "
    "WHERE EXISTS (SELECT 1 FROM token_usage WHERE agent_id = ? AND step_id = ?) "
    "ON CONFLICT (agent_id, step_id) DO UPDATE SET feedback = excluded.feedback, "
    "tags = COALESCE(?, step_feedback.tags)"
)


def _step(row: Sequence[Any]) -> StepUsage:
    """A `_STEP_TOTALS` row as a step (its tags a JSON list, NULL for none)."""
    values = dict(zip(_STEP_FIELDS, row[:-1], strict=True))
    values["tags"] = json.loads(values["tags"] or "[]")
    return StepUsage(**values)


def _key(row: Sequence[Any]) -> ApiKey:
    id_, user, key_hash, created_at, revoked_at, admin = row
    return ApiKey(
        id=id_,
        user=user,
        key_hash=key_hash,
        created_at=created_at,
        revoked_at=revoked_at,
        admin=bool(admin),
    )


class UsageAndKeys(Transactions):
    """Token usage and API keys (see `UsageAndKeyStorage`)."""

    @guarded
    def add_usage(self, record: UsageRecord) -> None:
        with self.transaction():
            inserted = self._execute_later(ADD_USAGE, usage_values(record, self.dialect))
        if inserted.rowcount == 0:  # nothing was written
            raise unknown_agent(record.agent_id)

    @guarded
    def usage_by_model(self, agent_id: str) -> list[ModelUsage]:
        rows = self._all(
            "SELECT model, SUM(prompt_tokens), SUM(completion_tokens), SUM(total_tokens), "
            "SUM(requests), COUNT(DISTINCT step_id), SUM(CASE WHEN estimated THEN requests "
            "ELSE 0 END) FROM token_usage WHERE agent_id = ? GROUP BY model ORDER BY model",
            [agent_id],
        )
        return model_usages(rows)

    @guarded
    def step_usage(self, agent_id: str, step_id: str) -> list[UsageRecord]:
        return self._usage_records("agent_id = ? AND step_id = ?", [agent_id, step_id])

    @guarded
    def agent_usage(self, agent_id: str) -> list[UsageRecord]:
        return self._usage_records("agent_id = ?", [agent_id])

    def _usage_records(self, where: str, params: list[str]) -> list[UsageRecord]:
        columns = ", ".join(USAGE_RECORD_KEYS)
        return usage_records(
            self._all(f"SELECT {columns} FROM token_usage WHERE {where} ORDER BY seq", params)
        )

    @guarded
    def list_steps(
        self,
        owner: str,
        agent_id: str | None = None,
        step_ids: Sequence[str] | None = None,
        limit: int = 100,
    ) -> list[StepUsage]:
        where, params = "", [owner]
        if agent_id is not None:
            where, params = " AND u.agent_id = ?", [owner, agent_id]
        if step_ids is not None and not step_ids:
            return []
        conditions: list[tuple[str, list[Any]]] = [(where, params)]
        if step_ids:  # several statements for many ids (SQLite's limit on parameters)
            conditions = [
                (f"{where} AND {among}", [*params, *among_params])
                for among, among_params in self.dialect.among("u.step_id", list(step_ids))
            ]
        rows: list[Any] = []
        with self.snapshot():
            for condition, values in conditions:  # a step's rows are all in one of them
                rows += self._all(_STEP_TOTALS.format(where=condition), [*values, limit])
        rows.sort(key=lambda row: row[-1], reverse=True)
        return [_step(row) for row in rows[:limit]]

    @guarded
    def set_step_feedback(
        self,
        agent_id: str,
        step_id: str,
        feedback: StepFeedback | None,
        tags: Sequence[str] | None = None,
    ) -> None:
        # From a caller: SQLite cannot bind a lone surrogate.
        agent_id, step_id = clean_text(agent_id), clean_text(step_id)
        listed = None
        if tags is not None:
            listed = json.dumps([clean_text(tag) for tag in tags], ensure_ascii=False)
        values = [agent_id, step_id, feedback, listed, agent_id, step_id, listed]
        with self.transaction():
            stored = self._execute(_SET_FEEDBACK, values)
        if stored.rowcount == 0:
            raise NotFoundError(f"no step {step_id!r} of agent {agent_id!r}")

    @guarded
    def add_api_key(self, key: ApiKey) -> None:
        revoked = None if key.revoked_at is None else self.dialect.time(key.revoked_at)
        with self.refusing_duplicates(f"an API key with id {key.id!r} or its hash exists"):
            self._execute(
                f"INSERT INTO api_keys ({_KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    key.id,
                    key.user,
                    key.key_hash,
                    self.dialect.time(key.created_at),
                    revoked,
                    key.admin,
                ],
            )

    @guarded
    def api_key_by_hash(self, key_hash: str) -> ApiKey | None:
        row = self._one(
            f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE key_hash = ?", [clean_text(key_hash)]
        )
        return _key(row) if row else None

    @guarded
    def list_api_keys(self) -> list[ApiKey]:
        return [
            _key(row)
            for row in self._all(f"SELECT {_KEY_COLUMNS} FROM api_keys ORDER BY created_at, id")
        ]

    @guarded
    def revoke_api_key(self, key_id: str) -> ApiKey:
        key_id = clean_text(key_id)  # from a caller: SQLite cannot bind a lone surrogate
        with self.transaction():
            row = self._one(
                "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ? "
                f"RETURNING {_KEY_COLUMNS}",
                [self.dialect.time(utcnow()), key_id],
            )
        if row is None:
            raise NotFoundError(f"no API key with id {key_id!r}")
        return _key(row)
