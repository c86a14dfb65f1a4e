"""The CLI: clear one-line errors on bad input, never a traceback, and nothing
stored is lost. The commands' round trips through the database (create, send,
list, retry, pop) run against SQLite and PostgreSQL (`db_location`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner
from support.backends import open_db

from memgpt_lite.cli.main import cli
from memgpt_lite.errors import is_interrupt
from memgpt_lite.storage.sqlite.store import Store
from memgpt_lite.testing import call, error, reply, say


def run(*args: str, db=None, input: str | None = None):
    prefix = ["--db", str(db)] if db else []
    return CliRunner().invoke(cli, [*prefix, *args], input=input, catch_exceptions=False)


def test_create_send_and_list(fake_llm, db_location):
    db = db_location
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
    with open_db(db) as store:  # the database named, not a file named like it
        assert [(a.name, stats.message_count) for a, stats in store.list_agents()] == [("sam", 3)]


def test_unknown_agent(fake_llm, tmp_path):
    result = run("send", "ghost", "hello", db=tmp_path / "a.db")
    assert result.exit_code == 1
    assert result.stderr == "Error: no agent named 'ghost'\n"


def test_duplicate_name_keeps_the_first_agent(fake_llm, db_location):
    db = db_location
    run("create", "sam", "--model", "gpt-4o-mini", "--persona", "first", db=db)
    result = run("create", "sam", "--model", "gpt-4o", "--persona", "second", db=db)
    assert result.exit_code == 1
    assert result.stderr == "Error: an agent named 'sam' already exists\n"
    with open_db(db) as store:
        agents = store.list_agents()
    assert [(a.name, a.llm.model) for a, _ in agents] == [("sam", "gpt-4o-mini")]


def test_bad_agent_name(tmp_path):
    result = run("create", "no spaces please", "--model", "m", db=tmp_path / "a.db")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: cannot create agent 'no spaces please': ")


def test_empty_message_stores_nothing(fake_llm, db_location):
    db = db_location
    run("create", "sam", "--model", "gpt-4o-mini", db=db)
    result = run("send", "sam", "   ", db=db)
    assert result.exit_code == 2 and result.stderr == "Error: the message is empty\n"
    with open_db(db) as store:
        assert [stats.message_count for _, stats in store.list_agents()] == [0]
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
    assert result.exit_code == 4  # ExitStatus.ENDPOINT_FAILED
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


def test_a_failed_send_says_how_to_resend_or_drop_it(fake_llm, db_location):
    db = db_location
    run("create", "sam", "--model", "gpt-4o-mini", db=db)
    fake_llm.enqueue(error(400, "the model is loading"))
    failed = run("send", "sam", "Hi there", db=db)
    assert failed.exit_code == 4  # ExitStatus.ENDPOINT_FAILED
    assert failed.stderr == (
        f"Error: the model endpoint {fake_llm.base_url} answered 400: the model is loading — "
        'your message "Hi there" was not answered: memgpt-lite retry sam sends it again, '
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
    with open_db(db) as store:
        user = [m.content for m in store.last_messages(store.get_agent("sam").id, 10)]
    assert "And again" not in user and user.count("Hi there") == 1
    assert fake_llm.rejections == []


def test_the_package_exports_load_on_first_use():
    import memgpt_lite

    assert set(memgpt_lite.__all__) == set(memgpt_lite._EXPORTS)
    for name in memgpt_lite.__all__:
        assert getattr(memgpt_lite, name).__name__ == name
    assert set(memgpt_lite.__all__) <= set(dir(memgpt_lite))
    try:
        memgpt_lite.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("an unknown name was found")


def test_log_records_are_one_line_on_the_terminal_and_whole_in_the_log_file(tmp_path):
    script = (
        "import logging\n"
        "from memgpt_lite.cli.log import configure_logging\n"
        "configure_logging()\n"
        "try:\n"
        "    raise ValueError('boom')\n"
        "except ValueError as exc:\n"
        "    logging.getLogger('memgpt_lite.tools.schema')"
        ".exception('tool lookup raised %r', exc)\n"
    )
    home = tmp_path / "home"
    env = {**os.environ, "MEMGPT_LITE_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    log_file = home / "memgpt_lite.log"
    assert done.stderr == (
        f"error: tool lookup raised ValueError('boom') (traceback in {log_file})\n"
    )
    logged = log_file.read_text()
    assert "Traceback (most recent call last)" in logged and "ValueError: boom" in logged


def test_a_failing_tool_is_logged_with_its_traceback(fake_llm, tmp_path, caplog):
    from memgpt_lite import Agent, tool

    @tool
    def lookup(topic: str) -> str:
        """Look it up."""
        raise ValueError(f"no notes on {topic}")

    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db", tools=[lookup])
    fake_llm.enqueue(reply(tool_calls=[call("lookup", topic="bees")]), say("sorry"))
    agent.step("bees?")
    record = next(r for r in caplog.records if r.name == "memgpt_lite.tools.schema")
    assert record.getMessage() == "tool lookup raised ValueError: no notes on bees"
    assert record.exc_info is not None


def _interrupt_when_loaded(process: subprocess.Popen, library: str) -> None:
    """Send Ctrl-C once `library` is mapped into the process: a moment inside
    memgpt_lite's own start-up, where a traceback would be ours."""
    maps = f"/proc/{process.pid}/maps"
    for _ in range(2000):
        with open(maps) as f:
            if library in f.read():
                process.send_signal(signal.SIGINT)
                return
        time.sleep(0.005)
    raise AssertionError(f"{library} was never loaded")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("library", ["_pydantic_core", "_ssl", "_multiarray_umath", "_tiktoken"])
def test_ctrl_c_while_a_command_loads_prints_no_traceback(fake_llm, tmp_path, library):
    # A command imports what it runs when it runs (start-up loads none of these
    # libraries), so it is `send` that is interrupted while they load.
    db = tmp_path / "a.db"
    run("create", "sam", "--model", "gpt-4o-mini", db=db)
    fake_llm.enqueue(say("Hello!"))
    env = {**os.environ, "MEMGPT_LITE_HOME": str(tmp_path / "home")}
    process = subprocess.Popen(
        [sys.executable, "-m", "memgpt_lite", "--db", str(db), "send", "sam", "Hi"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _interrupt_when_loaded(process, library)
    out, err = process.communicate(timeout=60)
    # click ends the line first, for an interrupted prompt's sake. -SIGINT:
    # CPython ends with the signal itself when a KeyboardInterrupt went through
    # code a C extension ran, even though ours caught it; shells see 130.
    assert err.lstrip("\n") == "Interrupted.\n", err
    assert process.returncode in (130, -signal.SIGINT)


CTRL_C_IN_A_CALLBACK = """
import sys, time, weakref
from memgpt_lite.__main__ import _pass_on_interrupts
sys.unraisablehook = _pass_on_interrupts
class Thing: pass
def interrupted(_): raise KeyboardInterrupt
thing = Thing(); ref = weakref.ref(thing, interrupted)
try:
    del thing  # the callback raises where CPython can only print it
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline: pass
except KeyboardInterrupt:
    print("raised again")
"""


def test_ctrl_c_in_a_callback_cpython_cannot_raise_from_is_raised_again():
    # The import system's weakref callbacks are such places: a Ctrl-C there
    # printed "Exception ignored in: <function _get_module_lock...>".
    done = subprocess.run(
        [sys.executable, "-c", CTRL_C_IN_A_CALLBACK], capture_output=True, text=True, timeout=60
    )
    assert (done.stdout, done.stderr) == ("raised again\n", "")


def test_ctrl_c_while_a_class_is_defined_is_an_interrupt():
    # What a command's import of tiktoken raised when Ctrl-C landed in a
    # cached_property's __set_name__: Python 3.11 wraps it in a RuntimeError.
    class Interrupting:
        def __set_name__(self, owner: type, name: str) -> None:
            raise KeyboardInterrupt

    try:

        class Owner:
            field = Interrupting()

    except BaseException as exc:  # noqa: BLE001 - the test's subject
        raised = exc
    assert is_interrupt(raised)
    assert not is_interrupt(RuntimeError("a bug"))


def test_ctrl_c_at_a_prompt_is_not_aborted(tmp_path):
    db = tmp_path / "a.db"
    run("create", "sam", "--model", "gpt-4o-mini", db=db)
    process = subprocess.Popen(
        [sys.executable, "-m", "memgpt_lite", "--db", str(db), "delete", "sam"],
        env={**os.environ, "MEMGPT_LITE_HOME": str(tmp_path / "home")},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.read(len("Delete agent")) == "Delete agent"
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert err.strip() == "Interrupted." and process.returncode in (130, -signal.SIGINT)
    assert [state.name for state, _ in Store(db).list_agents()] == ["sam"]


def test_a_base_url_without_a_scheme_is_refused_at_create(tmp_path):
    db = tmp_path / "a.db"
    result = run("create", "sam", "-m", "llama3.2", "--base-url", "localhost:11434/v1", db=db)
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: --base-url 'localhost:11434/v1' has no http:// or https://: "
        "write http://localhost:11434/v1\n"
    )
    assert Store(db).list_agents() == []


def test_odd_names_and_limits_from_python_are_refused_cleanly(tmp_path):
    from pydantic import ValidationError

    from memgpt_lite import Agent, Block, NotFoundError

    Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db")
    with pytest.raises(NotFoundError):
        Agent.load("sam\ud800", db=tmp_path / "a.db")
    with pytest.raises(ValidationError):
        Block(label="huge", limit=2**63)


def test_a_file_name_the_system_refuses_is_one_line(fake_llm, tmp_path):
    db = tmp_path / "a.db"
    run("create", "sam", "-m", "gpt-4o-mini", db=db)
    result = run("export", "sam", "-o", "y" * 5000, db=db)
    assert result.exit_code == 1
    assert result.stderr == f"Error: cannot use {'y' * 79}…: File name too long\n"


def test_input_that_ends_at_a_prompt_is_not_an_interrupt(tmp_path):
    db = tmp_path / "a.db"
    run("create", "sam", "-m", "gpt-4o-mini", db=db)
    done = subprocess.run(
        [sys.executable, "-m", "memgpt_lite", "--db", str(db), "delete", "sam"],
        input="",
        capture_output=True,
        text=True,
        env={**os.environ, "MEMGPT_LITE_HOME": str(tmp_path / "home")},
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr == "Stopped: the input ended before an answer.\n"
    assert [state.name for state, _ in Store(db).list_agents()] == ["sam"]
