"""One step at a time per agent, across processes and threads: the step lock,
against SQLite and PostgreSQL (`db_location`).

Real processes and threads talk to the fake server, whose responder answers
each request by echoing its last user message: a reply that answers another
process's message shows that two steps interleaved."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any

import pytest
from support.backends import execute_sql, is_notice, open_db, without_notices

from memgpt_lite import Agent, ConfigError, Message
from memgpt_lite.errors import ConflictError
from memgpt_lite.storage.protocol import StepLockHolder
from memgpt_lite.testing import Reply, call, reply

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and /proc")


def echo(body: dict[str, Any]) -> Reply:
    """Answer with the request's last user message. The short delay keeps
    a step inside its model call long enough for steps to overlap."""
    last = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    return reply(tool_calls=[call("send_message", message=f"re: {last}")], delay=0.01)


def stored_steps(db: str) -> list[list[str]]:
    """Sam's stored messages as runs of one step id, each run's roles in order."""
    with open_db(db) as store:
        rows = [(m.step_id, m.role) for m in store.messages_from(store.get_agent("sam").id, 0)]
    runs: list[tuple[str | None, list[str]]] = []
    for step_id, role in rows:
        if runs and runs[-1][0] == step_id:
            runs[-1][1].append(role)
        else:
            runs.append((step_id, [role]))
    return [roles for _, roles in runs]


def assert_steps_did_not_interleave(db: str, steps: int) -> None:
    # Each step is one contiguous run: its user message, the response, the result.
    assert stored_steps(db) == [["user", "assistant", "tool"]] * steps


SENDERS = textwrap.dedent(
    """
    import os, sys, traceback
    from memgpt_lite import Agent
    from memgpt_lite.llm.tokens import TokenCounter

    db, name, senders, sends = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    TokenCounter("gpt-4o-mini").count_text("loaded once, before the fork")

    def send(who):
        agent = Agent.load(name, db=db)  # in the child: its own connection
        crossed = []
        for i in range(sends):
            text = f"{who} message {i}"
            replies = agent.step(text).replies
            if replies != [f"re: {text}"]:
                crossed.append((text, replies))
        line = f"{who}: crossed replies {crossed}" if crossed else f"{who}: ok"
        os.write(1, f"{line}\\n".encode())  # one write: lines of children never mix

    children = []
    for who in range(senders):
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                send(f"p{who}")
                status = 0
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(status)
        children.append(pid)
    sys.exit(max(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children))
    """
)


def run_senders(db: str, agent: str, senders: int, sends: int) -> None:
    """`senders` processes (forked once memgpt_lite is imported: quicker than
    as many interpreters) each step `agent` `sends` times; all must end
    cleanly, each getting the replies to its own messages."""
    process = subprocess.run(
        [sys.executable, "-c", SENDERS, db, agent, str(senders), str(sends)],
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert sorted(process.stdout.splitlines()) == [f"p{i}: ok" for i in range(senders)]
    # On stderr, only that some of them waited for the others.
    waits = without_notices(process.stderr).splitlines()
    assert all(line.endswith("; waiting...") for line in waits), waits
    assert process.returncode == 0


def test_processes_sending_to_one_agent_each_get_their_own_replies(fake_llm, db_location):
    db = db_location
    Agent.create("sam", "gpt-4o-mini", db=db)
    fake_llm.responder = echo
    senders, sends = 4, 5
    run_senders(db, "sam", senders, sends)
    assert_steps_did_not_interleave(db, senders * sends)
    assert fake_llm.rejections == []


def test_threads_with_their_own_agent_objects_take_turns(fake_llm, db_location):
    db = db_location
    Agent.create("sam", "gpt-4o-mini", db=db)
    fake_llm.responder = echo
    crossed: list[tuple[str, list[str]]] = []
    failures: list[BaseException] = []

    def send(who: str) -> None:
        try:
            agent = Agent.load("sam", db=db)  # its own Store: a connection per thread
            for i in range(4):
                text = f"{who} message {i}"
                replies = agent.step(text).replies
                if replies != [f"re: {text}"]:
                    crossed.append((text, replies))
            agent.store.close()
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            failures.append(exc)

    threads = [threading.Thread(target=send, args=(f"t{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert (failures, crossed) == ([], [])
    assert_steps_did_not_interleave(db, 16)


def stderr_line(process: subprocess.Popen[str]) -> str:
    """The next line the process writes to stderr (but for notices about the
    database); killed if none comes."""
    watchdog = threading.Timer(60, process.kill)
    watchdog.start()
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        while is_notice(line):
            line = process.stderr.readline()
        return line
    finally:
        watchdog.cancel()


def cli_send(db: str, agent: str, text: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "memgpt_lite", "--db", db, "send", agent, text],
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def user_messages(db: str, agent: str = "sam") -> list[str | None]:
    with open_db(db) as store:
        state = store.get_agent(agent)
        return [m.content for m in store.messages_from(state.id, 0) if m.role == "user"]


def test_a_waiting_send_says_so_and_stores_nothing_until_its_turn(fake_llm, db_location):
    db = db_location
    Agent.create("sam", "gpt-4o-mini", db=db)
    fake_llm.responder = echo
    holder = Agent.load("sam", db=db)
    with holder.runner.step_lock():
        process = cli_send(db, "sam", "hello")
        waiting = stderr_line(process)
        assert waiting == (
            f"agent sam is busy with a step in another process (pid {os.getpid()}); "
            "waiting... (Ctrl-C stops waiting)\n"
        )
        assert user_messages(db) == [] and fake_llm.chat_requests == []
    out, err = process.communicate(timeout=60)
    assert (process.returncode, out, without_notices(err)) == (0, "re: hello\n", "")
    assert user_messages(db) == ["hello"]


def test_ctrl_c_while_waiting_just_stops_waiting(fake_llm, db_location):
    db = db_location
    Agent.create("sam", "gpt-4o-mini", db=db)
    holder = Agent.load("sam", db=db)
    with holder.runner.step_lock() as lock:
        process = cli_send(db, "sam", "hello")
        assert "waiting..." in stderr_line(process)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
        assert process.returncode != 0 and out == "" and "Traceback" not in err, err
        # Nothing taken, nothing stored.
        assert holder.store.step_lock_holder(holder.state.id).token == lock.token
        assert user_messages(db) == []
    assert fake_llm.chat_requests == []


def test_other_agents_step_while_one_is_busy(fake_llm, db_location):
    db = db_location
    Agent.create("sam", "gpt-4o-mini", db=db)
    Agent.create("bob", "gpt-4o-mini", db=db)
    fake_llm.responder = echo
    sam = Agent.load("sam", db=db)
    with sam.runner.step_lock():
        # A lock for the whole database would make bob wait here until the
        # timeout, and the test fail.
        out, err = cli_send(db, "bob", "hi bob").communicate(timeout=60)
        assert (out, without_notices(err)) == ("re: hi bob\n", "")


HOLDER = textwrap.dedent(
    """
    import sys, time
    from memgpt_lite import Agent
    agent = Agent.load("sam", db=sys.argv[1])
    with agent.runner.step_lock():
        print("held", flush=True)
        time.sleep(120)
    """
)


@pytest.mark.parametrize("reaped", [True, False], ids=["reaped", "zombie"])
def test_a_killed_holder_does_not_block_the_next_step(fake_llm, reaped, db_location):
    db = db_location
    Agent.create("sam", "gpt-4o-mini", db=db)
    fake_llm.responder = echo
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, db], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline() == "held\n"
    process.send_signal(signal.SIGKILL)
    if reaped:
        process.wait(timeout=30)
    else:  # dead, not yet reaped: a zombie still has its pid
        os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)
    agent = Agent.load("sam", db=db)
    waits: list[str] = []
    agent.on_wait = waits.append
    assert agent.step("are you free?").replies == ["re: are you free?"]
    assert waits == []  # the dead holder's lock was taken at once
    process.wait(timeout=30)


def claim_from_elsewhere(db: str, agent_id: str, lease_seconds: float) -> None:
    """The lock row a process on another host leaves, taken whoever held it."""
    with open_db(db) as store:
        holder = StepLockHolder(token="far", pid=4321, hostname="far-host", host_id="far-host")
        assert store.take_step_lock(agent_id, holder, lease_seconds, lambda _: True) is None


@pytest.mark.alone  # The step must find the other host's 1 s lease still running.
def test_a_holder_on_another_host_keeps_the_lock_until_its_lease_runs_out(fake_llm, db_location):
    db = db_location
    agent = Agent.create("sam", "gpt-4o-mini", db=db)
    fake_llm.responder = echo
    waits: list[str] = []
    agent.on_wait = waits.append
    claim_from_elsewhere(db, agent.state.id, lease_seconds=-1)  # ran out already
    assert agent.step("one").replies == ["re: one"] and waits == []

    claim_from_elsewhere(db, agent.state.id, lease_seconds=1)
    assert agent.step("two").replies == ["re: two"]
    assert waits == [
        "agent sam is busy with a step in another process (pid 4321 on far-host); waiting..."
    ]


def test_a_step_that_lost_its_lock_cannot_commit(fake_llm, db_location):
    db = db_location
    agent = Agent.create("sam", "gpt-4o-mini", db=db)
    with agent.runner.step_lock():
        # Its lease ran out and a process elsewhere took the lock over.
        claim_from_elsewhere(db, agent.state.id, lease_seconds=60)
        with pytest.raises(ConflictError, match="taken over"):
            agent.store.add_messages([Message(agent_id=agent.state.id, role="user", content="x")])
    assert user_messages(db) == []
    # Leaving did not release the new holder's lock.
    assert agent.store.step_lock_holder(agent.state.id).token == "far"


def test_every_commit_renews_the_lease(fake_llm, db_location):
    db = db_location
    agent = Agent.create("sam", "gpt-4o-mini", db=db)
    with agent.runner.step_lock():
        # As if the lease had run out.
        execute_sql(db, "UPDATE step_locks SET expires_at = ?", [time.time() - 1])
        assert agent.store.step_lock_holder(agent.state.id).expires_at < time.time()
        agent.store.add_messages([Message(agent_id=agent.state.id, role="user", content="x")])
        assert agent.store.step_lock_holder(agent.state.id).expires_at > time.time()
    assert agent.store.step_lock_holder(agent.state.id) is None


def test_history_edits_and_summaries_wait_for_a_step(fake_llm, db_location):
    db = db_location
    Agent.create("sam", "gpt-4o-mini", db=db)
    fake_llm.responder = lambda body: reply("a summary")
    waits: list[str] = []
    finished: list[str] = []

    def edit(what: str) -> None:
        agent = Agent.load("sam", db=db)  # a connection of the thread's own
        agent.on_wait = waits.append
        if what == "pop":
            with pytest.raises(ConfigError, match="only 0 exchange"):
                agent.history.pop_exchanges(1)
        else:
            agent.runner.summarize()
        finished.append(what)

    holder = Agent.load("sam", db=db)
    for what in ("pop", "summarize"):
        waits.clear()
        with holder.runner.step_lock():
            thread = threading.Thread(target=edit, args=(what,))
            thread.start()
            while not waits:  # until it says that it waits
                assert thread.is_alive()
                time.sleep(0.01)
            assert waits == [
                "agent sam is busy with a step in another thread of this process; waiting..."
            ]
            assert what not in finished
        thread.join(timeout=30)
        assert what in finished


def test_a_step_gives_its_own_lock_up_with_its_last_write_and_keeps_a_callers(
    fake_llm, db_location
):
    db = db_location
    agent = Agent.create("sam", "gpt-4o-mini", db=db)
    fake_llm.responder = echo
    agent.step("hello")
    assert agent.store.step_lock_holder(agent.state.id) is None
    with agent.runner.step_lock() as lock:  # the caller's lock: the step leaves it held
        agent.step("again")
        assert agent.store.step_lock_holder(agent.state.id).token == lock.token
    assert agent.store.step_lock_holder(agent.state.id) is None
    assert user_messages(db) == ["hello", "again"]
    assert_steps_did_not_interleave(db, 2)
