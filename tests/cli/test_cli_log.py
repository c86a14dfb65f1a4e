"""`memgpt-lite log`: an agent's messages like `git log`, paged, searched,
from a date, as JSON lines; run as the real command, against SQLite and
PostgreSQL (`db_location`)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from datetime import UTC, datetime

import pytest
from click.testing import CliRunner, Result
from support.backends import open_db

from memgpt_lite.cli.main import cli
from memgpt_lite.models import Message, ToolCall
from memgpt_lite.testing import call, call_raw, reply, say


def run(*args: str, db: str) -> Result:
    return CliRunner().invoke(cli, ["--db", db, *args], catch_exceptions=False)


@pytest.fixture
def db(db_location: str) -> str:
    """A database, of each backend in turn, holding the agent sam."""
    assert run("create", "sam", "--model", "gpt-4o-mini", db=db_location).exit_code == 0
    with open_db(db_location) as store:  # the database named, not a file named like it
        store.get_agent("sam")
    return db_location


def add(db: str, *messages: tuple[str, str, str]) -> None:
    """Store (role, text, UTC time) messages for sam, as a past conversation."""
    with open_db(db) as store:
        agent_id = store.get_agent("sam").id
        store.add_messages(
            [
                Message(
                    agent_id=agent_id,
                    role=role,  # type: ignore[arg-type]
                    content=text,
                    created_at=datetime.fromisoformat(when).replace(tzinfo=UTC),
                )
                for role, text, when in messages
            ]
        )


def texts(output: str) -> list[str]:
    """What each `#SEQ DATE TIME ROLE: text` line says after its header."""
    return [line.split(": ", 1)[1] for line in output.splitlines() if line.startswith("#")]


def test_a_conversation_with_its_tool_calls_and_results(fake_llm, db):
    remember = call(
        "core_memory_append", label="human", content="Name: Alice", request_heartbeat=True
    )
    fake_llm.enqueue(
        reply(content="She told me her name.\nWorth keeping.", tool_calls=[remember]),
        say("Nice to meet you, Alice!"),
    )
    assert run("send", "sam", "Hi, I am Alice", db=db).exit_code == 0
    result = run("log", "sam", db=db)
    assert result.exit_code == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0].startswith("#1 ") and lines[0].endswith(" user: Hi, I am Alice")
    assert lines[1].endswith(" assistant: She told me her name.")
    assert lines[2] == "    Worth keeping."
    assert lines[3] == (
        '    → core_memory_append(label="human", content="Name: Alice", request_heartbeat=true)'
    )
    assert " tool core_memory_append: " in lines[4]
    assert lines[-2].endswith('→ send_message(message="Nice to meet you, Alice!")')
    assert " tool send_message: Sent message successfully." in lines[-1]


def test_long_and_broken_arguments_are_shortened_to_one_line(fake_llm, db):
    fake_llm.enqueue(
        reply(
            tool_calls=[
                call("archival_memory_insert", content="bees " * 100, request_heartbeat=True)
            ]
        ),
        reply(tool_calls=[call_raw("send_message", '{"message": "cut\n off')]),
        say("done"),
    )
    run("send", "sam", "save this", db=db)
    calls = [line for line in run("log", "sam", db=db).stdout.splitlines() if "→" in line]
    assert calls[0].startswith('    → archival_memory_insert(content="bees bees')
    assert calls[0].endswith("…)") and len(calls[0]) < 140
    assert calls[1] == '    → send_message({"message": "cut off)'


def test_pages_count_from_the_newest(db):
    add(db, *[("user", f"m{i}", f"2026-03-0{i + 1}T10:00") for i in range(8)])
    assert texts(run("log", "sam", "-n", "3", db=db).stdout) == ["m5", "m6", "m7"]
    assert texts(run("log", "sam", "-n", "3", "--page", "2", db=db).stdout) == ["m2", "m3", "m4"]
    assert texts(run("log", "sam", "-n", "3", "--page", "3", db=db).stdout) == ["m0", "m1"]
    past = run("log", "sam", "-n", "3", "--page", "4", db=db)
    assert (past.exit_code, past.stdout, past.stderr) == (0, "", "No messages on page 4.\n")


def test_search_and_since(db):
    add(
        db,
        ("user", "my bees swarmed", "2026-03-01T10:00"),
        ("assistant", "Bees swarm in spring.", "2026-03-02T10:00"),
        ("user", "what about honey?", "2026-03-03T10:00"),
        ("user", "the bee hive is quiet", "2026-03-04T10:00"),
    )
    found = texts(run("log", "sam", "--search", "bees", db=db).stdout)
    assert sorted(found) == ["Bees swarm in spring.", "my bees swarmed", "the bee hive is quiet"]
    recent = run("log", "sam", "--search", "bees", "--since", "2026-03-02T10:00Z", db=db)
    assert sorted(texts(recent.stdout)) == ["Bees swarm in spring.", "the bee hive is quiet"]
    since = run("log", "sam", "--since", "2026-03-03T10:00+00:00", db=db)
    assert texts(since.stdout) == ["what about honey?", "the bee hive is quiet"]
    nothing = run("log", "sam", "--search", "volcano", db=db)
    assert (nothing.stdout, nothing.stderr) == ("", "No messages.\n")


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--since", "last tuesday"], "Error: --since 'last tuesday' is not a date or time"),
        (["--since", "0001-01-01T00:00+05:00"], "Error: --since '0001-01-01T00:00+05:00' is not"),
        (["--search", "  "], "Error: the search text is empty"),
    ],
)
def test_bad_input_is_one_line(db, args, error):
    result = run("log", "sam", *args, db=db)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith(error) and len(result.stderr.splitlines()) == 1


def test_an_unknown_agent(db):
    result = run("log", "ghost", db=db)
    assert (result.exit_code, result.stderr) == (1, "Error: no agent named 'ghost'\n")


def test_json_lines_read_back_as_messages(fake_llm, db):
    fake_llm.enqueue(say("Hello!"))
    run("send", "sam", "Hi", db=db)
    result = run("log", "sam", "--json", db=db)
    messages = [Message.model_validate_json(line) for line in result.stdout.splitlines()]
    assert [m.role for m in messages] == ["user", "assistant", "tool"]
    assert messages[1].tool_calls[0].sent_message() == "Hello!"
    assert isinstance(messages[1].tool_calls[0], ToolCall)
    assert [m.seq for m in messages] == sorted(m.seq or 0 for m in messages)


def test_on_a_terminal_it_goes_through_the_pager_with_a_footer(db, tmp_path):
    add(db, *[("user", f"m{i}", f"2026-03-0{i + 1}T10:00") for i in range(3)])
    parent, child = pty.openpty()
    env = {**os.environ, "PAGER": "cat", "MEMGPT_LITE_HOME": str(tmp_path / "home")}
    process = subprocess.Popen(
        [sys.executable, "-m", "memgpt_lite", "--db", db, "log", "sam", "-n", "2"],
        stdin=subprocess.DEVNULL,
        stdout=child,
        stderr=subprocess.PIPE,
        env=env,
    )
    os.close(child)
    shown = b""
    while True:
        try:
            chunk = os.read(parent, 4096)
        except OSError:  # the terminal closed: the process ended
            break
        if not chunk:
            break
        shown += chunk
    os.close(parent)
    assert process.wait(timeout=60) == 0
    lines = shown.decode().splitlines()
    assert texts("\n".join(lines)) == ["m1", "m2"]
    assert lines[-1] == "(page 1 of 2, 3 messages; --page 2 for more)"
