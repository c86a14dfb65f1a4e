"""Letta's steps and what Letta reads of a run besides its messages (its
usage, steps, metrics, trace), and the readiness check, driven by
letta-client 1.x against a real server: a step is one turn under one
step_id, its tokens those of every model answer it stored; a step that
waited for an approval goes on in the approval's run; feedback given it is
kept, shown and listed by. Another user's runs and steps are 404s, word for
word as unknown ids."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from letta_client import APIStatusError, Letta, NotFoundError
from support.client_tools import BASH
from support.serving import new_key

from memgpt_lite.testing.script import call, reply, say
from memgpt_lite.testing.server import FakeOpenAIServer

MODEL = "openai/gpt-4o-mini"


def tokens(usage: Any) -> tuple[int, int, int]:
    return usage.prompt_tokens, usage.completion_tokens, usage.total_tokens


def raw(client: Letta, path: str) -> Any:
    """What the server answers to GET `path` (a route letta-client 1.x has no call for)."""
    return client.get(path, cast_to=object)


def test_a_steps_runs_usage_and_the_steps_routes(
    client: Letta, db: str, server: str, fake_llm: FakeOpenAIServer
) -> None:
    agent = client.agents.create(model=MODEL)
    # One step in two runs: its first answer asks the client to run Bash,
    # the client's result (the second run) goes on to the reply.
    fake_llm.enqueue(reply("let me look", [call("Bash", command="ls")]))
    asked = client.agents.messages.create(
        agent.id, client_tools=[BASH], messages=[{"role": "user", "content": "what files?"}]
    )
    assert asked.stop_reason.stop_reason == "requires_approval"
    call_id = asked.messages[-1].tool_call.tool_call_id
    fake_llm.enqueue(say("You have a.txt."))
    result = {"type": "tool", "tool_call_id": call_id, "tool_return": "a.txt", "status": "success"}
    answered = client.agents.messages.create(
        agent.id, client_tools=[BASH], messages=[{"type": "approval", "approvals": [result]}]
    )
    (first_run,), (second_run,) = asked.usage.run_ids, answered.usage.run_ids
    step_id = asked.messages[0].step_id
    assert step_id is not None and answered.messages[-1].step_id == step_id
    other = client.agents.create(model=MODEL)
    fake_llm.enqueue(say("Hello."))
    later = client.agents.messages.create(other.id, messages=[{"role": "user", "content": "hi"}])
    later_step = later.messages[0].step_id

    # Each run's usage is what its own part of the step spent.
    assert tokens(client.runs.usage.retrieve(first_run)) == tokens(asked.usage)
    assert tokens(client.runs.usage.retrieve(second_run)) == tokens(answered.usage)
    assert asked.usage.total_tokens > 0 and answered.usage.total_tokens > 0

    # The step sums both; it names the run it went on in.
    step = client.steps.retrieve(step_id)
    assert (step.id, step.agent_id, step.run_id) == (step_id, agent.id, second_run)
    assert (step.status, step.stop_reason, step.model) == ("success", "end_turn", "gpt-4o-mini")
    both = zip(tokens(asked.usage), tokens(answered.usage), strict=True)
    assert tokens(step) == tuple(a + b for a, b in both)
    assert [s.id for s in client.runs.steps.list(first_run)] == [step_id]
    assert [s.id for s in client.runs.steps.list(second_run)] == [step_id]

    # The steps of the user, newest first, paged and filtered.
    assert [s.id for s in client.steps.list()] == [later_step, step_id]
    assert [s.id for s in client.steps.list(order="asc")] == [step_id, later_step]
    assert [s.id for s in client.steps.list(limit=1).items] == [later_step]
    assert [s.id for s in client.steps.list(after=later_step)] == [step_id]
    assert [s.id for s in client.steps.list(agent_id=agent.id)] == [step_id]
    assert list(client.steps.list(model="gpt-4o")) == []
    assert list(client.steps.list(start_date="2999-01-01T00:00:00Z")) == []
    assert len(list(client.steps.list(end_date="2999-01-01T00:00:00+01:00"))) == 2
    assert list(client.steps.list(feedback="positive")) == []  # none given yet

    # Its messages: those of both runs, as each run lists them.
    by_run = [*client.runs.messages.list(first_run), *client.runs.messages.list(second_run)]
    listed = list(client.steps.messages.list(step_id))
    assert [(m.id, m.message_type) for m in listed] == [(m.id, m.message_type) for m in by_run]
    assert listed[0].message_type == "user_message" and listed[-2].content == "You have a.txt."
    # Paged one stored message at a time, newest first: each once, none split.
    walked = client.steps.messages.list(step_id, order="desc", limit=1)
    assert [m.id for m in walked] == [m.id for m in reversed(by_run)]

    # Metrics: times, steps and tools; no traces are kept.
    step_metrics = client.steps.metrics.retrieve(step_id)
    assert (step_metrics.id, step_metrics.run_id) == (step_id, second_run)
    assert step_metrics.step_start_ns > 0 and step_metrics.step_ns > 0
    run_metrics = raw(client, f"/v1/runs/{first_run}/metrics")
    assert (run_metrics["id"], run_metrics["num_steps"]) == (first_run, 1)
    assert run_metrics["run_ns"] > 0 and run_metrics["tools_used"] == []  # Bash is the client's
    assert raw(client, f"/v1/runs/{later.usage.run_ids[0]}/metrics")["tools_used"] == [
        "tool-send_message"
    ]
    assert client.runs.trace.retrieve(first_run) == []
    assert client.steps.trace.retrieve(step_id) is None

    # Feedback: kept with the step, shown and listed by it.
    given = client.steps.feedback.create(step_id, feedback="positive", tags=["helpful", "tools"])
    assert (given.id, given.feedback, given.tags, given.run_id) == (
        step_id,
        "positive",
        ["helpful", "tools"],
        second_run,
    )
    client.steps.feedback.create(later_step, feedback="negative")
    assert [s.id for s in client.steps.list(feedback="positive")] == [step_id]
    assert [s.id for s in client.steps.list(has_feedback=True)] == [later_step, step_id]
    assert list(client.steps.list(has_feedback=False)) == []
    assert [s.id for s in client.steps.list(tags=["tools", "other"])] == [step_id]
    cleared = client.steps.feedback.create(step_id)  # no feedback; the tags stay
    assert (cleared.feedback, cleared.tags) == (None, ["helpful", "tools"])
    assert [s.id for s in client.steps.list(has_feedback=False)] == [step_id]
    shown = client.runs.steps.list(second_run).items[0]
    assert (shown.feedback, shown.tags) == (None, ["helpful", "tools"])
    with pytest.raises(APIStatusError) as wrong:
        client.steps.feedback.create(step_id, extra_body={"feedback": "meh"})
    assert wrong.value.status_code == 422
    assert client.steps.retrieve(step_id).tags == ["helpful", "tools"]

    health = httpx.get(f"{server}/v1/health/").json()  # no key, as Letta's
    assert health["status"] == "ok"
    assert httpx.get(f"{server}/v1/ready/").json() == health
    assert httpx.get(f"{server}/v1/ready").json() == health

    bob = Letta(base_url=server, api_key=new_key(db, "bob"), max_retries=0)
    assert list(bob.steps.list()) == [] and list(bob.steps.list(agent_id=agent.id)) == []
    for reads in (
        lambda c, i: c.steps.retrieve(i),
        lambda c, i: list(c.steps.messages.list(i)),
        lambda c, i: c.steps.metrics.retrieve(i),
        lambda c, i: c.steps.trace.retrieve(i),
        lambda c, i: c.steps.feedback.create(i, feedback="negative", tags=["theirs"]),
    ):
        with pytest.raises(NotFoundError) as theirs:
            reads(bob, step_id)
        with pytest.raises(NotFoundError) as unknown:
            reads(client, "step-unknown")
        assert theirs.value.body == {"detail": f"no step with id {step_id!r}"}
        assert unknown.value.body == {"detail": "no step with id 'step-unknown'"}
    mine = client.steps.retrieve(step_id)  # bob's feedback changed nothing
    assert (mine.feedback, mine.tags) == (None, ["helpful", "tools"])
    for path in ("usage", "steps", "metrics", "trace"):
        with pytest.raises(NotFoundError) as theirs:
            raw(bob, f"/v1/runs/{first_run}/{path}")
        assert theirs.value.body == {"detail": f"no run with id {first_run!r}"}
