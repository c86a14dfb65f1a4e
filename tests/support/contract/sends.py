"""The contract for the sends answered under an idempotency key: one claim
per owner, agent and key, seen by every store on the database."""

from __future__ import annotations

from datetime import datetime, timedelta

from memgpt_lite.models import utcnow
from memgpt_lite.storage.protocol import SentRequest, Storage
from support.contract.base import ContractBase, OpenStore


def claim(
    store: Storage, key: str, *, owner: str = "alice", agent: str = "agent-1", **bounds: datetime
) -> SentRequest | None:
    now = utcnow()
    bounds.setdefault("expired_before", now - timedelta(days=1))
    bounds.setdefault("abandoned_before", now - timedelta(minutes=15))
    return store.claim_send(owner, agent, key, "print-1", **bounds)


class SentRequestContract(ContractBase):
    def test_a_key_is_claimed_once_then_holds_its_answer(self, store, open_store: OpenStore):
        assert claim(store, "k") is None
        other = open_store()
        running = claim(other, "k")
        assert running is not None and (running.fingerprint, running.outcome) == ("print-1", None)
        store.finish_send("alice", "agent-1", "k", '{"answer": 1}')
        assert claim(other, "k").outcome == '{"answer": 1}'
        store.release_send("alice", "agent-1", "k")  # answered: kept
        assert claim(store, "k").outcome == '{"answer": 1}'

    def test_keys_are_per_owner_and_agent(self, store):
        assert claim(store, "k") is None
        assert claim(store, "k", owner="bob") is None
        assert claim(store, "k", agent="agent-2") is None
        assert claim(store, "k") is not None

    def test_a_released_claim_is_claimed_anew(self, store):
        assert claim(store, "k") is None
        store.release_send("alice", "agent-1", "k")
        assert claim(store, "k") is None

    def test_old_claims_expire_and_unanswered_ones_are_taken_over(self, store):
        assert claim(store, "old") is None
        store.finish_send("alice", "agent-1", "old", "{}")
        assert claim(store, "stuck") is None
        later = utcnow() + timedelta(seconds=1)
        assert claim(store, "stuck", abandoned_before=later) is None  # taken over
        assert claim(store, "old", abandoned_before=later) is not None  # answered: kept
        assert claim(store, "old", expired_before=later) is None  # expired: gone
