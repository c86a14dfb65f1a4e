"""The contract for token usage: one record per model answer, totals per model."""

from __future__ import annotations

import pytest

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import AgentState, ModelUsage, UsageRecord
from memgpt_lite.storage.protocols.accounts import StepUsage
from support.contract.base import ContractBase, OpenStore, day, new_agent, said
from support.contract.keys import owned


def spent(agent: AgentState, step: str, model: str, prompt: int, completion: int, **fields):
    return UsageRecord(
        agent_id=agent.id,
        step_id=step,
        model=model,
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
        **fields,
    )


class UsageContract(ContractBase):
    def test_totals_are_summed_per_model_from_every_record(self, store):
        sam = new_agent(store)
        store.add_usage(spent(sam, "step-1", "gpt-4o-mini", 1000, 20))
        store.add_usage(spent(sam, "step-1", "gpt-4o-mini", 1100, 30, requests=2))
        store.add_usage(spent(sam, "step-2", "gpt-4o", 500, 5, estimated=True))
        assert store.usage_by_model(sam.id) == [
            ModelUsage(
                model="gpt-4o",
                prompt_tokens=500,
                completion_tokens=5,
                total_tokens=505,
                requests=1,
                steps=1,
                estimated_requests=1,
            ),
            ModelUsage(
                model="gpt-4o-mini",
                prompt_tokens=2100,
                completion_tokens=50,
                total_tokens=2150,
                requests=3,
                steps=1,
                estimated_requests=0,
            ),
        ]

    def test_each_agent_has_its_own_totals(self, store):
        sam, ada = new_agent(store, "sam"), new_agent(store, "ada")
        store.add_usage(spent(sam, "s", "m", 10, 1))
        assert store.usage_by_model(ada.id) == []
        assert [u.total_tokens for u in store.usage_by_model(sam.id)] == [11]

    def test_a_step_s_records_come_back_in_order(self, store):
        sam = new_agent(store)
        first = spent(sam, "step-1", "m", 10, 1)
        second = spent(sam, "step-1", "m", 20, 2, estimated=True)
        for record in (first, second, spent(sam, "step-2", "m", 30, 3)):
            store.add_usage(record)
        assert store.step_usage(sam.id, "step-1") == [first, second]
        assert store.step_usage(sam.id, "step-9") == []

    def test_every_record_of_an_agent_comes_back_in_order(self, store):
        sam, ada = new_agent(store, "sam"), new_agent(store, "ada")
        records = [
            spent(sam, "step-1", "m", 10, 1),
            spent(sam, "compaction-1", "other", 20, 2, estimated=True, requests=2),
            spent(sam, "step-2", "m", 30, 3),
        ]
        store.add_usage(records[0])
        store.add_usage(spent(ada, "step-1", "m", 5, 5))
        for record in records[1:]:
            store.add_usage(record)
        assert store.agent_usage(sam.id) == records
        assert store.agent_usage("agent-unknown") == []

    def test_steps_sum_their_records_newest_first_of_the_owners_agents(self, store):
        sam, ada = owned(store, "sam", "alice"), owned(store, "ada", "alice")
        bobs = owned(store, "sam", "bob")
        first = spent(sam, "step-1", "m", 10, 1, created_at=day("2026-01-01 10:00"))
        again = spent(
            sam,
            "step-1",
            "m",
            20,
            2,
            estimated=True,
            requests=2,
            created_at=day("2026-01-01 10:01"),
        )
        for record in (
            first,
            spent(bobs, "step-b", "m", 5, 5),
            spent(ada, "step-2", "other", 30, 3),
            again,
            spent(sam, "compaction-1", "m", 40, 4),
        ):
            store.add_usage(record)
        steps = store.list_steps("alice")
        assert [(s.agent_id, s.step_id) for s in steps] == [
            (sam.id, "compaction-1"),
            (ada.id, "step-2"),
            (sam.id, "step-1"),  # ordered by its first record
        ]
        assert steps[2] == StepUsage(
            agent_id=sam.id,
            step_id="step-1",
            model="m",
            prompt_tokens=30,
            completion_tokens=3,
            total_tokens=33,
            requests=3,
            estimated_requests=2,
            first_at=first.created_at,
            last_at=again.created_at,
        )
        assert [s.step_id for s in store.list_steps("alice", agent_id=sam.id)] == [
            "compaction-1",
            "step-1",
        ]
        assert [s.step_id for s in store.list_steps("alice", limit=1)] == ["compaction-1"]
        assert store.list_steps("alice", agent_id=bobs.id) == []  # another owner's agent
        assert store.list_steps("bob", step_ids=["step-1", "step-2"]) == []
        # Unknown ids by the thousand: more than one statement's parameters hold.
        many = [f"step-{i}" for i in range(3, 2003)]
        assert [s.step_id for s in store.list_steps("alice", step_ids=[*many, "step-1"])] == [
            "step-1"
        ]
        assert store.list_steps("alice", step_ids=[]) == []
        assert [s.step_id for s in store.list_steps("bob")] == ["step-b"]

    def test_feedback_is_kept_per_step_and_shown_with_it(self, store, open_store: OpenStore):
        sam, bobs = owned(store, "sam", "alice"), owned(store, "sam", "bob")
        for agent, step in ((sam, "step-1"), (sam, "step-1"), (sam, "step-2"), (bobs, "step-1")):
            store.add_usage(spent(agent, step, "m", 10, 1))
        store.set_step_feedback(sam.id, "step-1", "positive", ["helpful", "t\ud800"])
        store.set_step_feedback(bobs.id, "step-1", "negative")

        def shown(owner: str) -> list[tuple[str, str | None, list[str]]]:
            return [(s.step_id, s.feedback, s.tags) for s in open_store().list_steps(owner)]

        # One row per step, not per record; another agent's step of the same id apart.
        assert shown("alice") == [
            ("step-2", None, []),
            ("step-1", "positive", ["helpful", "t\ufffd"]),
        ]
        assert shown("bob") == [("step-1", "negative", [])]
        # Tags not given keep theirs; feedback None takes it away; tags given replace.
        store.set_step_feedback(sam.id, "step-1", None)
        assert shown("alice")[1] == ("step-1", None, ["helpful", "t\ufffd"])
        store.set_step_feedback(sam.id, "step-1", "negative", [])
        assert shown("alice")[1] == ("step-1", "negative", [])
        # Only a step with usage takes feedback: nothing stored for the others.
        for agent_id, step in ((sam.id, "step-9"), (bobs.id, "step-2"), ("agent-gone", "step-1")):
            with pytest.raises(NotFoundError):
                store.set_step_feedback(agent_id, step, "positive")
        assert shown("bob") == [("step-1", "negative", [])]
        store.delete_agent(sam.id)  # its feedback goes with it (no foreign key left dangling)
        assert shown("alice") == []

    def test_usage_of_an_unknown_agent_is_refused(self, store):
        ghost = AgentState(name="ghost", llm={"model": "m"}, system="s")
        with pytest.raises(NotFoundError):
            store.add_usage(spent(ghost, "s", "m", 1, 1))

    def test_usage_is_durable_and_outlives_popped_messages(self, store, open_store: OpenStore):
        sam = new_agent(store)
        message = said(sam, "hi", step_id="s")
        store.add_messages([message])
        store.add_usage(spent(sam, "s", "m", 10, 1))
        store.delete_messages_from(sam.id, message.seq)
        other = open_store()
        assert [u.total_tokens for u in other.usage_by_model(sam.id)] == [11]

    def test_a_usage_record_rolls_back_with_its_transaction(self, store):
        sam = new_agent(store)
        with pytest.raises(RuntimeError), store.transaction():
            store.add_usage(spent(sam, "s", "m", 10, 1))
            raise RuntimeError("the answer could not be stored")
        assert store.usage_by_model(sam.id) == []

    def test_deleting_the_agent_deletes_its_usage(self, store):
        sam = new_agent(store)
        store.add_usage(spent(sam, "s", "m", 10, 1))
        store.delete_agent(sam.id)
        assert store.usage_by_model(sam.id) == []
