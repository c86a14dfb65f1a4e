"""Reliability under crashes, concurrency and hostile input: every count should be 0.

    python benchmarks/reliability.py [--seed 7] [--steps 200] [--serve-kills 40]
        [--db sqlite|postgres|both] [--processes 4] [--sends 25]
        [--parts sigkill,serve,concurrency,hostile]

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
2. serve killed. `memgpt-lite serve` (a real process) is killed at a random
   moment of a streamed send (`--serve-kills` times; on `--db`'s backend),
   then started again; the message sent is checked as above (silent
   interrupted steps, lost messages of finished sends, orphaned tool
   calls), and a last send must succeed.
3. Concurrency. N processes each send M messages to one agent, then to N
   agents (one each). The endpoint echoes the last user message it sees, so a
   reply that answers another process's message is a crossed reply. Counted:
   crossed replies, messages lost or with no reply, lock errors, crashed processes.
4. Hostile input (`hostile_input.py`): every built-in tool given hostile
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
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from databases import Databases, add_db_option, backends, label
from hostile_input import run_all as hostile_runs
from server_load import Server, free_port, make_key, server_env

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


def silent_interruption(agent: Agent, text: str) -> tuple[int, int]:
    """For the user message `text` whose step a kill interrupted: whether it
    is stored with no reply in its step (the kill came first), and whether
    it is so yet not named unanswered (`agent.history.unanswered()`, which
    retry, pop and the chat's notice go by): a silent interruption."""
    messages = agent.store.messages_from(agent.state.id, 0)
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
                    unreplied, silent = silent_interruption(agent, f"message {interrupted}")
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


# ------------------------------------------------------- 3. serve killed


def streamed_send(url: str, key: str, text: str, seen: list[str]) -> None:
    """Send `text` to the agent as a streamed step, noting in `seen` the
    type of each event as it comes, but the text deltas (the server may be
    killed at any of them)."""
    headers = {"Authorization": f"Bearer {key}"}
    body = {"message": text, "stream": True}
    try:
        with (
            httpx.Client(base_url=url, headers=headers, timeout=60) as http,
            http.stream("POST", "/api/agents/chaos/messages", json=body) as response,
        ):
            for line in response.iter_lines():
                if line.startswith("event: ") and not line.endswith("_delta"):
                    seen.append(line.removeprefix("event: "))
    except httpx.TransportError:
        pass  # killed mid-stream


def kill_after(seen: list[str], sender: threading.Thread, events: int, delay: float) -> None:
    """Wait until the stream showed `events` events (or ended), then `delay`
    seconds: a moment of the step chosen by its progress, not by the clock
    (a busy machine's first step may take seconds)."""
    while len(seen) < events and sender.is_alive():
        time.sleep(0.002)
    time.sleep(delay)


@contextmanager
def serve_process(db: str, env: dict[str, str], log: Path) -> Iterator[Server]:
    """`memgpt-lite serve` on `db` and a free port of 127.0.0.1, its output
    to `log`; yields it once /health answers, and reaps it at the end
    (SIGINT, unless it was killed meanwhile)."""
    port = free_port()
    command = [sys.executable, "-m", "memgpt_lite", "serve", "--port", str(port), "--db", db]
    with log.open("ab") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while process.poll() is None and time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        else:
            raise SystemExit(f"memgpt-lite serve did not start: see {log}")
        yield Server(url, process.pid)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        process.wait(timeout=60)


SMALL_WINDOW = {"context_window": 4096}  # as the SIGKILL part's: compactions get killed too


def serve_kill_run(seed: int, kills: int, db: str, workdir: Path) -> dict[str, Any]:
    """`memgpt-lite serve` killed (SIGKILL) at a random moment of a streamed
    send, `kills` times, started again each time; after each kill, the
    message sent is checked as the SIGKILL part checks it."""
    rng = random.Random(seed)
    counts: Counter[str] = Counter()
    replyless, finished, texts = 0, [], []
    # A step of ChaosModel streams about 12 events (not counting text deltas):
    # started, request, usage, 2 x (call started, returned), request, usage,
    # reply, finished; the kill comes after one of them, and up to 50 ms on.
    with FakeOpenAIServer() as model:
        model.responder = ChaosModel(seed)
        env = server_env(model.base_url, model.api_key, str(workdir / "serve-home"))
        key = make_key(db, "bench")
        log = workdir / "serve.log"
        for kill in range(kills):
            with serve_process(db, env, log) as server:
                if kill == 0:
                    created = httpx.post(
                        f"{server.url}/api/agents",
                        headers={"Authorization": f"Bearer {key}"},
                        json={
                            "name": "chaos",
                            "model": MODEL,
                            "settings": {"context_window": 4096},
                        },
                    )
                    created.raise_for_status()
                texts.append(f"streamed {kill}")
                seen: list[str] = []
                sender = threading.Thread(
                    target=streamed_send, args=(server.url, key, texts[-1], seen)
                )
                sender.start()
                kill_after(seen, sender, rng.randrange(1, 13), rng.uniform(0.0, 0.05))
                os.kill(server.pid, signal.SIGKILL)
                sender.join()
                if "step_finished" in seen:
                    finished.append(texts[-1])
            agent = Agent.load("chaos", db=db, **endpoint(model))
            unreplied, silent = silent_interruption(agent, texts[-1])
            replyless += unreplied
            counts["silent interrupted steps"] += silent
            counts["orphaned tool calls"] = orphaned_tool_calls(agent.store, agent.state.id)
            counts["lost user messages"] = missing_exchanges(agent.store, agent.state.id, finished)
        with serve_process(db, env, log) as server:
            headers = {"Authorization": f"Bearer {key}"}
            last = httpx.post(
                f"{server.url}/api/agents/chaos/messages",
                headers=headers,
                json={"message": "are you still there?"},
                timeout=60,
            )
            counts["final step failed"] = int(last.status_code != 200 or not last.json()["replies"])
        counts["rejected requests"] = len(model.rejections)
        problems = [r.error for r in model.rejections]
    summary = {"kills": kills, "replyless": replyless, "finished": len(finished)}
    return {"counts": counts, **summary, "problems": problems[:3]}


# ------------------------------------------------------------------- report


def show(title: str, counts: Counter[str], extra: str = "") -> int:
    figures = ", ".join(f"{key} {value}" for key, value in counts.items())
    print(f"{title}: {figures}{extra}")
    return sum(counts.values())


PARTS = ("sigkill", "serve", "concurrency", "hostile")


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


def _serve_part(seed: int, kills: int, db_choice: str, workdir: Path) -> int:
    total = 0
    with Databases(str(workdir)) as databases:
        for backend in backends(db_choice):
            run = serve_kill_run(seed, kills, databases.new(backend, "serve-kills"), workdir)
            total += show(
                f"serve SIGKILL during streamed sends ({label(backend)}): {run['kills']} kills, "
                f"{run['finished']} sends finished first, {run['replyless']} killed after the "
                "message was stored, before a reply",
                run["counts"],
            )
            for problem in run["problems"]:
                print(f"  {problem}")
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--steps", type=int, default=200, help="completed steps under SIGKILL")
    parser.add_argument(
        "--serve-kills", type=int, default=40, help="kills of serve during streamed sends"
    )
    add_db_option(parser)  # where the serve part's database is
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
        if "serve" in parts:
            total += _serve_part(args.seed, args.serve_kills, args.db, workdir)
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
