"""State survives processes: a fact taught in one process is in the next one's
system message; shared blocks, concurrent writers and a kill mid-step. Each
test runs against SQLite and PostgreSQL (`db_location`)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest
from support.backends import is_postgres, open_db

from memgpt_lite import Agent, AgentState, AlreadyExistsError, Block, ConfigError, Message
from memgpt_lite.errors import ConflictError
from memgpt_lite.loop.request import StepRun, add_pressure_alert
from memgpt_lite.memory.recall.window import compile_context
from memgpt_lite.testing import FakeOpenAIServer, Reply, call, reply, say


def cli(*args: str, db: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memgpt_lite", "--db", db, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ.copy(),
    )


def test_a_fact_taught_in_one_process_is_known_in_the_next(
    fake_llm, tmp_path, monkeypatch, db_location
):
    db = db_location
    monkeypatch.chdir(tmp_path)  # the processes' working folder
    assert (
        cli(
            "create",
            "sam",
            "--model",
            "gpt-4o-mini",
            "--persona",
            "I am Sam.",
            "--human",
            "",
            db=db,
        ).returncode
        == 0
    )
    fake_llm.enqueue(
        reply(
            tool_calls=[
                call(
                    "core_memory_append",
                    label="human",
                    content="Name: Alice",
                    request_heartbeat=True,
                )
            ]
        ),
        say("Nice to meet you, Alice!"),
    )
    taught = cli("send", "sam", "Hi, my name is Alice", db=db)
    assert taught.returncode == 0, taught.stderr
    assert taught.stdout == "Nice to meet you, Alice!\n"

    fake_llm.enqueue(say("Your name is Alice."))
    asked = cli("send", "sam", "What is my name?", db=db)
    assert asked.stdout == "Your name is Alice.\n"
    request = fake_llm.chat_requests[-1]
    system = request["messages"][0]["content"]
    assert "Name: Alice" in system and "I am Sam." in system
    contents = [m["content"] for m in request["messages"]]
    assert "Hi, my name is Alice" in contents
    assert fake_llm.rejections == []
    with open_db(db) as store:  # the processes used the database named, not another
        state = store.get_agent("sam")
        human = {b.label: b.value for b in store.get_blocks(state.id)}["human"]
        assert (human, store.agent_stats(state.id).message_count) == ("Name: Alice", 8)


def test_shared_block_edit_is_seen_by_both_agents(fake_llm, db_location):
    db = db_location
    team = Block(label="team", value="Project: apollo", description="shared notes")
    alice = Agent.create("alice", "gpt-4o-mini", db=db, blocks=[Block(label="persona"), team])
    bob = Agent.create("bob", "gpt-4o-mini", db=db, blocks=[Block(label="persona"), team])
    fake_llm.enqueue(
        reply(
            tool_calls=[
                call(
                    "core_memory_append",
                    label="team",
                    content="Deadline: friday",
                    request_heartbeat=False,
                )
            ]
        )
    )
    alice.step("note the deadline")
    fake_llm.enqueue(say("friday"))
    bob.step("when is the deadline?")
    assert "Deadline: friday" in fake_llm.chat_requests[-1]["messages"][0]["content"]
    reloaded = Agent.load("bob", db=db)
    assert reloaded.block("team").value == "Project: apollo\nDeadline: friday"
    assert reloaded.block("team").id == alice.block("team").id


def test_attach_block_shares_it_after_creation(fake_llm, db_location):
    db = db_location
    alice = Agent.create("alice", "gpt-4o-mini", db=db)
    bob = Agent.create("bob", "gpt-4o-mini", db=db)
    alice.attach_block(Block(label="team", value="", limit=200))
    bob.attach_block(alice.block("team"))
    alice.set_block("team", "Lead: Carol")
    assert bob.block("team").value == "Lead: Carol"
    assert [b.label for b in bob.blocks] == ["persona", "human", "team"]
    with pytest.raises(AlreadyExistsError, match="already has a block labelled 'human'"):
        bob.attach_block(alice.block("human"))
    with pytest.raises(ConfigError, match="over its limit of 200"):
        bob.set_block("team", "x" * 201)
    assert alice.block("team").value == "Lead: Carol"


WRITER = textwrap.dedent(
    """
    import sys
    from memgpt_lite import Agent
    agent = Agent.load("sam", db=sys.argv[1])
    for i in range(int(sys.argv[2])):
        replies = agent.step(f"{sys.argv[3]} message {i}").replies
        assert replies == ["ok"], replies
    """
)


def test_two_processes_stepping_one_agent_lose_nothing(fake_llm, db_location):
    db = db_location
    Agent.create("sam", "gpt-4o-mini", db=db)
    fake_llm.responder = lambda body: say("ok")
    steps = 15
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, db, str(steps), name],
            env=os.environ.copy(),
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("first", "second")
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
    if not is_postgres(db):
        conn = sqlite3.connect(db)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.close()
    with open_db(db) as store:
        state = store.get_agent("sam")
        stored = store.messages_from(state.id, 0)
        counted = store.agent_stats(state.id).message_count
    assert len(stored) == counted == 2 * steps * 3
    users = {m.content for m in stored if m.role == "user"}
    assert len(users) == 2 * steps
    # Every request, with the interleaved history, passed the server's checks.
    assert fake_llm.rejections == []
    assert len(fake_llm.chat_requests) == 2 * steps


KILLED = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from memgpt_lite import Agent, tool

    @tool
    def slow_job(marker: str) -> str:
        "Take a long time."
        Path(marker).write_text("started")
        time.sleep(60)
        return "done"

    agent = Agent.load("sam", db=sys.argv[1], tools=[slow_job])
    agent.step("start the job")
    """
)


def test_a_kill_mid_step_leaves_the_last_committed_state(fake_llm, tmp_path, db_location):
    db = db_location
    marker = tmp_path / "marker"
    Agent.create("sam", "gpt-4o-mini", db=db, blocks=[Block(label="human", value="Name: Bob")])
    fake_llm.enqueue(
        reply(
            tool_calls=[
                call(
                    "core_memory_replace",
                    label="human",
                    old_content="Bob",
                    new_content="Robert",
                    request_heartbeat=False,
                ),
                call("slow_job", marker=str(marker), request_heartbeat=False),
            ]
        )
    )
    process = subprocess.Popen([sys.executable, "-c", KILLED, db], env=os.environ.copy())
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)

    agent = Agent.load("sam", db=db)
    # The edit made before the slow tool had committed (tools do not hold the
    # database's write lock, which other agents need, while they run)...
    assert agent.block("human").value == "Name: Robert"
    # ...but the response was never stored: no call is left without a result,
    # and the user's message, stored before the call, is left unanswered.
    assert [(m.role, m.content) for m in agent.context_messages()] == [("user", "start the job")]
    assert [m.content for m in agent.history.unanswered()] == ["start the job"]
    fake_llm.enqueue(say("where were we?"))
    assert agent.step("hello?").replies == ["where were we?"]
    assert fake_llm.rejections == []


SLOW_TOOL = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from memgpt_lite import Agent, tool

    @tool
    def wait_for_release(marker: str) -> str:
        "Wait, like a slow service, until the test says so (at most 10 s)."
        Path(marker).write_text("started")
        for _ in range(200):
            if Path(marker).read_text() == "released":
                Path(marker).write_text("saw the release")
                return "released"
            time.sleep(0.05)
        Path(marker).write_text("gave up")
        return "gave up"

    agent = Agent.load("slow", db=sys.argv[1], tools=[wait_for_release])
    agent.step("wait for it")
    """
)


def test_a_slow_tool_does_not_hold_up_other_agents(fake_llm, tmp_path, db_location):
    db = db_location
    marker = tmp_path / "marker"
    Agent.create("slow", "gpt-4o-mini", db=db)
    other = Agent.create("other", "gpt-4o-mini", db=db)
    fake_llm.enqueue(reply(tool_calls=[call("wait_for_release", marker=str(marker))]))
    process = subprocess.Popen([sys.executable, "-c", SLOW_TOOL, db])
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    # While the tool runs, another agent stores a whole step and a memory edit.
    # Were the tool holding the database's write lock, these would wait until
    # it gave up, and the release would come too late.
    fake_llm.enqueue(say("hi from the other agent"))
    assert other.step("hello").replies == ["hi from the other agent"]
    other.set_block("human", "Name: Eve")
    marker.write_text("released")
    process.wait(timeout=60)
    assert marker.read_text() == "saw the release"
    assert fake_llm.rejections == []


def fill_history(agent: Agent, exchanges: int) -> None:
    agent.store.add_messages(
        [
            Message(agent_id=agent.state.id, role=role, content=f"{role} {i}: " + "words " * 40)
            for i in range(exchanges)
            for role in ("user", "assistant")
        ]
    )


def stored_state(db: str) -> AgentState:
    with open_db(db) as store:
        return store.get_agent("sam")


def test_a_memory_pressure_alert_keeps_a_compaction_made_meanwhile(fake_llm, db_location):
    """The reported lost update: an alert saved the whole agent row from a
    copy read before another process compacted, and the window start went
    back to 0."""
    db = db_location
    first = Agent.create("sam", "gpt-4o-mini", db=db)
    fill_history(first, 12)
    second = Agent.load("sam", db=db)  # another Agent object, with its own connection
    fake_llm.enqueue(reply("A summary of the early talk."))
    assert second.runner.summarize().evicted > 0
    compacted = stored_state(db)
    assert compacted.context_start > 0 and first.state.context_start == 0

    add_pressure_alert(
        StepRun(first.runner, "step-1"), compile_context(first.runner)
    )  # from the stale copy
    after = stored_state(db)
    assert (after.context_start, after.summary) == (compacted.context_start, compacted.summary)
    assert after.pressure_warned
    assert first.state.context_start == compacted.context_start  # the copy was refreshed


def test_the_tool_choice_fallback_keeps_a_change_made_meanwhile(monkeypatch, db_location):
    db = db_location
    with FakeOpenAIServer(reject_required_tool_choice=True) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", server.api_key)
        agent = Agent.create("sam", "gpt-4o-mini", db=db)

        def respond(body: dict[str, Any]) -> Reply:
            if body["model"] == "gpt-4o-mini":  # meanwhile, another process switches models
                other = Agent.load("sam", db=db)
                other.set_model("gpt-4o")
                other.store.close()
            return say("ok")

        server.responder = respond
        assert agent.step("hello").replies == ["ok"]
    state = stored_state(db)
    assert (state.llm.model, state.llm.tool_choice) == ("gpt-4o", "auto")


def test_saving_a_stale_copy_is_refused_and_a_fresh_one_saves(db_location):
    db = db_location
    first = Agent.create("sam", "gpt-4o-mini", db=db)
    Agent.load("sam", db=db).set_model("gpt-4o")
    first.state.settings.max_chained_steps = 3
    with pytest.raises(ConflictError, match="changed by another process .* nothing was saved"):
        first.save()
    state = stored_state(db)
    assert (state.llm.model, state.settings.max_chained_steps) == ("gpt-4o", 10)

    fresh = Agent.load("sam", db=db)
    fresh.state.settings.max_chained_steps = 3
    fresh.save()
    fresh.rename("samuel")
    fresh.state.settings.max_chained_steps = 4
    fresh.save()  # its own writes keep its copy current
    with open_db(db) as store:
        state = store.get_agent("samuel")
    assert (state.llm.model, state.settings.max_chained_steps) == ("gpt-4o", 4)
