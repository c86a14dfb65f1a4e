"""The sends the HTTP server answered under a client's idempotency key: the
part of `Storage` that lets a retried send be answered from the first one
(memgpt_lite/server/sendonce.py) instead of run again, across processes."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple, Protocol, runtime_checkable


class SentRequest(NamedTuple):
    """A send claimed under a key: what its request was (`fingerprint`, a
    hash the server makes) and its answer, None while it runs."""

    fingerprint: str
    outcome: str | None
    created_at: datetime


@runtime_checkable
class SentRequestStorage(Protocol):
    """Claims of sends by (owner, agent, key), and their answers."""

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
        """Claim `key` for a new send: None when this call claimed it, else
        the send that holds it. First deletes every claim made before
        `expired_before`; a claim still without an answer made before
        `abandoned_before` (its process died) is taken over as new."""
        ...

    def finish_send(self, owner: str, agent_id: str, key: str, outcome: str) -> None:
        """Store the answer of the send claimed under `key`."""
        ...

    def release_send(self, owner: str, agent_id: str, key: str) -> None:
        """Forget the claim of a send that stored nothing (refused before
        its step ran), unless it has an answer: a retry runs anew."""
        ...
