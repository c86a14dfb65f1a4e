"""benchmarks/concurrent_processes.py's check from the database finds what it
counts: a lost message, a duplicated one, a crossed reply. Its zeros in a run
mean something only if these are seen."""

import json
import sys

from support.paths import REPO

from memgpt_lite import Agent
from memgpt_lite.models import Message, ToolCall

sys.path.insert(0, str(REPO / "benchmarks"))

from concurrent_processes import verify_agent  # noqa: E402


def exchange(agent_id: str, step: str, asked: str, answered: str) -> list[Message]:
    """A step's user message carrying `asked` and its reply repeating `answered`."""
    call = ToolCall(
        id=f"call_{step}",
        name="send_message",
        arguments=json.dumps({"message": f"You said: Message <{answered}>"}),
    )
    return [
        Message(agent_id=agent_id, role="user", content=f"Message <{asked}>", step_id=step),
        Message(agent_id=agent_id, role="assistant", tool_calls=[call], step_id=step),
        Message(
            agent_id=agent_id,
            role="tool",
            tool_call_id=f"call_{step}",
            name="send_message",
            content="Sent message successfully.",
            step_id=step,
        ),
    ]


def test_a_clean_history_counts_nothing(tmp_path):
    agent = Agent.create("a", "gpt-4o-mini", db=tmp_path / "a.db")
    agent.store.add_messages(
        exchange(agent.state.id, "s1", "p0-a0-c0", "p0-a0-c0")
        + exchange(agent.state.id, "s2", "p1-a0-c0", "p1-a0-c0")
    )
    sent = [("p0-a0-c0", True), ("p1-a0-c0", True)]
    counts = verify_agent(agent.store, agent.state.id, sent)
    assert counts == {"lost": 0, "unexpected": 0, "crossed": 0, "replies": 2, "failed_stored": 0}


def test_lost_duplicated_unexpected_and_crossed_are_counted(tmp_path):
    agent = Agent.create("a", "gpt-4o-mini", db=tmp_path / "a.db")
    agent.store.add_messages(
        exchange(agent.state.id, "s1", "p0-a0-c0", "p1-a0-c0")  # crossed
        + exchange(agent.state.id, "s2", "p1-a0-c0", "p1-a0-c0")
        + exchange(agent.state.id, "s3", "p1-a0-c0", "p1-a0-c0")  # stored twice
        + exchange(agent.state.id, "s4", "p9-a0-c0", "p9-a0-c0")  # sent by nobody
    )
    sent = [("p0-a0-c0", True), ("p1-a0-c0", True), ("p0-a0-c1", True)]  # c1 never stored
    counts = verify_agent(agent.store, agent.state.id, sent)
    assert counts["lost"] == 2  # the duplicate and the missing one
    assert counts["unexpected"] == 1
    assert counts["crossed"] == 1
    assert counts["replies"] == 4
