"""`send` and `retry` for scripts: the message from standard input or a file,
JSON lines, --quiet, and exit statuses that tell the outcomes apart. Every
test runs the real command against the fake OpenAI server."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from support.docs_text import page

from memgpt_lite.cli.main import cli
from memgpt_lite.cli.scripting import ExitStatus
from memgpt_lite.events import STEP_EVENT
from memgpt_lite.storage.sqlite.store import Store
from memgpt_lite.testing import FakeOpenAIServer, call, error, reply, say


def run(*args: str, db: Path, input: str | bytes | None = None) -> Result:
    return CliRunner().invoke(cli, ["--db", str(db), *args], input=input, catch_exceptions=False)


@pytest.fixture
def db(fake_llm: FakeOpenAIServer, tmp_path: Path) -> Path:
    path = tmp_path / "a.db"
    assert run("create", "sam", "--model", "gpt-4o-mini", db=path).exit_code == 0
    return path


def user_messages(db: Path) -> list[str | None]:
    with Store(db) as store:
        messages = store.last_messages(store.get_agent("sam").id, 100)
    return [m.content for m in messages if m.role == "user"]


def sent_text(server: FakeOpenAIServer) -> str:
    """The last user message of the last request the endpoint received."""
    messages = server.requests[-1].body["messages"]
    return next(m["content"] for m in reversed(messages) if m["role"] == "user")


def test_the_exit_statuses_are_the_documented_numbers():
    # Scripts depend on these numbers: changing one is a breaking change.
    assert [(s.name, int(s)) for s in ExitStatus] == [
        ("REPLIED", 0),
        ("FAILED", 1),
        ("BAD_INPUT", 2),
        ("NO_REPLY", 3),
        ("ENDPOINT_FAILED", 4),
        ("APPROVAL_REQUIRED", 5),
        ("INTERRUPTED", 130),
    ]


@pytest.mark.parametrize("args", [["-"], []])
def test_the_message_from_standard_input(fake_llm, db, args):
    fake_llm.enqueue(say("Got it."))
    result = run("send", "sam", *args, db=db, input="line one\nline two\n")
    assert (result.exit_code, result.stdout) == (0, "Got it.\n")
    assert sent_text(fake_llm) == "line one\nline two"


def test_the_message_from_a_file_and_a_literal_at_sign(fake_llm, db, tmp_path):
    note = tmp_path / "note.md"
    note.write_text("# Notes\nbees: 3 hives\n")
    fake_llm.enqueue(say("Read it."), say("An email address."))
    assert run("send", "sam", f"@{note}", db=db).stdout == "Read it.\n"
    assert sent_text(fake_llm) == "# Notes\nbees: 3 hives"
    assert run("send", "sam", "@@alice is my handle", db=db).exit_code == 0
    assert sent_text(fake_llm) == "@alice is my handle"


def test_a_one_megabyte_message_through_a_real_process(fake_llm, db, tmp_path):
    # One argument is limited to 128 KB by the system (E2BIG before we even
    # run), so a long message comes through standard input or @FILE.
    message = ("Alice keeps bees by the river. " * 40_000)[:1_000_000]
    fake_llm.enqueue(say("That is a lot."))
    done = subprocess.run(
        [sys.executable, "-m", "memgpt_lite", "--db", str(db), "send", "sam", "--quiet"],
        input=message.encode(),
        capture_output=True,
        env={**os.environ, "MEMGPT_LITE_HOME": str(tmp_path / "home")},
        timeout=120,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"That is a lot.\n", b"")
    assert user_messages(db) == [message]


@pytest.mark.parametrize(
    ("args", "stdin", "error_text"),
    [
        (["@missing.txt"], None, "Error: cannot read @missing.txt: no such file\n"),
        (["-"], b"caf\xe9\n", "Error: standard input is not UTF-8 text (byte 3)\n"),
        ([], b"", "Error: the message is empty\n"),
        (["-"], b" \n\n", "Error: the message is empty\n"),
        (["@"], None, "Error: @ needs a file name after it (@@ for a message starting with @)\n"),
    ],
)
def test_bad_input_is_one_line_with_the_bad_input_status(fake_llm, db, args, stdin, error_text):
    result = run("send", "sam", *args, db=db, input=stdin)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", error_text)
    assert user_messages(db) == [] and fake_llm.requests == []


def test_a_file_that_is_not_utf8_or_is_a_folder(fake_llm, db, tmp_path, monkeypatch):
    # Names relative to the test's folder: an error shows at most 80
    # characters of the argument, and how long tmp_path is depends on the
    # machine (the user's name, the pytest-xdist worker's folder).
    monkeypatch.chdir(tmp_path)
    latin = Path("latin1.txt")
    latin.write_bytes(b"na\xefve\n")
    result = run("send", "sam", f"@{latin}", db=db)
    assert result.exit_code == 2
    assert result.stderr == f"Error: @{latin} is not UTF-8 text (byte 2)\n"
    notes = Path("notes")
    notes.mkdir()
    folder = run("send", "sam", f"@{notes}", db=db)
    assert folder.exit_code == 2
    assert folder.stderr == f"Error: cannot read @{notes}: Is a directory\n"
    assert user_messages(db) == []


def test_json_lines_are_the_steps_events_and_nothing_else(fake_llm, db):
    fake_llm.enqueue(
        reply(content="note it", tool_calls=[call("send_message", message="Hello, Alice!")])
    )
    result = run("send", "sam", "Hi, I am Alice", "--json", db=db)
    assert result.exit_code == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    events = [STEP_EVENT.validate_json(line) for line in lines]
    types = [event.type for event in events]
    assert types[0] == "step_started" and types[-1] == "step_finished"
    assert {"request_sent", "thought_delta", "message_delta", "tool_call_started"} <= set(types)
    assert {"tool_returned", "reply_delivered", "usage"} <= set(types)
    assert len({event.step_id for event in events}) == 1
    delivered = [json.loads(line) for line in lines if '"reply_delivered"' in line]
    assert [d["text"] for d in delivered] == ["Hello, Alice!"]


def test_json_on_failure_ends_with_step_failed_and_the_error_on_stderr(fake_llm, db):
    fake_llm.enqueue(error(400, "the model is loading"))
    result = run("send", "sam", "Hi", "--json", db=db)
    assert result.exit_code == ExitStatus.ENDPOINT_FAILED
    last = json.loads(result.stdout.splitlines()[-1])
    assert last["type"] == "step_failed" and "the model is loading" in last["message"]
    assert last["error_type"] == "LLMError"
    assert len(result.stderr.splitlines()) == 1 and "memgpt-lite retry sam" in result.stderr


def test_quiet_prints_the_replies_only(fake_llm, db):
    fake_llm.enqueue(
        reply(
            tool_calls=[call("send_message", message="One."), call("send_message", message="Two.")]
        )
    )
    result = run("send", "sam", "count", "--quiet", db=db)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "One.\nTwo.\n", "")


def test_a_step_without_a_reply_has_its_own_status(fake_llm, db):
    remember = call("core_memory_append", label="human", content="Likes tea.")
    fake_llm.enqueue(reply(tool_calls=[remember]), reply(tool_calls=[remember]))
    plain = run("send", "sam", "I like tea", db=db)
    assert plain.exit_code == ExitStatus.NO_REPLY and plain.stdout == ""
    assert plain.stderr.startswith("(sam ended its turn without a reply")
    quiet = run("send", "sam", "I like tea", "-q", db=db)
    assert (quiet.exit_code, quiet.stdout, quiet.stderr) == (ExitStatus.NO_REPLY, "", "")


def test_a_step_without_a_reply_says_how_to_send_the_message_again(fake_llm, db):
    remember = call("core_memory_append", label="human", content="Likes tea.")
    fake_llm.enqueue(reply(tool_calls=[remember]))
    plain = run("send", "sam", "I like tea", db=db)
    assert plain.exit_code == ExitStatus.NO_REPLY
    assert plain.stderr.splitlines()[1:] == [
        'Your message "I like tea" was not answered: memgpt-lite retry sam sends it again, '
        "memgpt-lite pop sam drops it."
    ]


def test_retry_uses_the_same_statuses_and_outputs(fake_llm, db):
    fake_llm.enqueue(error(503, "overloaded"), error(400, "still loading"))
    assert run("send", "sam", "Hi", db=db).exit_code == ExitStatus.ENDPOINT_FAILED
    again = run("retry", "sam", "--quiet", db=db)
    assert again.exit_code == ExitStatus.ENDPOINT_FAILED and again.stdout == ""
    assert again.stderr.startswith(f"Error: the model endpoint {fake_llm.base_url} answered 400")
    fake_llm.enqueue(reply(tool_calls=[call("core_memory_append", label="human", content="x")]))
    silent = run("retry", "sam", "-q", db=db)
    assert (silent.exit_code, silent.stdout, silent.stderr) == (ExitStatus.NO_REPLY, "", "")
    fake_llm.enqueue(say("Hello!"))
    done = run("retry", "sam", "--json", db=db)
    assert done.exit_code == 0 and done.stderr == "Sending again: Hi\n"
    assert json.loads(done.stdout.splitlines()[-1])["result"]["replies"] == ["Hello!"]
    assert user_messages(db) == ["Hi"]


def test_output_flags_that_contradict_are_a_usage_error(fake_llm, db):
    result = run("send", "sam", "hi", "--json", "--quiet", db=db)
    assert result.exit_code == 2 and "--quiet and --json cannot be used together" in result.stderr
    assert user_messages(db) == []


def test_no_message_on_a_terminal_is_a_usage_error(fake_llm, db, tmp_path):
    parent, child = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "memgpt_lite", "--db", str(db), "send", "sam"],
            stdin=child,
            capture_output=True,
            text=True,
            env={**os.environ, "MEMGPT_LITE_HOME": str(tmp_path / "home")},
            timeout=60,
        )
    finally:
        os.close(parent)
        os.close(child)
    assert done.returncode == 2 and "Missing argument 'MESSAGE'" in done.stderr
    assert user_messages(db) == []


def test_the_docs_document_every_event_type_and_field():
    """The --json schema is promised stable in the docs (Scripting, cli/scripting.md):
    its table must name every event type and every field each one serializes."""
    from typing import get_args

    from memgpt_lite.events import StepEvent

    scripting = page("cli/scripting.md")
    section = scripting.split("| `type` | other fields |", 1)[1].split("\n\n", 1)[0]
    rows = dict(
        re.match(r"\| `(\w+)` \| (.*) \|$", line).groups()  # type: ignore[union-attr]
        for line in section.strip().splitlines()[1:]
    )
    for event in get_args(get_args(StepEvent)[0]):
        kind = event.model_fields["type"].default
        fields = {name for name, info in event.model_fields.items() if not info.exclude} - {
            "type",
            "step_id",
        }
        documented = set(re.findall(r"^`(\w+)`|, `(\w+)`", rows.pop(kind)))
        assert fields == {a or b for a, b in documented}, kind
    assert rows == {}, "the docs name event types that do not exist"
