"""Hostile input, fuzzed with fixed seeds: tool-call arguments a model can
send, strings from Python, bytes in `argv` and agent files. Nothing may crash,
store an unclean string, or make us send a request a strict JSON parser would
refuse (the fake server refuses lone surrogates and NaN with 400)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path
from typing import Any, Literal

import pytest
from click.testing import CliRunner
from pydantic import BaseModel
from support.paths import LETTA_AF

from memgpt_lite import Agent, ConfigError, tool
from memgpt_lite.agentfile.native import export_agent, import_agent, write_agent_file
from memgpt_lite.cli.main import cli
from memgpt_lite.errors import MemGPTError
from memgpt_lite.memory.retrieval.search import search_messages
from memgpt_lite.storage.sqlite.store import Store
from memgpt_lite.testing import FakeOpenAIServer, Reply, call, call_raw, reply, say
from memgpt_lite.testing.hostile import (
    ARGV_BYTES,
    ARGV_TEXT,
    BUILTIN_ARGUMENTS,
    deep,
    hostile_arguments,
    hostile_files,
)
from memgpt_lite.tools.builtin import BUILTIN_TOOLS
from memgpt_lite.tools.schema import ToolContext

SEED = 11
PLAN_TRIP = {"city": "Oslo", "days": 2, "budget": 10.5, "tags": ["x"], "start": "2030-05-01"}
VALID_ARGUMENTS = {**BUILTIN_ARGUMENTS, "plan_trip": PLAN_TRIP}
UNCLEAN = "x\ud800y\udcff"  # what Python code and JSON escapes can hand us


@tool
def plan_trip(
    city: str,
    days: int,
    budget: float,
    tags: list[str],
    mode: Literal["car", "train"] = "car",
    start: date | None = None,
    options: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Plan a trip (a custom tool with typed parameters; it echoes them back)."""
    return {"city": city, "days": days, "budget": budget, "tags": tags, "options": options}


def _answer(body: dict[str, Any]) -> Reply:
    """The model after a hostile call: a clean reply (or a summary when asked)."""
    return say("Done.") if body.get("tools") else reply(content="A summary.")


def _batches(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _clean(text: str | None) -> bool:
    try:
        (text or "").encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@pytest.mark.parametrize("name", [*BUILTIN_TOOLS, "plan_trip"])
def test_hostile_tool_arguments_become_tool_errors(fake_llm, tmp_path, name):
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db", tools=[plan_trip])
    fake_llm.responder = _answer
    # Hostile arguments run to hundreds of kB: streamed in pieces of 4 characters
    # (the default) they took 200,000 events a test; what they hold is the point.
    fake_llm.stream_piece_chars = 4096
    crashed: list[tuple[str, str]] = []
    for batch in _batches(
        hostile_arguments(VALID_ARGUMENTS[name], random.Random(f"{SEED}:{name}")), 8
    ):
        calls = [call_raw(name, arguments) for arguments in batch]
        # A last call that always fails makes the loop call the model again:
        # that following request carries every result of this batch.
        calls.append(call_raw("no_such_tool", "{}"))
        fake_llm.enqueue(reply(tool_calls=calls))
        try:
            result = agent.step("Go on.")
        except Exception as exc:  # noqa: BLE001 - the figure we want is every crash
            crashed.append((f"{type(exc).__name__}: {str(exc)[:80]}", repr(batch)[:120]))
            continue
        assert [r.call.id for r in result.tool_results[: len(calls)]] == [c.id for c in calls]
        assert all(_clean(r.content) and _clean(r.call.arguments) for r in result.tool_results)
        assert fake_llm.rejections == []
    assert crashed == []
    agent.step("Are you still there?")  # the whole history is sent, and accepted
    assert fake_llm.rejections == []
    assert export_agent(agent.store, "sam").messages


def test_a_hostile_argument_is_explained_to_the_model(fake_llm, tmp_path):
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db")
    problems = {
        '{"message": ' + deep(10_000) + "}": "nested more than 64 levels deep",
        '{"message": ' + "9" * 5000 + "}": "a number has too many digits",
        '{"message": NaN}': "NaN is not a JSON value",
        "[1, 2]": "the arguments must be a JSON object",
        '{"message": "hi"': "not valid JSON",
    }
    for arguments, reason in problems.items():
        fake_llm.enqueue(reply(tool_calls=[call_raw("send_message", arguments)]), say("Hi."))
        result = agent.step("Hello")
        failed = result.tool_results[0]
        assert not failed.ok and reason in failed.content
        assert "Call send_message again" in failed.content
        assert result.replies == ["Hi."]
    assert fake_llm.rejections == []


def test_surrogates_in_arguments_are_cleaned_before_anything_is_stored(fake_llm, tmp_path):
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db")
    fake_llm.enqueue(
        reply(
            content="thinking " + UNCLEAN,
            tool_calls=[call_raw("send_message", '{"message": "hi \\ud800 \\ud83d\\ude00"}')],
        )
    )
    result = agent.step("Hello")
    assert result.replies == ["hi \ufffd 😀"]
    assert result.thoughts == ["thinking x\ufffdy\ufffd"]
    stored = agent.context_messages()[-2]
    assert stored.content == "thinking x\ufffdy\ufffd"
    assert "\\ud800" not in stored.tool_calls[0].arguments
    assert stored.search_text() == "thinking x\ufffdy\ufffd\nhi \ufffd 😀"
    fake_llm.enqueue(say("Again."))
    agent.step("More")
    assert fake_llm.rejections == []


def _circular() -> dict[str, Any]:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    return loop


def _nested(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels):
        value = [value]
    return value


class Found(BaseModel):
    text: str


@tool
def odd_result(kind: str) -> Any:
    """Return something hard to show to a model."""
    return {
        "surrogate": "result \ud800 " + "w" * 10_000,
        "model": Found(text="result \ud800"),
        "circular": _circular(),
        "deep": _nested(100_000),
    }[kind]


@pytest.mark.parametrize("kind", ["surrogate", "model", "circular", "deep"])
def test_a_tool_result_that_cannot_be_sent_becomes_a_tool_error_or_clean_text(
    fake_llm, tmp_path, kind
):
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db", tools=[odd_result])
    fake_llm.enqueue(reply(tool_calls=[call("odd_result", kind=kind)]), say("OK."))
    result = agent.step("Go")
    outcome = result.tool_results[0]
    assert _clean(outcome.content)
    assert len(outcome.content) <= agent.state.settings.tool_result_max_chars
    assert outcome.ok == (kind in ("surrogate", "model"))
    assert fake_llm.rejections == []


@pytest.mark.parametrize("name", [*BUILTIN_TOOLS, "plan_trip"])
def test_tool_run_never_raises_for_arguments(tmp_path, name):
    """The tool runner alone, over more seeds than the loop test can afford."""
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db", tools=[plan_trip])
    runner = agent.tools[name]
    context = ToolContext(deps=agent.runner, step_id="step-fuzz")
    for seed in range(3):
        for arguments in hostile_arguments(VALID_ARGUMENTS[name], random.Random(f"{seed}:{name}")):
            outcome = runner.run(context, arguments, 2000)
            assert _clean(outcome.content) and len(outcome.content) <= 2000


# ----------------------------------------------------------------- Python API

EMBEDDER = "endpoint:text-embedding-3-small"


def test_python_api_takes_unclean_strings(fake_llm, tmp_path):
    agent = Agent.create(
        "sam",
        "gpt-4o-mini",
        db=tmp_path / "a.db",
        system="You are Sam. " + UNCLEAN,
        embedder=EMBEDDER,
    )
    fake_llm.responder = _answer
    agent.step("Hello " + UNCLEAN)
    agent.set_block("human", "Name: " + UNCLEAN)
    report = agent.archival.insert("A note " + UNCLEAN, tags=["tag" + UNCLEAN])
    passage_id = report.stored[0].id
    assert agent.archival.search("note " + UNCLEAN, tags=["tag" + UNCLEAN])[1] == 1
    assert agent.archival.search(UNCLEAN)[1] >= 0
    assert agent.archival.list(tags=["tag" + UNCLEAN])[1] == 1
    with pytest.raises(MemGPTError):
        agent.archival.get(passage_id + UNCLEAN)
    found, _ = search_messages(agent.runner, "Hello " + UNCLEAN, 5)
    assert found and all(_clean(m.content) for m in found)
    agent.history.rethink("A thought " + UNCLEAN)
    agent.history.rewrite("A reply " + UNCLEAN)
    agent.set_model("gpt-4o-mini" + UNCLEAN)
    assert agent.state.llm.model == "gpt-4o-mini" + "x\ufffdy\ufffd"
    agent.set_model("gpt-4o-mini")
    with pytest.raises(ConfigError):
        agent.rename("bob" + UNCLEAN)
    result = agent.step("Again " + UNCLEAN)
    assert all(_clean(text) for text in [*result.replies, *result.thoughts])
    assert fake_llm.rejections == []
    exported = export_agent(agent.store, "sam")
    assert _clean(exported.model_dump_json())
    assert "x\ufffdy\ufffd" in agent.block("human").value


def test_a_base_url_that_is_not_valid_text_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="base URL"):
        Agent.create("sam", "gpt-4o-mini", base_url="http://h\udcff/v1", db=tmp_path / "a.db")


# --------------------------------------------------------------- the fake server


@pytest.mark.parametrize(
    "body",
    [
        b'{"model": "m", "messages": [{"role": "user", "content": "\\ud800"}]}',
        b'{"model": "m", "messages": [{"role": "user", "content": "hi", "\\udc00": 1}]}',
        b'{"model": "m", "messages": [{"role": "user", "content": "\xed\xa0\x80"}]}',
        b'{"model": "m", "temperature": NaN, "messages": [{"role": "user", "content": "hi"}]}',
        b'{"model": "m", "temperature": 1e999, "messages": [{"role": "user", "content": "hi"}]}',
    ],
)
def test_fake_server_refuses_what_a_strict_parser_refuses(body):
    with FakeOpenAIServer() as server:
        server.enqueue(say("never sent"))
        request = urllib.request.Request(
            f"{server.base_url}/chat/completions",
            data=body,
            headers={"Authorization": f"Bearer {server.api_key}"},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 400
        assert len(server.rejections) == 1 and server.pending() == 1


# --------------------------------------------------------------- the command line


def _cli(*args: str, db: Path, input: str | None = None):
    return CliRunner().invoke(cli, ["--db", str(db), *args], input=input)


def test_every_cli_command_takes_unclean_text_in_process(fake_llm, tmp_path):
    """Strings as Python decodes non-UTF-8 argv bytes, to every command."""
    db = tmp_path / "a.db"
    fake_llm.responder = _answer
    assert _cli("create", "sam", "--model", "gpt-4o-mini", db=db).exit_code == 0
    bad = ARGV_TEXT
    commands = [
        ["send", "sam", bad, "-v"],
        ["send", bad, "hi"],
        ["archival", "sam", "insert", bad, "--tag", bad],
        ["archival", "sam", "search", bad, "--tag", bad],
        ["archival", "sam", "list", "--tag", bad],
        ["archival", "sam", "get", bad],
        ["archival", "sam", "delete", bad, "--yes"],
        ["archival", bad, "list"],
        ["blocks", "sam", "human", "--set", bad],
        ["blocks", "sam", bad],
        ["blocks", "sam", "human"],
        ["create", "bob", "-m", bad, "--persona", bad, "--human", bad, "--system", bad],
        ["create", "eve", "-m", "gpt-4o-mini", "--block", f"notes={bad}"],
        ["create", "eve2", "-m", "gpt-4o-mini", "--embedder", bad],  # refused: not an embedder
        ["create", bad, "--model", "gpt-4o-mini"],
        ["rename", "sam", bad],
        ["rename", bad, "sam2"],
        ["config", "--model", bad, "--base-url", bad, "--embedder", bad],
        ["memory", bad],
        ["memory", "sam"],
        ["show", bad],
        ["show", "sam"],
        ["context", bad],
        ["summarize", bad],
        ["export", bad],
        ["import", str(tmp_path / "missing.json"), "--name", bad],
        ["chat", bad],
        ["delete", bad, "--yes"],
        ["agents"],
        [bad],
    ]
    for args in commands:
        result = _cli(*args, db=db, input="/exit\n")
        assert result.exception is None or isinstance(result.exception, SystemExit), args
        assert result.exit_code in (0, 1, 2), args
    assert fake_llm.rejections == []
    assert [state.name for state, _ in Store(db).list_agents()] == ["bob", "eve", "sam"]


def _run_cli(
    args: list[bytes], stdin: bytes, env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "memgpt_lite", *args],
        input=stdin,
        env=env,
        cwd=cwd,
        capture_output=True,
        timeout=120,
        check=False,
    )


def test_cli_with_non_utf8_bytes_never_prints_a_traceback(fake_llm, tmp_path):
    """Real processes, given argv bytes and typed lines that are not UTF-8,
    on a strict UTF-8 terminal (what a user's en_US.UTF-8 locale gives), with a
    database whose path is not UTF-8 either."""
    fake_llm.responder = _answer
    folder = os.fsencode(tmp_path)
    db = os.fsdecode(folder + b"/agents-\xff.db")
    Agent.create("sam", "gpt-4o-mini", db=db)
    persona = folder + b"/persona-\xff.md"
    Path(os.fsdecode(persona)).write_bytes(b"Persona text from a file with an odd name.")
    exported = folder + b"/sam-\xfe.json"
    write_agent_file(Store(db), "sam", os.fsdecode(exported))
    env = {**os.environ, "MEMGPT_LITE_DB": db, "PYTHONIOENCODING": "utf-8:strict"}
    b = ARGV_BYTES
    runs = [
        ([b"send", b"sam", b], b""),
        ([b"archival", b"sam", b"insert", b, b"--tag", b], b""),
        ([b"blocks", b"sam", b"human", b"--set", b], b""),
        ([b"create", b"bob", b"-m", b, b"--persona", b"@" + persona, b"--human", b], b""),
        ([b"import", exported, b"--name", b"copy"], b""),
        (
            [
                b"--db",
                db.encode("utf-8", "surrogateescape"),
                b"export",
                b"sam",
                b"-o",
                b + b".json",
            ],
            b"",
        ),
        ([b"chat", b"sam"], b"hello \xff there\n/block human \xfe\n/exit\n"),
    ]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda run: _run_cli(*run, env, tmp_path), runs))
    for (args, _), done in zip(runs, results, strict=True):
        assert b"Traceback" not in done.stderr, (args, done.stderr.decode(errors="replace"))
        assert done.returncode == 0, (args, done.stderr)
    assert b"Done." in results[0].stdout and b"Done." in results[-1].stdout
    store = Store(db)
    sam = store.get_agent("sam")
    assert [b.value for b in store.get_blocks(sam.id) if b.label == "human"] == ["\ufffd"]
    said = [m.content for m in store.messages_from(sam.id, 0) if m.role == "user"]
    assert sorted(said) == ["hello \ufffd there", "x\ufffd\ufffdy\ufffd\ufffd\ufffdz"]
    assert sorted(s.name for s, _ in store.list_agents()) == ["bob", "copy", "sam"]
    assert (tmp_path / (ARGV_TEXT + ".json")).exists()
    assert fake_llm.rejections == []


# ----------------------------------------------------------------- agent files


def _counts(db: Path) -> dict[str, int]:
    with Store(db) as store:
        agents = store.list_agents()
        return {
            "agents": len(agents),
            "blocks": len({b.id for state, _ in agents for b in store.get_blocks(state.id)}),
            "messages": sum(stats.message_count for _, stats in agents),
            "passages": sum(stats.passage_count for _, stats in agents),
        }


def test_hostile_agent_files_import_cleanly_or_give_one_line(fake_llm, tmp_path):
    db = tmp_path / "a.db"
    agent = Agent.create("sam", "gpt-4o-mini", db=db)
    fake_llm.responder = _answer
    fake_llm.enqueue(
        reply(
            content="Saving.",
            tool_calls=[call("archival_memory_insert", content="Tea", request_heartbeat=True)],
        )
    )
    agent.step("I like tea")
    ours = export_agent(agent.store, "sam").model_dump(mode="json")
    store = Store(db)
    problems: list[str] = []
    bases = [("ours", ours)]
    # Real Letta files, kept beside the project (see ../shared/letta-af/README.md).
    for path in sorted(LETTA_AF.glob("*.af"))[:3]:
        raw = json.loads(path.read_text(encoding="utf-8"))
        bases.append((path.name, json.loads(raw) if isinstance(raw, str) else raw))
    for i, (what, data) in enumerate(hostile_files(random.Random(SEED), bases)):
        path = tmp_path / f"hostile-{i}.af"
        path.write_bytes(data)
        before = _counts(db)
        try:
            report = import_agent(store, path, name=f"copy{i}")
        except MemGPTError as exc:
            if "\n" in str(exc) or _counts(db) != before:
                problems.append(f"{what}: {exc}")
            continue
        except Exception as exc:  # noqa: BLE001 - the figure we want is every crash
            problems.append(f"{what}: {type(exc).__name__}: {str(exc)[:100]}")
            continue
        copy = Agent.load(report.name, store=store, base_url=fake_llm.base_url)
        assert _clean(export_agent(store, report.name).model_dump_json())
        copy.step("Still working?")
    assert problems == []
    assert fake_llm.rejections == []
