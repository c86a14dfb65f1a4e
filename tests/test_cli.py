"""The CLI: clear one-line errors on bad input, never a traceback, and nothing
stored is lost."""

from __future__ import annotations

import os
import subprocess
import sys

from click.testing import CliRunner

from memgpt_lite.cli import cli
from memgpt_lite.store import Store
from memgpt_lite.testing import call, error, reply, say


def run(*args: str, db=None, input: str | None = None):
    prefix = ["--db", str(db)] if db else []
    return CliRunner().invoke(cli, [*prefix, *args], input=input, catch_exceptions=False)


def test_create_send_and_list(fake_llm, tmp_path):
    db = tmp_path / "a.db"
    created = run("create", "sam", "--model", "gpt-4o-mini", "--persona", "I am Sam.", db=db)
    assert created.exit_code == 0 and "Created agent 'sam'" in created.output
    fake_llm.enqueue(
        reply(
            content="thinking",
            tool_calls=[
                call("send_message", message="Hello!"),
            ],
        )
    )
    sent = run("send", "sam", "Hi", "--verbose", db=db)
    assert sent.exit_code == 0
    assert sent.stdout == "Hello!\n"
    assert "thought: thinking" in sent.stderr and "send_message(" in sent.stderr
    listed = run("agents", db=db)
    assert listed.output.split("\t")[:4] == ["sam", "gpt-4o-mini", "3", "0"]
    memory = run("memory", "sam", db=db)
    assert "[persona] 9/5000 chars\nI am Sam.\n" in memory.output


def test_unknown_agent(fake_llm, tmp_path):
    result = run("send", "ghost", "hello", db=tmp_path / "a.db")
    assert result.exit_code == 1
    assert result.stderr == "Error: no agent named 'ghost'\n"


def test_duplicate_name_keeps_the_first_agent(fake_llm, tmp_path):
    db = tmp_path / "a.db"
    run("create", "sam", "--model", "gpt-4o-mini", "--persona", "first", db=db)
    result = run("create", "sam", "--model", "gpt-4o", "--persona", "second", db=db)
    assert result.exit_code == 1
    assert result.stderr == "Error: an agent named 'sam' already exists\n"
    agents = Store(db).list_agents()
    assert [(a.name, a.llm.model) for a, _ in agents] == [("sam", "gpt-4o-mini")]


def test_bad_agent_name(tmp_path):
    result = run("create", "no spaces please", "--model", "m", db=tmp_path / "a.db")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: cannot create agent 'no spaces please': ")


def test_empty_message_stores_nothing(fake_llm, tmp_path):
    db = tmp_path / "a.db"
    run("create", "sam", "--model", "gpt-4o-mini", db=db)
    result = run("send", "sam", "   ", db=db)
    assert result.exit_code == 1 and result.stderr == "Error: the message is empty\n"
    assert Store(db).db["messages"].count == 0
    assert fake_llm.requests == []


def test_database_that_is_not_sqlite(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("my precious notes\n")
    result = run("agents", db=path)
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: cannot open ")
    assert "as a memgpt_lite database" in result.stderr
    assert path.read_text() == "my precious notes\n"


def test_endpoint_error_is_one_line(tmp_path, monkeypatch):
    db = tmp_path / "a.db"
    run("create", "sam", "--model", "gpt-4o-mini", "--base-url", "http://127.0.0.1:9/v1", db=db)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    store = Store(db)
    state = store.get_agent("sam")
    state.llm.max_retries = 0
    store.save_agent(state)
    result = run("send", "sam", "hello", db=db)
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: cannot reach the model endpoint http://127.0.0.1:9/v1")
    assert len(result.stderr.strip().splitlines()) == 1


def test_console_script_help_and_no_traceback(tmp_path):
    env = os.environ.copy()
    helped = subprocess.run(
        [sys.executable, "-m", "memgpt_lite", "send", "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert "Send MESSAGE to agent NAME" in helped.stdout
    failed = subprocess.run(
        [sys.executable, "-m", "memgpt_lite", "--db", str(tmp_path / "a.db"), "send", "x", "hi"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert failed.returncode == 1
    assert "Traceback" not in failed.stderr and "no agent named 'x'" in failed.stderr


def test_default_database_lives_under_memgpt_lite_home(fake_llm, tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("MEMGPT_LITE_HOME", str(home))
    assert run("create", "sam", "--model", "gpt-4o-mini").exit_code == 0
    assert (home / "memgpt_lite.db").exists()


def test_a_failed_send_says_how_to_resend_or_drop_it(fake_llm, tmp_path):
    db = tmp_path / "a.db"
    run("create", "sam", "--model", "gpt-4o-mini", db=db)
    fake_llm.enqueue(error(400, "the model is loading"))
    failed = run("send", "sam", "Hi there", db=db)
    assert failed.exit_code == 1
    assert failed.stderr == (
        f"Error: the endpoint {fake_llm.base_url} answered 400: the model is loading — your "
        'message "Hi there" was not answered: memgpt-lite retry sam sends it again, '
        "memgpt-lite pop sam drops it.\n"
    )
    fake_llm.enqueue(say("Hello!"))
    retried = run("retry", "sam", db=db)
    assert retried.exit_code == 0 and retried.stdout == "Hello!\n"
    assert "Sending again: Hi there" in retried.stderr
    fake_llm.enqueue(error(400, "the model is loading"))
    run("send", "sam", "And again", db=db)
    popped = run("pop", "sam", db=db)
    assert popped.stdout == "Removed 1 exchange(s): 1 messages.\n"
    user = [m.content for m in Store(db).last_messages(Store(db).get_agent("sam").id, 10)]
    assert "And again" not in user and user.count("Hi there") == 1
    assert fake_llm.rejections == []
