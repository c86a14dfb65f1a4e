"""The contract for Letta's runs: kept per owner, updated in place, gone with their agent."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import utcnow
from memgpt_lite.storage.protocols.runs import Run
from support.contract.base import ContractBase, OpenStore
from support.contract.keys import owned


class RunContract(ContractBase):
    def test_a_run_is_stored_updated_and_read_by_its_owner_only(self, store, open_store: OpenStore):
        agent = owned(store, "sam", "alice")
        run = Run(owner="alice", agent_id=agent.id, status="running")
        store.save_run(run)
        run.status, run.stop_reason, run.message_ids = "completed", "end_turn", ["m1", "m2"]
        run.completed_at = utcnow()
        store.save_run(run)
        read = open_store().get_run(run.id, "alice")
        assert (read.status, read.stop_reason, read.message_ids) == (
            "completed",
            "end_turn",
            ["m1", "m2"],
        )
        assert read.created_at == run.created_at and read.completed_at is not None
        with pytest.raises(NotFoundError, match="no run with id"):
            store.get_run(run.id, "bob")

    def test_runs_are_listed_newest_first_by_agent_and_go_with_it(self, store):
        sam, ada = owned(store, "sam", "alice"), owned(store, "ada", "alice")
        start = utcnow()
        runs = [
            Run(owner="alice", agent_id=agent.id, created_at=start + timedelta(seconds=n))
            for n, agent in enumerate([sam, ada, sam])
        ]
        for run in runs:
            store.save_run(run)
        assert [r.id for r in store.list_runs("alice")] == [r.id for r in reversed(runs)]
        assert [r.id for r in store.list_runs("alice", sam.id, limit=1)] == [runs[2].id]
        assert store.list_runs("bob") == []
        store.delete_agent(sam.id)
        assert [r.id for r in store.list_runs("alice")] == [runs[1].id]
        with pytest.raises(NotFoundError):
            store.save_run(Run(owner="alice", agent_id=sam.id))

    def test_an_end_keeps_a_cancel_and_a_cancel_after_the_end_changes_nothing(self, store):
        agent = owned(store, "sam", "alice")
        cancelled, finished = (
            Run(owner="alice", agent_id=agent.id, status="running") for _ in "ab"
        )
        for run in (cancelled, finished):
            store.save_run(run)
        assert store.cancel_run(cancelled.id, "alice").status == "cancelled"
        cancelled.status, cancelled.stop_reason, cancelled.message_ids = (
            "completed",
            "end_turn",
            ["m"],
        )
        kept = store.end_run(cancelled)  # the step ended after the cancel
        assert (kept.status, kept.stop_reason, kept.message_ids) == (
            "cancelled",
            "cancelled",
            ["m"],
        )
        assert kept.completed_at is not None
        finished.status, finished.stop_reason = "completed", "end_turn"
        store.end_run(finished)
        again = store.cancel_run(finished.id, "alice")
        assert (again.status, again.stop_reason) == ("completed", "end_turn")
        with pytest.raises(NotFoundError):
            store.cancel_run(finished.id, "bob")

    def test_open_runs_not_renewed_are_ended_as_abandoned(self, store):
        agent = owned(store, "sam", "alice")
        long_ago = utcnow() - timedelta(hours=1)
        stale, cancelled, renewed, done = (
            Run(owner="alice", agent_id=agent.id, status="running", created_at=long_ago)
            for _ in range(4)
        )
        done.status, done.completed_at = "completed", long_ago
        for run in (stale, cancelled, renewed, done):
            store.save_run(run)
        store.cancel_run(cancelled.id, "alice")
        store.renew_runs([renewed.id, done.id])
        assert store.end_abandoned_runs(utcnow() - timedelta(minutes=1), "its server stopped") == 2
        ended = {r.id: r for r in store.list_runs("alice")}
        assert (ended[stale.id].status, ended[stale.id].error) == ("failed", "its server stopped")
        assert ended[stale.id].stop_reason == "error" and ended[stale.id].completed_at
        assert (ended[cancelled.id].status, ended[cancelled.id].error) == ("cancelled", None)
        assert ended[cancelled.id].completed_at is not None
        assert ended[renewed.id].status == "running" and ended[renewed.id].completed_at is None
        assert ended[done.id].completed_at == long_ago

    def test_a_background_runs_chunks_are_read_in_order_after_a_seq_id(self, store, open_store):
        agent = owned(store, "sam", "alice")
        run = Run(owner="alice", agent_id=agent.id, status="running", background=True)
        other = Run(owner="alice", agent_id=agent.id, status="running", background=True)
        store.save_run(run)
        store.save_run(other)
        assert open_store().get_run(run.id, "alice").background is True
        store.add_run_chunks(run.id, [(1, '{"a": 1}'), (2, '{"b": 2}')])
        store.add_run_chunks(run.id, [(3, '{"c": "é"}')])
        store.add_run_chunks(other.id, [(1, "{}")])
        reader = open_store()
        assert reader.run_chunks(run.id, 0, 100) == [
            (1, '{"a": 1}'),
            (2, '{"b": 2}'),
            (3, '{"c": "é"}'),
        ]
        assert reader.run_chunks(run.id, 1, 1) == [(2, '{"b": 2}')]
        assert reader.run_chunks(run.id, 3, 100) == []
        store.delete_run_chunks(utcnow() - timedelta(hours=1))  # none so old
        assert len(reader.run_chunks(run.id, 0, 100)) == 3
        with pytest.raises(NotFoundError):
            store.delete_run(run.id, "bob")
        store.delete_run(run.id, "alice")
        assert reader.run_chunks(run.id, 0, 100) == []
        with pytest.raises(NotFoundError):
            store.get_run(run.id, "alice")
        store.delete_run_chunks(utcnow() + timedelta(seconds=1))
        assert reader.run_chunks(other.id, 0, 100) == []
        store.add_run_chunks(other.id, [(2, "{}")])
        store.delete_agent(agent.id)  # its runs go, and their chunks with them
        assert reader.run_chunks(other.id, 0, 100) == []
