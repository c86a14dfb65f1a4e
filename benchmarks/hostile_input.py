"""Hostile input against every tool, the Python API, every CLI command and the
agent-file importer; part 3 of `reliability.py`, which runs it.

    python benchmarks/hostile_input.py [--seed 7]

Counted (each should be 0):
- tools: steps that raised, tool results or arguments stored unclean, requests
  the endpoint (strict like the real API) rejected, an export that failed;
- Python API: calls that raised anything but our one-line errors;
- CLI: real processes given hostile argv bytes (not UTF-8, empty, 100 KB, a
  lone dash...) that printed a traceback or exited other than 0, 1 or 2;
- agent files: imports that raised anything but a one-line error, or stored
  part of a refused file.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from memgpt_lite import Agent, MemGPTError, Store
from memgpt_lite.agentfile.native import export_agent, import_agent
from memgpt_lite.cli.main import cli
from memgpt_lite.cli.scripting import ExitStatus
from memgpt_lite.memory.retrieval.search import search_messages
from memgpt_lite.testing import FakeOpenAIServer, call_raw, reply, say
from memgpt_lite.testing.hostile import (
    ARGV_BYTES,
    BUILTIN_ARGUMENTS,
    hostile_arguments,
    hostile_files,
)
from memgpt_lite.tools.builtin import BUILTIN_TOOLS

UNCLEAN = "x\ud800y\udcff"  # what Python code and JSON escapes can hand us
ARGV_TOKENS = [ARGV_BYTES, b"", b"x" * 100_000, b"-1", b"\xff\xfe@"]
NUMBERS = (click.types.IntParamType, click.types.FloatParamType)
LETTA_FILES = Path(__file__).resolve().parents[2] / "shared" / "letta-af"


def answer(body: dict[str, Any]) -> Any:
    """The model after a hostile call: a clean reply (or a summary when asked)."""
    return say("Done.") if body.get("tools") else reply(content="A summary.")


def endpoint(server: FakeOpenAIServer) -> dict[str, str]:
    return {"base_url": server.base_url, "api_key": server.api_key}


def is_clean(text: str | None) -> bool:
    try:
        (text or "").encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# --------------------------------------------------------------------- tools


def tools_run(server: FakeOpenAIServer, workdir: Path, seed: int) -> tuple[int, Counter[str]]:
    agent = Agent.create("tools", "gpt-4o-mini", db=workdir / "tools.db", **endpoint(server))
    server.responder = answer
    counts: Counter[str] = Counter(crashed=0, unclean=0)
    cases = 0
    for name in BUILTIN_TOOLS:
        arguments = hostile_arguments(BUILTIN_ARGUMENTS[name], random.Random(f"{seed}:{name}"))
        cases += len(arguments)
        for start in range(0, len(arguments), 8):
            calls = [call_raw(name, text) for text in arguments[start : start + 8]]
            # A call that always fails makes the loop ask the model again: that
            # request carries every result of the batch, for the server to check.
            calls.append(call_raw("no_such_tool", "{}"))
            server.enqueue(reply(tool_calls=calls))
            try:
                result = agent.step("Go on.")
            except Exception:  # noqa: BLE001 - the figure wanted is every crash
                counts["crashed"] += 1
                continue
            counts["unclean"] += sum(
                not (is_clean(r.content) and is_clean(r.call.arguments))
                for r in result.tool_results
            )
    try:
        agent.step("Are you still there?")
        counts["export failed"] = int(not export_agent(agent.store, "tools").messages)
    except Exception:  # noqa: BLE001
        counts["crashed"] += 1
    return cases, counts


# ---------------------------------------------------------------- Python API


def api_run(server: FakeOpenAIServer, workdir: Path) -> tuple[int, Counter[str]]:
    db = workdir / "api.db"
    server.responder = answer
    agent = Agent.create(
        "api", "gpt-4o-mini", db=db, system="You are Sam. " + UNCLEAN, **endpoint(server)
    )
    calls = [
        lambda: agent.step("Hello " + UNCLEAN),
        lambda: agent.set_block("human", "Name: " + UNCLEAN),
        lambda: agent.set_block("human" + UNCLEAN, "x"),
        lambda: agent.archival.insert("A note " + UNCLEAN, tags=["tag" + UNCLEAN]),
        lambda: agent.archival.search("note " + UNCLEAN, tags=["tag" + UNCLEAN]),
        lambda: agent.archival.list(tags=[UNCLEAN]),
        lambda: agent.archival.get(UNCLEAN),
        lambda: agent.archival.delete(UNCLEAN),
        lambda: search_messages(agent.runner, UNCLEAN, 5),
        lambda: agent.history.rethink("A thought " + UNCLEAN),
        lambda: agent.history.rewrite("A reply " + UNCLEAN),
        lambda: agent.set_model("gpt-4o-mini" + UNCLEAN),
        lambda: agent.set_model("gpt-4o-mini"),
        lambda: agent.rename("bob" + UNCLEAN),
        lambda: Agent.load("api" + UNCLEAN, db=db, **endpoint(server)),
        lambda: Agent.create("api2", "gpt-4o-mini" + UNCLEAN, db=db, base_url="http://h\udcff"),
        lambda: agent.step("Again " + UNCLEAN),
        lambda: agent.step("[" * 100_000),
        lambda: agent.archival.insert("\x00" * 10 + UNCLEAN * 1000),
    ]
    counts: Counter[str] = Counter(crashed=0)
    for make_call in calls:
        try:
            make_call()
        except (MemGPTError, ValidationError):
            pass  # a one-line error, as intended
        except Exception:  # noqa: BLE001 - the figure wanted is every crash
            counts["crashed"] += 1
    counts["unclean export"] = int(not is_clean(export_agent(agent.store, "api").model_dump_json()))
    counts["rejected requests"] = len(server.rejections)
    return len(calls), counts


# ----------------------------------------------------------------------- CLI


def command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """(words, command) for every command; a group's NAME argument is a word."""
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from command_paths(command, (*prefix, name, "{NAME}"))
        else:
            yield (*prefix, name), command


def argv_for(words: tuple[str, ...], command: click.Command, token: bytes, name: bytes) -> list:
    """A command line with `token` in every argument and option, and `name`
    where an agent's name goes."""
    argv: list[bytes] = [name if w == "{NAME}" else w.encode() for w in words]
    for param in command.params:
        # A number option given text only tests click: give numbers numbers.
        value = b"1" if isinstance(param.type, NUMBERS) else token
        if isinstance(param, click.Argument):
            argv.append(name if param.name in ("name", "old") else value)
        elif isinstance(param, click.Option) and param.name != "edit":
            flag = max(param.opts, key=len).encode()
            argv += [flag] if param.is_flag else [flag, value]
    return argv


def cli_runs() -> list[list[bytes]]:
    runs = []
    for words, command in command_paths(cli):
        destructive = words[0] in ("delete", "rename")
        for token in ARGV_TOKENS:
            names = [token] if destructive else [b"sam", token]
            runs += [argv_for(words, command, token, name) for name in names]
    return runs


def cli_run(server: FakeOpenAIServer, workdir: Path) -> tuple[int, Counter[str]]:
    db = workdir / "cli.db"
    Agent.create("sam", "gpt-4o-mini", db=db)
    server.responder = answer
    env = {
        **os.environ,
        "MEMGPT_LITE_DB": str(db),
        "MEMGPT_LITE_HOME": str(workdir / "home"),
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": server.api_key,
        "EDITOR": "true",
        "PYTHONIOENCODING": "utf-8:strict",  # a strict UTF-8 terminal
    }

    def run(argv: list[bytes]) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "memgpt_lite", *argv],
            input=b"hello \xff\n/exit\n",
            env=env,
            cwd=workdir,
            capture_output=True,
            timeout=300,
            check=False,
        )

    runs = cli_runs()
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(run, runs))
    counts: Counter[str] = Counter(tracebacks=0, crashes=0)
    for process in done:
        counts["tracebacks"] += b"Traceback" in process.stderr
        # Any status of ours but Ctrl-C's: send may end with "no reply" (3).
        counts["crashes"] += process.returncode not in set(ExitStatus) - {ExitStatus.INTERRUPTED}
    counts["rejected requests"] = len(server.rejections)
    return len(runs), counts


# --------------------------------------------------------------- agent files


def table_counts(db: Path) -> tuple[int, ...]:
    conn = sqlite3.connect(db)
    try:
        tables = ("agents", "blocks", "messages", "passages")
        return tuple(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables)
    finally:
        conn.close()


def files_run(server: FakeOpenAIServer, workdir: Path, seed: int) -> tuple[int, Counter[str]]:
    db = workdir / "files.db"
    agent = Agent.create("files", "gpt-4o-mini", db=db, **endpoint(server))
    server.responder = answer
    agent.step("I like tea")
    agent.archival.insert("The user likes tea.")
    bases: list[tuple[str, Any]] = [
        ("ours", export_agent(agent.store, "files").model_dump(mode="json"))
    ]
    for path in sorted(LETTA_FILES.glob("*.af")):
        raw = json.loads(path.read_text(encoding="utf-8"))
        bases.append((path.name, json.loads(raw) if isinstance(raw, str) else raw))
    store = Store(db)
    counts: Counter[str] = Counter(crashed=0, partial=0, multiline=0)
    cases = 0
    for i, (_, data) in enumerate(hostile_files(random.Random(seed), bases)):
        cases += 1
        path = workdir / f"hostile-{i}.af"
        path.write_bytes(data)
        before = table_counts(db)
        try:
            import_agent(store, path, name=f"copy{i}")
        except MemGPTError as exc:
            counts["multiline"] += "\n" in str(exc)
            counts["partial"] += table_counts(db) != before
        except Exception:  # noqa: BLE001 - the figure wanted is every crash
            counts["crashed"] += 1
    store.close()
    return cases, counts


def run_all(seed: int, workdir: Path) -> Iterator[tuple[str, int, Counter[str]]]:
    """(title, cases, counts) of each part, as it finishes."""
    for title, run in [
        ("tools", lambda server: tools_run(server, workdir, seed)),
        ("Python API", lambda server: api_run(server, workdir)),
        ("CLI commands", lambda server: cli_run(server, workdir)),
        ("agent files", lambda server: files_run(server, workdir, seed)),
    ]:
        with FakeOpenAIServer() as server:
            cases, counts = run(server)
            counts["rejected requests"] = len(server.rejections)
            yield title, cases, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for title, cases, counts in run_all(args.seed, Path(tmp)):
            figures = ", ".join(f"{key} {value}" for key, value in counts.items())
            print(f"hostile {title}: {cases} cases: {figures}")


if __name__ == "__main__":
    main()
