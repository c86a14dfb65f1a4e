"""The store's SQL for the users' API keys (a part of `PostgresStore`).

As in SQLite's keys.py: only a key's SHA-256 is stored, found through the
column's unique index. "user" is quoted: a reserved word here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import psycopg

from memgpt_lite.errors import AlreadyExistsError, NotFoundError
from memgpt_lite.models import ApiKey, utcnow
from memgpt_lite.storage.postgres.primitives import guarded
from memgpt_lite.text import clean_text

_COLUMNS = 'id, "user", key_hash, created_at, revoked_at'


def _key(row: Sequence[Any]) -> ApiKey:
    id_, user, key_hash, created_at, revoked_at = row
    return ApiKey(
        id=id_, user=user, key_hash=key_hash, created_at=created_at, revoked_at=revoked_at
    )


class KeyStore:
    """API keys. Mixed into `PostgresStore`."""

    conn: psycopg.Connection
    transaction: Callable[[], AbstractContextManager[None]]

    @guarded
    def add_api_key(self, key: ApiKey) -> None:
        try:
            with self.transaction():
                self.conn.execute(
                    f"INSERT INTO api_keys ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s)",
                    [key.id, key.user, key.key_hash, key.created_at, key.revoked_at],
                )
        except psycopg.errors.UniqueViolation:
            raise AlreadyExistsError(f"an API key with id {key.id!r} or its hash exists") from None

    @guarded
    def api_key_by_hash(self, key_hash: str) -> ApiKey | None:
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM api_keys WHERE key_hash = %s", [clean_text(key_hash)]
        ).fetchone()
        return _key(row) if row else None

    @guarded
    def list_api_keys(self) -> list[ApiKey]:
        rows = self.conn.execute(f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, id")
        return [_key(row) for row in rows]

    @guarded
    def revoke_api_key(self, key_id: str) -> ApiKey:
        with self.transaction():
            row = self.conn.execute(
                "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, %s) WHERE id = %s "
                f"RETURNING {_COLUMNS}",
                [utcnow(), clean_text(key_id)],
            ).fetchone()
        if row is None:
            raise NotFoundError(f"no API key with id {key_id!r}")
        return _key(row)
