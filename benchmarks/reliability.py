"""Reliability under crashes, concurrency and hostile input: every count should be 0.

    python benchmarks/reliability.py [--seed 7] [--steps 200] [--processes 4] [--sends 25]
        [--parts sigkill,concurrency,hostile]

1. SIGKILL. A child process steps one agent again and again (a memory edit and
   an archival insert chained before each reply, the endpoint answering after a
   random delay) and is killed at a random moment, then started again, until
   `--steps` steps have completed. After every kill the database is checked:
   SQLite's integrity and full-text checks, the trigger-kept counters, tool
   calls stored without their results, user messages of completed steps
   that are missing or got no reply, and silent interrupted steps: the
   message of the step the kill interrupted, stored with no reply in its
   step (a send_message whose result was stored without an error, or a final
   assistant text; any assistant message is not enough), yet not named by
   `agent.history.unanswered()`, which retry, pop and the chat's notice go
   by. A final step must then succeed, and the endpoint, which validates
   like the real API, must have rejected nothing.
2. Concurrency. N processes each send M messages to one agent, then to N
   agents (one each). The endpoint echoes the last user message it sees, so a
   reply that answers another process's message is a crossed reply. Counted:
   crossed replies, messages lost or with no reply, lock errors, crashed processes.
3. Hostile input (`hostile_input.py`): every built-in tool given hostile
   arguments, the Python API given unclean strings, every CLI command run as a
   real process with hostile argv bytes, and hostile agent files: crashes,
   tracebacks, unclean text stored, partial imports, rejected requests.

The endpoint is `memgpt_lite.testing.server.FakeOpenAIServer` on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import sqlite3
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from hostile_input import run_all as hostile_runs

from memgpt_lite import Agent, AgentSettings, MemGPTError, Store
from memgpt_lite.models import Message
from memgpt_lite.testing import FakeOpenAIServer, call, reply

MODEL = "gpt-4o-mini"
SPAWN = multiprocessing.get_context("spawn")


# ------------------------------------------------------------------ endpoints


def endpoint(server: FakeOpenAIServer) -> dict[str, str]:
    return {"base_url": server.base_url, "api_key": server.api_key}


class ChaosModel:
    """Each turn: a thought with a memory edit and an archival insert (both
    asking for a heartbeat), then a reply. Answers come after a random delay,
    so kills land in every phase of a step."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        self.turn = 0

    def __call__(self, body: dict[str, Any]) -> Any:
        with self.lock:
            delay = self.random.uniform(0.0, 0.03)
            self.turn += 1
            turn = self.turn
        if "tools" not in body:  # a summary request
            return reply(content="Summary: numbered facts were discussed.", delay=delay)
        if body["messages"][-1]["role"] != "user":
            return reply(tool_calls=[call("send_message", message=f"Noted ({turn}).")], delay=delay)
        return reply(
            f"saving fact {turn}",
            [
                call(
                    "core_memory_append",
                    label="human",
                    content=f"fact {turn}",
                    request_heartbeat=True,
                ),
                call(
                    "archival_memory_insert",
                    content=f"The user shared fact number {turn}.",
                    request_heartbeat=True,
                ),
            ],
            delay=delay,
        )


def echo_model(body: dict[str, Any]) -> Any:
    """Answer with the last user message, so each sender can tell its own reply."""
    if "tools" not in body:
        return reply(content="Summary: the senders sent numbered messages.")
    users = [m["content"] for m in body["messages"] if m["role"] == "user"]
    answer = call("send_message", message=f"re: {users[-1] if users else ''}")
    return reply(tool_calls=[answer], delay=0.01)  # a moment for another step to wait


# -------------------------------------------------------------------- checks


def integrity_problems(db: Path) -> int:
    """SQLite's own checks, the full-text indexes' and the counters'."""
    conn = sqlite3.connect(db)
    try:
        problems = 0 if conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok" else 1
        problems += len(conn.execute("PRAGMA foreign_key_check").fetchall())
        for table in ("messages_fts", "passages_fts"):
            try:
                conn.execute(f"INSERT INTO {table}({table}) VALUES('integrity-check')")
            except sqlite3.DatabaseError:
                problems += 1
        problems += conn.execute(
            "SELECT COUNT(*) FROM agents a WHERE message_count != "
            "(SELECT COUNT(*) FROM messages m WHERE m.agent_id = a.id) OR passage_count != "
            "(SELECT COUNT(*) FROM passages p WHERE p.agent_id = a.id)"
        ).fetchone()[0]
    finally:
        conn.close()
    return problems


def orphaned_tool_calls(store: Store, agent_id: str) -> int:
    """Tool calls not answered by the tool messages right after them."""
    messages = store.messages_from(agent_id, 0)
    orphans = 0
    for i, message in enumerate(messages):
        if message.role != "assistant" or not message.tool_calls:
            continue
        answered = set()
        for later in messages[i + 1 :]:
            if later.role != "tool":
                break
            answered.add(later.tool_call_id)
        orphans += sum(c.id not in answered for c in message.tool_calls)
    return orphans


def replied_steps(messages: list[Message]) -> set[str | None]:
    """The steps in which a reply reached the user: a send_message call whose
    result was stored without an error, or a final assistant text. (Any
    assistant message is not enough: a step killed after its tool calls has
    one, and its user never saw a reply.)"""
    sends = {
        c.id: m.step_id
        for m in messages
        if m.role == "assistant"
        for c in m.tool_calls
        if c.name == "send_message"
    }
    texts = [m for m in messages if m.role == "assistant" and not m.tool_calls and m.content]
    replied = {m.step_id for m in texts}
    for m in messages:
        failed = (m.content or "").startswith("Error:")
        if m.role == "tool" and m.tool_call_id in sends and not failed:
            replied.add(sends[m.tool_call_id])
    return replied


def missing_exchanges(store: Store, agent_id: str, texts: list[str]) -> int:
    """Of the user messages `texts`, how many are not stored exactly once with
    a reply in their step."""
    messages = store.messages_from(agent_id, 0)
    replied = replied_steps(messages)
    stored = Counter(m.content for m in messages if m.role == "user" and m.step_id in replied)
    return sum(stored[text] != 1 for text in texts)


def silent_interruption(store: Store, agent: Agent, text: str) -> tuple[int, int]:
    """For the user message `text` whose step a kill interrupted: whether it
    is stored with no reply in its step (the kill came first), and whether
    it is so yet not named unanswered (`agent.history.unanswered()`, which
    retry, pop and the chat's notice go by): a silent interruption."""
    messages = store.messages_from(agent.state.id, 0)
    asked = [m for m in messages if m.role == "user" and m.content == text]
    if not asked or asked[-1].step_id in replied_steps(messages):
        return 0, 0
    named = any(m.id == asked[-1].id for m in agent.history.unanswered())
    return 1, int(not named)


# ------------------------------------------------------------- 1. SIGKILL


def stepping_child(db: str, base_url: str, api_key: str, journal: str, start: int) -> None:
    """Step the agent forever, noting each message before and after its step."""
    agent = Agent.load("chaos", db=db, base_url=base_url, api_key=api_key)
    agent.on_wait = lambda message: None  # the killed holder's lock is taken over at once
    agent.runner.token_counter.count_text("warm up")  # loads the vocabulary before the first step
    fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"ready {start}\n".encode())
    for i in range(start, start + 100_000):
        os.write(fd, f"send {i}\n".encode())
        try:
            agent.step(f"message {i}")
        except MemGPTError as exc:
            os.write(fd, f"error {i} {type(exc).__name__}: {' '.join(str(exc).split())}\n".encode())
            continue
        os.write(fd, f"done {i}\n".encode())


def read_journal(journal: Path) -> tuple[list[int], list[str], int]:
    """The steps completed, the errors, and the last message number used."""
    done, errors, last = [], [], -1
    if journal.exists():
        for line in journal.read_text().splitlines():
            kind, number, *rest = line.split(" ", 2)
            if kind == "ready":
                continue
            last = max(last, int(number))
            if kind == "done":
                done.append(int(number))
            elif kind == "error":
                errors.append(rest[0] if rest else "")
    return done, errors, last


def in_flight(journal: Path) -> int | None:
    """The number of the message whose step was running when the child was
    killed (sent, neither done nor failed), if any."""
    lines = journal.read_text().splitlines() if journal.exists() else []
    kind, number = lines[-1].split(" ", 2)[:2] if lines else ("", "")
    return int(number) if kind == "send" else None


def _readies(journal: Path) -> int:
    return journal.read_text().count("ready ") if journal.exists() else 0


def sigkill_run(seed: int, steps: int, workdir: Path) -> dict[str, Any]:
    rng = random.Random(seed)
    db, journal = workdir / "chaos.db", workdir / "chaos.journal"
    counts: Counter[str] = Counter()
    with FakeOpenAIServer() as server:
        server.responder = ChaosModel(seed)
        # A small window, so the history is compacted (and killed while it is).
        settings = AgentSettings(context_window=4096)
        Agent.create("chaos", MODEL, db=db, settings=settings, **endpoint(server))
        kills = replyless = 0
        done: list[int] = []
        while len(done) < steps:
            _, _, last = read_journal(journal)
            child = SPAWN.Process(
                target=stepping_child,
                args=(str(db), server.base_url, server.api_key, str(journal), last + 1),
            )
            readies = _readies(journal)
            child.start()
            while _readies(journal) == readies and child.is_alive():
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 2.0))  # then kill it at a random moment of its work
            child.kill()
            child.join()
            kills += 1
            done, errors, _ = read_journal(journal)
            interrupted = in_flight(journal)
            with Store(db) as store:
                agent_id = store.get_agent("chaos").id
                if interrupted is not None:
                    agent = Agent.load("chaos", db=db, **endpoint(server))
                    unreplied, silent = silent_interruption(store, agent, f"message {interrupted}")
                    replyless += unreplied
                    counts["silent interrupted steps"] += silent
                counts["integrity problems"] += integrity_problems(db)
                counts["orphaned tool calls"] = orphaned_tool_calls(store, agent_id)
                counts["lost user messages"] = missing_exchanges(
                    store, agent_id, [f"message {i}" for i in done]
                )
        agent = Agent.load("chaos", db=db, **endpoint(server))
        final = agent.step("are you still there?")
        counts["final step failed"] = int(not final.replies)
        counts["rejected requests"] = len(server.rejections)
        counts["step errors"] = len(errors)
        problems = [r.error for r in server.rejections] + errors
        summary = {
            "steps": len(done),
            "kills": kills,
            "replyless": replyless,
            "problems": problems[:3],
        }
    return {"counts": counts, **summary}


# --------------------------------------------------------- 2. concurrency


def sending_child(
    db: str, name: str, endpoint: dict[str, str], sender: int, sends: int, start: Any, results: Any
) -> None:
    agent = Agent.load(name, db=db, **endpoint)
    agent.runner.token_counter.count_text("warm up")  # loads the vocabulary before the first step
    waits: list[str] = []
    agent.on_wait = waits.append  # counted, not printed
    crossed, errors = 0, Counter()
    start.wait()  # every sender starts at once
    for j in range(sends):
        text = f"sender {sender} message {j}"
        try:
            result = agent.step(text)
        except MemGPTError as exc:
            errors[type(exc).__name__] += 1
            continue
        crossed += result.replies != [f"re: {text}"]
    results.put((sender, crossed, dict(errors), len(waits)))


def concurrency_run(processes: int, sends: int, one_agent: bool, workdir: Path) -> dict[str, Any]:
    db = workdir / ("shared.db" if one_agent else "separate.db")
    names = ["shared"] * processes if one_agent else [f"agent{k}" for k in range(processes)]
    counts: Counter[str] = Counter()
    with FakeOpenAIServer() as server:
        server.responder = echo_model
        for name in sorted(set(names)):
            Agent.create(name, MODEL, db=db, **endpoint(server))
        results, start = SPAWN.Queue(), SPAWN.Barrier(processes)
        children = [
            SPAWN.Process(
                target=sending_child,
                args=(str(db), names[k], endpoint(server), k, sends, start, results),
            )
            for k in range(processes)
        ]
        started = time.perf_counter()
        for child in children:
            child.start()
        reports = [results.get(timeout=600) for _ in children]
        seconds = time.perf_counter() - started
        for child in children:
            child.join()
            counts["crashed processes"] += child.exitcode != 0
        waits = 0
        for _, crossed, errors, waited in reports:
            counts["crossed replies"] += crossed
            counts["lock errors"] += sum(errors.values())
            waits += waited
        with Store(db) as store:
            for k, name in enumerate(names):
                texts = [f"sender {k} message {j}" for j in range(sends)]
                counts["lost messages"] += missing_exchanges(store, store.get_agent(name).id, texts)
        counts["rejected requests"] = len(server.rejections)
    return {"counts": counts, "seconds": seconds, "waits": waits}


# ------------------------------------------------------------------- report


def show(title: str, counts: Counter[str], extra: str = "") -> int:
    figures = ", ".join(f"{key} {value}" for key, value in counts.items())
    print(f"{title}: {figures}{extra}")
    return sum(counts.values())


PARTS = ("sigkill", "concurrency", "hostile")


def _sigkill_part(seed: int, steps: int, workdir: Path) -> int:
    chaos = sigkill_run(seed, steps, workdir)
    total = show(
        f"SIGKILL: {chaos['steps']} steps completed, {chaos['kills']} kills "
        f"({chaos['replyless']} of them after the message was stored, before a reply)",
        chaos["counts"],
    )
    for problem in chaos["problems"]:
        print(f"  {problem}")
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--steps", type=int, default=200, help="completed steps under SIGKILL")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--sends", type=int, default=25, help="messages per process")
    parser.add_argument(
        "--parts",
        default=",".join(PARTS),
        help=f"which parts to run, comma-separated (default: all of {','.join(PARTS)})",
    )
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    if parts - set(PARTS):
        parser.error(f"unknown part(s): {', '.join(sorted(parts - set(PARTS)))}")
    total = 0
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        if "sigkill" in parts:
            total += _sigkill_part(args.seed, args.steps, workdir)
        for one_agent in (True, False) if "concurrency" in parts else ():
            run = concurrency_run(args.processes, args.sends, one_agent, workdir)
            agents = "one agent" if one_agent else f"{args.processes} agents"
            total += show(
                f"{args.processes} processes x {args.sends} sends, {agents}",
                run["counts"],
                f" ({run['seconds']:.1f} s; steps that waited for another: {run['waits']})",
            )
        for title, cases, counts in hostile_runs(args.seed, workdir) if "hostile" in parts else ():
            total += show(f"hostile {title} ({cases} cases)", counts)
    print(f"total of all counts: {total}")


if __name__ == "__main__":
    main()
