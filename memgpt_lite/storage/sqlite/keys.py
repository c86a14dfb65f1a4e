"""The store's SQL for the users' API keys (a part of `Store`).

Only a key's SHA-256 is stored (memgpt_lite/keys.py makes and checks keys);
the server finds a key by its hash, through the column's unique index.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from sqlite_utils import Database

from memgpt_lite.errors import AlreadyExistsError, NotFoundError
from memgpt_lite.models import ApiKey, utcnow
from memgpt_lite.storage.sqlite.primitives import guarded
from memgpt_lite.storage.sqlite.rows import stored_time
from memgpt_lite.text import clean_text

_COLUMNS = 'id, "user", key_hash, created_at, revoked_at'


def _key(row: Sequence[Any]) -> ApiKey:
    id_, user, key_hash, created_at, revoked_at = row
    return ApiKey(
        id=id_, user=user, key_hash=key_hash, created_at=created_at, revoked_at=revoked_at
    )


class KeyStore:
    """API keys. Mixed into `Store`, which provides `db` and `transaction`."""

    db: Database
    transaction: Callable[[], AbstractContextManager[None]]  # provided by Store

    @guarded
    def add_api_key(self, key: ApiKey) -> None:
        revoked = stored_time(key.revoked_at) if key.revoked_at else None
        try:
            with self.transaction():
                self.db.execute(
                    f"INSERT INTO api_keys ({_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
                    [key.id, key.user, key.key_hash, stored_time(key.created_at), revoked],
                )
        except sqlite3.IntegrityError:
            raise AlreadyExistsError(f"an API key with id {key.id!r} or its hash exists") from None

    @guarded
    def api_key_by_hash(self, key_hash: str) -> ApiKey | None:
        row = self.db.execute(
            f"SELECT {_COLUMNS} FROM api_keys WHERE key_hash = ?", [clean_text(key_hash)]
        ).fetchone()
        return _key(row) if row else None

    @guarded
    def list_api_keys(self) -> list[ApiKey]:
        rows = self.db.execute(f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, id")
        return [_key(row) for row in rows]

    @guarded
    def revoke_api_key(self, key_id: str) -> ApiKey:
        key_id = clean_text(key_id)  # from a caller: SQLite cannot bind a lone surrogate
        with self.transaction():
            self.db.execute(
                "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?",
                [stored_time(utcnow()), key_id],
            )
            row = self.db.execute(
                f"SELECT {_COLUMNS} FROM api_keys WHERE id = ?", [key_id]
            ).fetchone()
        if row is None:
            raise NotFoundError(f"no API key with id {key_id!r}")
        return _key(row)
