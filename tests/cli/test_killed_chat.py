"""A real `memgpt-lite chat` killed (SIGKILL) mid-step, after a chain of
tool calls was stored and before the reply: the next chat names the
message unanswered as it opens, and `memgpt-lite retry` sends it again. On
SQLite and PostgreSQL (`db_location`). The model hangs on the step's third
call, so the kill lands there, never by timing."""

from __future__ import annotations

import subprocess
import sys
import time

from memgpt_lite import Agent
from memgpt_lite.testing import FakeOpenAIServer, call, hang, reply, say


def heartbeat(name: str, **arguments: str):
    return reply(f"now {name}", [call(name, request_heartbeat=True, **arguments)])


def memgpt_lite(env: dict[str, str], db: str, *args: str, entries: str = "") -> str:
    finished = subprocess.run(
        [sys.executable, "-m", "memgpt_lite", "--db", db, *args],
        input=entries,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert finished.returncode == 0 and "Traceback" not in finished.stderr, finished.stderr
    return finished.stdout + finished.stderr


def test_a_chat_killed_in_a_chain_of_heartbeats_leaves_the_message_unanswered(
    fake_llm: FakeOpenAIServer, chat_env: dict[str, str], db_location: str
) -> None:
    Agent.create("sam", "gpt-4o-mini", db=db_location)
    fake_llm.enqueue(
        heartbeat("conversation_search", query="tea"),
        heartbeat("core_memory_append", label="human", content="likes tea"),
        hang(),
    )
    chat = subprocess.Popen(
        [sys.executable, "-m", "memgpt_lite", "--db", db_location, "chat", "sam"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=chat_env,
        text=True,
    )
    try:
        assert chat.stdin is not None
        chat.stdin.write("I like tea\n")
        chat.stdin.flush()  # and left open: the chat waits for more
        deadline = time.monotonic() + 60
        while fake_llm.hanging != 1:
            assert chat.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        chat.kill()
    finally:
        chat.kill()
        chat.wait(timeout=30)

    note = 'Your message "I like tea" was not answered: /retry sends it again, /pop drops it.'
    assert note in memgpt_lite(chat_env, db_location, "chat", "sam", entries="\n")
    fake_llm.enqueue(say("Tea it is."))
    out = memgpt_lite(chat_env, db_location, "retry", "sam")
    assert "Sending again: I like tea" in out and "Tea it is." in out
    agent = Agent.load("sam", db=db_location)
    assert agent.history.unanswered() == []
    users = [m.content for m in agent.context_messages() if m.role == "user"]
    assert users == ["I like tea"]
    assert fake_llm.rejections == []
