"""The sends answered under an idempotency key, for every backend (see
storage/protocols/sends.py). A claim is one row, made by an insert that
does nothing if the key is held, so two processes that claim one key at
once see one winner."""

from __future__ import annotations

from datetime import datetime

from memgpt_lite.models import utcnow
from memgpt_lite.storage.core.sql import stored_datetime
from memgpt_lite.storage.core.transactions import Transactions, guarded
from memgpt_lite.storage.protocols.sends import SentRequest
from memgpt_lite.text import clean_text

_KEY = "owner = ? AND agent_id = ? AND request_key = ?"


class SentRequests(Transactions):
    """Claims of sends and their answers (see `SentRequestStorage`)."""

    @guarded
    def claim_send(
        self,
        owner: str,
        agent_id: str,
        key: str,
        fingerprint: str,
        *,
        expired_before: datetime,
        abandoned_before: datetime,
    ) -> SentRequest | None:
        where = [owner, agent_id, clean_text(key)]
        now = self.dialect.time(utcnow())
        with self.transaction():
            self._execute(
                "DELETE FROM sent_requests WHERE created_at < ?",
                [self.dialect.time(expired_before)],
            )
            self._execute(
                f"DELETE FROM sent_requests WHERE {_KEY} AND outcome IS NULL AND created_at < ?",
                [*where, self.dialect.time(abandoned_before)],
            )
            inserted = self._execute(
                "INSERT INTO sent_requests (owner, agent_id, request_key, fingerprint, "
                "created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [*where, fingerprint, now],
            )
            if inserted.rowcount == 1:
                return None
            row = self._one(
                f"SELECT fingerprint, outcome, created_at FROM sent_requests WHERE {_KEY}", where
            )
        return SentRequest(row[0], row[1], stored_datetime(row[2]) or utcnow())

    @guarded
    def finish_send(self, owner: str, agent_id: str, key: str, outcome: str) -> None:
        with self.transaction():
            self._execute(
                f"UPDATE sent_requests SET outcome = ? WHERE {_KEY}",
                [outcome, owner, agent_id, clean_text(key)],
            )

    @guarded
    def release_send(self, owner: str, agent_id: str, key: str) -> None:
        with self.transaction():
            self._execute(
                f"DELETE FROM sent_requests WHERE {_KEY} AND outcome IS NULL",
                [owner, agent_id, clean_text(key)],
            )
