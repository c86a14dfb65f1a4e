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
