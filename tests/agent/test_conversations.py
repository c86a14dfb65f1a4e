"""An agent's conversations through the Python API: each its own history and
window over the agent's one memory, stepped by the one step core; two
conversations of an agent step at once, without crossing. Both backends."""

from __future__ import annotations

import threading

import pytest

from memgpt_lite import Agent, tool
from memgpt_lite.errors import NotFoundError
from memgpt_lite.testing import call, reply, say

A_IN_TOOL = threading.Event()
B_DONE = threading.Event()


@tool
def wait_for_the_other() -> str:
    """Wait until the other conversation has answered."""
    A_IN_TOOL.set()
    # The guard of a failing test only: the other step ends long before.
    return "it answered" if B_DONE.wait(60) else "it never answered"


@pytest.fixture(autouse=True)
def _fresh_events():
    A_IN_TOOL.clear()
    B_DONE.clear()


def contents(agent: Agent) -> list[str | None]:
    return [m.content for m in agent.context_messages() if m.role == "user"]


def test_conversations_are_listed_renamed_and_deleted(fake_llm, db_location):
    sam = Agent.create("sam", "gpt-4o-mini", db=db_location)
    trip = sam.conversations.create(summary="trip")
    work = sam.conversations.create()
    assert [c.id for c in sam.conversations.list()] == [trip.id, work.id]
    assert sam.conversations.update(trip.id, "the trip to Oslo").summary == "the trip to Oslo"
    assert sam.conversations.get(trip.id).summary == "the trip to Oslo"
    sam.conversations.delete(work.id)
    assert [c.id for c in sam.conversations.list()] == [trip.id]
    kim = Agent.create("kim", "gpt-4o-mini", store=sam.store)
    with pytest.raises(NotFoundError):
        kim.conversations.get(trip.id)  # sam's, not kim's
    with pytest.raises(NotFoundError):
        sam.conversations.open("conv-ghost")
    assert sam.conversations.open("default").state.conversation_id is None


def test_each_conversation_has_its_own_history_over_one_memory(fake_llm, db_location):
    sam = Agent.create("sam", "gpt-4o-mini", db=db_location)
    trip = sam.conversations.open(sam.conversations.create().id)
    fake_llm.enqueue(
        reply(
            tool_calls=[
                call(
                    "core_memory_append",
                    label="human",
                    content="Likes Oslo.",
                    request_heartbeat=True,
                )
            ]
        ),
        say("Noted."),
        say("Hello again."),
    )
    assert trip.step("I like Oslo.").replies == ["Noted."]
    assert sam.step("Hi.").replies == ["Hello again."]
    assert contents(trip) == ["I like Oslo."]
    assert contents(sam) == ["Hi."]
    # The memory is the agent's: the default conversation's request held it.
    assert "Likes Oslo." in fake_llm.chat_requests[-1]["messages"][0]["content"]
    sent = [m.get("content") for m in fake_llm.chat_requests[-1]["messages"]]
    assert "Hi." in sent and "I like Oslo." not in sent
    again = Agent.load("sam", db=db_location).conversations.open(trip.state.conversation_id)
    assert contents(again) == ["I like Oslo."]


def test_two_conversations_of_an_agent_step_at_once(fake_llm, db_location):
    sam = Agent.create("sam", "gpt-4o-mini", db=db_location, tools=[wait_for_the_other])
    first = sam.conversations.open(sam.conversations.create().id)
    second = Agent.load("sam", db=db_location, tools=[wait_for_the_other]).conversations.open(
        sam.conversations.create().id
    )
    results = {}
    fake_llm.enqueue(reply(tool_calls=[call("wait_for_the_other")]))

    def run_first() -> None:
        results["first"] = first.step("Wait for the other one.")

    runner = threading.Thread(target=run_first)
    runner.start()
    assert A_IN_TOOL.wait(60)  # the first conversation's step holds its lock now
    fake_llm.enqueue(say("Second here."))
    assert second.step("Are you there?").replies == ["Second here."]
    B_DONE.set()
    runner.join(60)
    assert fake_llm.pending() == 0
    [result] = results["first"].tool_results  # no heartbeat asked: the step ends there
    assert result.content == "it answered"
    assert contents(first) == ["Wait for the other one."]
    assert contents(second) == ["Are you there?"]
    assert contents(sam) == []


def test_a_fork_copies_the_window_and_summary_then_goes_its_own_way(fake_llm, db_location):
    sam = Agent.create("sam", "gpt-4o-mini", db=db_location)
    fake_llm.enqueue(say("Oslo it is."), say("Then Bergen."), say("Still Oslo."))
    sam.step("Let us plan Oslo.")
    sam.store.update_agent(sam.state.id, lambda s: setattr(s, "summary", "They chose Oslo."))

    fork = sam.conversations.fork("default", summary="after Oslo")
    forked = sam.conversations.open(fork.id)
    assert (fork.summary, forked.state.summary) == ("after Oslo", "They chose Oslo.")
    assert contents(forked) == ["Let us plan Oslo."]
    original_ids = {m.id for m in sam.context_messages()}
    assert not original_ids & {m.id for m in forked.context_messages()}  # copies

    forked.step("And after Oslo?")
    sam.step("Back to Oslo.")
    assert contents(forked) == ["Let us plan Oslo.", "And after Oslo?"]
    assert contents(sam) == ["Let us plan Oslo.", "Back to Oslo."]
    with pytest.raises(NotFoundError):
        sam.conversations.fork("conv-ghost")
