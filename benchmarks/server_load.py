"""Load on the real `memgpt-lite serve` process: many clients sending to a few
agents at once, and what the server adds to each send.

    python benchmarks/server_load.py [--clients 20] [--sends 20] [--agents 10]
        [--latency-ms 50] [--workers 1] [--db sqlite|postgres|both|URL] [--stream]
        [--sample-stacks FILE]

A fake OpenAI endpoint in its own process answers every model request after
`--latency-ms` with a `send_message` repeating the user's message. The server
is the `memgpt-lite serve` command in a subprocess on a free port (on
PostgreSQL with `--workers` processes; SQLite serves one), on a fresh
database (`--db`, see databases.py). A user with an API key creates
`--agents` agents through POST /api/agents and sends each one warm-up message
(not counted: it loads the tokenizer and the first connections).

Then `--clients` asyncio tasks (httpx, one connection each) send `--sends`
messages each, client i to agent i modulo `--agents`: with the defaults two
clients per agent, so a send often waits for the other client's send to the
same agent (the server runs one step per agent at a time, in arrival order).
Each message carries a unique token; a reply that does not repeat the
client's own token is a crossed reply, and afterwards the stored history is
checked the same way (concurrent_processes.verify_agent). A response that is
not 200, or a connection that fails, is an error.

Per database and mode (JSON, and server-sent events with `--stream`):
requests/s; client latency p50/p95; the endpoint's own time per step
(StepResult.llm_seconds: the model requests, as the agent timed them); the
latency the server adds (client latency minus that step's llm_seconds)
p50/p95; the part of it spent queueing behind the other client's send to the
same agent (from the clients' clocks: until the previous send to that agent
came back), and what remains without it; errors; crossed replies.

`--sample-stacks FILE` runs the server under a stack sampler (every thread,
every 5 ms, wall clock) and writes the most frequent stacks to FILE when it
stops: where the added time goes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from concurrent_processes import verify_agent
from databases import Databases, add_db_option, backends, is_postgres, label
from fake_endpoint import fake_endpoint

USER = "bench"
MODEL = "gpt-4o-mini"
TOKEN = re.compile(r"<(p\d+-a\d+-c\d+)>")


# The server process


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def make_key(db: str, user: str) -> str:
    """A new API key of `user` in the database at `db`."""
    from memgpt_lite.agent.keys import create_key
    from memgpt_lite.storage.open import open_storage

    with open_storage(db) as store:
        return create_key(store, user)[1]


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) of process `pid` and its living
    children so far, from /proc (nan where there is none)."""
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total = 0.0
    try:
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:  # the process ended meanwhile
                continue
            if stat.parent.name == str(pid) or fields[1] == str(pid):  # itself or a child
                total += (int(fields[11]) + int(fields[12])) / ticks
    except OSError:
        return float("nan")
    return total if Path(f"/proc/{pid}").exists() else float("nan")


@dataclass
class Server:
    url: str
    pid: int


@contextmanager
def serve_process(
    db: str,
    env: dict[str, str],
    *,
    workers: int = 1,
    sample_stacks: str | None = None,
    startup_seconds: float = 60.0,
) -> Iterator[Server]:
    """`memgpt-lite serve` on `db` in a subprocess on a free port of
    127.0.0.1, with the environment `env`; yields its base URL once /health
    answers, stops it with SIGINT at the end."""
    port = free_port()
    serve_args = ["serve", "--port", str(port), "--db", db, "--workers", str(workers)]
    if sample_stacks:
        command = [sys.executable, __file__, "--sampled-serve", sample_stacks, *serve_args]
    else:
        command = [sys.executable, "-m", "memgpt_lite", *serve_args]
    process = subprocess.Popen(command, env=env)
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_seconds
        while True:
            if process.poll() is not None:
                raise SystemExit(f"memgpt-lite serve exited with {process.returncode} (see above)")
            try:
                if httpx.get(f"{base_url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"memgpt-lite serve did not answer in {startup_seconds:g} s")
            time.sleep(0.05)
        yield Server(base_url, process.pid)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def server_env(base_url: str, api_key: str, home: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY=api_key, MEMGPT_LITE_HOME=home)
    return env


# The load


@dataclass
class Send:
    """One send as a client saw it (times in seconds on the client's clock)."""

    client: int
    agent: str
    token: str
    started: float
    ended: float
    ok: bool
    llm_seconds: float = 0.0
    first_event: float | None = None  # streaming: when the first event arrived
    crossed: bool = False
    error: str = ""


@dataclass
class Load:
    sends: list[Send] = field(default_factory=list)
    seconds: float = 0.0
    server_cpu_seconds: float = float("nan")  # the server's processes, during the load


def token_for(client: int, agent: int, send: int) -> str:
    return f"p{client}-a{agent}-c{send}"


def message_for(token: str) -> str:
    return f"Message <{token}>: please remember it."


def replies_carry(replies: Sequence[str], token: str) -> bool:
    """Whether the replies of a step answer the message carrying `token`
    (and no other's)."""
    found = [t for reply in replies for t in TOKEN.findall(reply)]
    return bool(found) and all(t == token for t in found)


def parse_sse(lines: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    """The (event type, data) of each server-sent event in `lines`."""
    events: list[tuple[str, dict[str, Any]]] = []
    kind, data = "message", []
    for line in [*lines, ""]:
        if not line:
            if data:
                events.append((kind, json.loads("\n".join(data))))
            kind, data = "message", []
        elif line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    return events


async def send_one(
    http: httpx.AsyncClient, client: int, agent: str, number: int, count: int, stream: bool
) -> Send:
    token = token_for(client, number, count)
    body = {"message": message_for(token), "stream": stream}
    url = f"/api/agents/{agent}/messages"
    started = time.perf_counter()
    sent = Send(client, agent, token, started, started, ok=False)
    try:
        if stream:
            lines = []
            async with http.stream("POST", url, json=body) as response:
                if response.status_code != 200:
                    await response.aread()
                    sent.error = f"{response.status_code} {response.text[:200]}"
                else:
                    async for line in response.aiter_lines():
                        if sent.first_event is None and line:
                            sent.first_event = time.perf_counter()
                        lines.append(line)
            events = parse_sse(lines)
            last = events[-1] if events else ("none", {})
            if not sent.error and last[0] != "step_finished":
                sent.error = f"stream ended with {last[0]}: {str(last[1])[:200]}"
            result = last[1].get("result", {})
        else:
            response = await http.post(url, json=body)
            if response.status_code != 200:
                sent.error = f"{response.status_code} {response.text[:200]}"
            result = response.json() if not sent.error else {}
    except httpx.HTTPError as exc:
        sent.error = f"{type(exc).__name__}: {exc}"
        result = {}
    sent.ended = time.perf_counter()
    if not sent.error:
        sent.ok = True
        sent.llm_seconds = float(result.get("llm_seconds", 0.0))
        sent.crossed = not replies_carry(result.get("replies", []), token)
    return sent


async def run_load(
    server: Server, key: str, agents: Sequence[str], clients: int, sends: int, stream: bool
) -> Load:
    """`clients` clients sending `sends` messages each, client i to agent i
    modulo len(agents), all at once."""
    base_url = server.url
    load = Load()
    headers = {"Authorization": f"Bearer {key}"}
    timeout = httpx.Timeout(120.0)
    start = asyncio.Event()

    async def client(number: int) -> None:
        agent = agents[number % len(agents)]
        limits = httpx.Limits(max_connections=1)
        async with httpx.AsyncClient(
            base_url=base_url, headers=headers, timeout=timeout, limits=limits
        ) as http:
            await start.wait()
            for count in range(sends):
                index = number % len(agents)
                load.sends.append(await send_one(http, number, agent, index, count, stream))

    tasks = [asyncio.create_task(client(i)) for i in range(clients)]
    await asyncio.sleep(0.1)  # the clients are waiting on `start`
    cpu = cpu_seconds(server.pid)
    began = time.perf_counter()
    start.set()
    await asyncio.gather(*tasks)
    load.seconds = time.perf_counter() - began
    load.server_cpu_seconds = cpu_seconds(server.pid) - cpu
    return load


def create_agents(base_url: str, key: str, count: int, stream: bool) -> list[str]:
    """Create `count` agents through the API and send each one warm-up message."""
    names = [f"agent-{i:03d}" for i in range(count)]
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=120) as http:
        for name in names:
            response = http.post("/api/agents", json={"name": name, "model": MODEL})
            response.raise_for_status()
        for number, name in enumerate(names):
            token = token_for(9999, number, 0)
            body = {"message": message_for(token), "stream": stream}
            http.post(f"/api/agents/{name}/messages", json=body).raise_for_status()
    return names


# Figures


def queued_seconds(sends: Sequence[Send]) -> dict[int, float]:
    """For each send (by index in `sends`), how long it waited for another
    send to the same agent: from its start until the latest end, before its
    own end, of a send to that agent that was in flight when it started. The
    server runs one step per agent at a time in arrival order, so that is when
    this send's step could begin."""
    by_agent: dict[str, list[int]] = {}
    for index, send in enumerate(sends):
        by_agent.setdefault(send.agent, []).append(index)
    waits: dict[int, float] = {}
    for indices in by_agent.values():
        for i in indices:
            mine = sends[i]
            ahead = [
                sends[j].ended
                for j in indices
                if j != i and sends[j].started <= mine.started < sends[j].ended < mine.ended
            ]
            waits[i] = max(0.0, max(ahead, default=mine.started) - mine.started)
    return waits


def quantiles(values: Sequence[float]) -> tuple[float, float]:
    """p50 and p95 (nan if there are none)."""
    if not values:
        return float("nan"), float("nan")
    if len(values) == 1:
        return values[0], values[0]
    ordered = sorted(values)
    return statistics.median(ordered), statistics.quantiles(ordered, n=20)[18]


@dataclass
class Figures:
    requests_per_second: float
    client_ms: tuple[float, float]
    endpoint_ms: tuple[float, float]
    added_ms: tuple[float, float]
    queued_ms: tuple[float, float]
    unqueued_added_ms: tuple[float, float]
    first_event_ms: tuple[float, float] | None
    server_cpu_ms: float  # per send
    sends: int
    errors: int
    crossed: int
    error_examples: list[str]


def figures(load: Load) -> Figures:
    ok = [(i, s) for i, s in enumerate(load.sends) if s.ok]
    waits = queued_seconds(load.sends)
    client = [(s.ended - s.started) * 1000 for _, s in ok]
    endpoint = [s.llm_seconds * 1000 for _, s in ok]
    added = [(s.ended - s.started - s.llm_seconds) * 1000 for _, s in ok]
    queued = [waits[i] * 1000 for i, _ in ok]
    unqueued = [a - q for a, q in zip(added, queued, strict=True)]
    firsts = [(s.first_event - s.started) * 1000 for _, s in ok if s.first_event is not None]
    errors = [s.error for s in load.sends if not s.ok]
    return Figures(
        requests_per_second=len(ok) / load.seconds if load.seconds else 0.0,
        client_ms=quantiles(client),
        endpoint_ms=quantiles(endpoint),
        added_ms=quantiles(added),
        queued_ms=quantiles(queued),
        unqueued_added_ms=quantiles(unqueued),
        first_event_ms=quantiles(firsts) if firsts else None,
        server_cpu_ms=load.server_cpu_seconds * 1000 / max(1, len(load.sends)),
        sends=len(load.sends),
        errors=len(errors),
        crossed=sum(s.crossed for _, s in ok),
        error_examples=list(dict.fromkeys(errors))[:3],
    )


def stored_crossings(db: str, load: Load) -> dict[str, int]:
    """Lost and crossed messages in what the server stored (see
    concurrent_processes.verify_agent), over the load's sends."""
    from memgpt_lite.storage.open import open_storage

    sent: dict[str, list[tuple[str, bool]]] = {}
    for send in load.sends:
        sent.setdefault(send.agent, []).append((send.token, send.ok))
    totals: Counter[str] = Counter()
    with open_storage(db) as store:
        for name, tokens in sorted(sent.items()):
            state = store.get_agent(name)
            warmups = [(t, True) for t in _warmup_tokens(store, state.id)]
            totals.update(verify_agent(store, state.id, tokens + warmups))
    return dict(totals)


def _warmup_tokens(store: Any, agent_id: str) -> list[str]:
    messages = store.messages_from(agent_id, 0)
    found = [t for m in messages if m.role == "user" for t in TOKEN.findall(m.content or "")]
    return [t for t in found if t.startswith("p9999-")]


def pair(values: tuple[float, float]) -> str:
    return f"{values[0]:.0f} / {values[1]:.0f}"


HEADER = (
    "| db | workers | mode | req/s | client ms p50 / p95 | endpoint ms p50 / p95 "
    "| added ms p50 / p95 | of which queued p50 / p95 | added without queueing p50 / p95 "
    "| first event ms p50 / p95 | server CPU ms per send | errors | crossed |"
)


def row(db: str, workers: int, mode: str, f: Figures, stored_crossed: int) -> str:
    first = pair(f.first_event_ms) if f.first_event_ms else "-"
    return (
        f"| {db} | {workers} | {mode} | {f.requests_per_second:.1f} | {pair(f.client_ms)} "
        f"| {pair(f.endpoint_ms)} | {pair(f.added_ms)} | {pair(f.queued_ms)} "
        f"| {pair(f.unqueued_added_ms)} | {first} | {f.server_cpu_ms:.1f} | {f.errors} "
        f"| {f.crossed + stored_crossed} |"
    )


# The run


@dataclass
class Measured:
    backend: str
    workers: int
    mode: str
    figures: Figures
    stored: dict[str, int]


def measure(
    backend: str,
    dbs: Databases,
    endpoint_url: str,
    endpoint_key: str,
    args: argparse.Namespace,
    home: str,
) -> list[Measured]:
    """One server on a fresh database of `backend`: JSON sends, then (with
    --stream) streamed sends on fresh agents of the same server."""
    db = dbs.new(backend, "server-load")
    workers = args.workers if is_postgres(db) else 1
    from memgpt_lite.storage.open import open_storage

    with open_storage(db):  # creates the schema before the key is made
        pass
    key = make_key(db, USER)
    env = server_env(endpoint_url, endpoint_key, home)
    measured = []
    with serve_process(db, env, workers=workers, sample_stacks=args.sample_stacks) as server:
        modes = [False, True] if args.stream else [False]
        for stream in modes:
            agents = create_agents(server.url, key, args.agents, stream)
            load = asyncio.run(run_load(server, key, agents, args.clients, args.sends, stream))
            stored = stored_crossings(db, load)
            mode = "sse" if stream else "json"
            measured.append(Measured(label(backend), workers, mode, figures(load), stored))
            delete_agents(server.url, key, agents)
    return measured


def delete_agents(base_url: str, key: str, agents: Sequence[str]) -> None:
    """Delete the agents of a finished run, so the next mode's start fresh."""
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=60) as http:
        for name in agents:
            http.delete(f"/api/agents/{name}").raise_for_status()


def report(measured: Sequence[Measured]) -> None:
    print(HEADER)
    print("|" + " --- |" * (HEADER.count("|") - 1))
    for m in measured:
        stored_bad = m.stored.get("crossed", 0)
        print(row(m.backend, m.workers, m.mode, m.figures, stored_bad))
    for m in measured:
        lost = m.stored.get("lost", 0) + m.stored.get("unexpected", 0)
        replies = m.stored.get("replies", 0)
        print(
            f"{m.backend} {m.mode}: {m.figures.sends} sends, {replies} replies stored "
            f"(with warm-ups), lost or unexpected messages: {lost}"
        )
        for example in m.figures.error_examples:
            print(f"  error: {example}")


# The stack sampler (--sampled-serve, run in the server's process)


IDLE_LEAVES = {"threading.py wait", "queue.py get", "thread.py _worker", "selectors.py select"}


def sampled_serve(out: str, serve_args: list[str], interval: float = 0.005) -> None:
    """Run `memgpt-lite serve_args` while a thread samples every thread's
    stack (wall clock: running, waiting for the GIL, a lock, a socket or the
    database alike); at exit, write to `out` the samples of busy threads by
    our innermost function, then by our innermost function and the leaf, then
    the most frequent whole stacks. A thread is idle when its leaf is a wait
    for work (a pool's queue, the event loop's select) with none of our
    frames below it."""
    ours: Counter[str] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    stacks: Counter[tuple[str, ...]] = Counter()
    idle = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal idle
        own = threading.get_ident()
        while not stop.wait(interval):
            for ident, frame in sys._current_frames().items():
                if ident == own:
                    continue
                summary = traceback.extract_stack(frame)
                where = [f"{Path(f.filename).name} {f.name}" for f in summary]
                mine = [
                    f"{Path(f.filename).parent.name}/{Path(f.filename).name}:{f.name}"
                    for f in summary
                    if "memgpt_lite" in f.filename
                ]
                if not mine and where[-1] in IDLE_LEAVES:
                    idle += 1
                    continue
                inner = mine[-1] if mine else "(not ours)"
                ours[inner] += 1
                pairs[inner, where[-1]] += 1
                stacks[tuple(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in summary)] += 1

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()

    from memgpt_lite.cli.main import main as run_cli

    try:
        run_cli(serve_args)
    finally:
        stop.set()
        sampler.join()
        busy = sum(ours.values())
        with open(out, "w") as file:
            file.write(f"every {interval * 1000:g} ms: {busy} busy thread samples, {idle} idle\n")
            file.write("\nBy our innermost function:\n")
            for name, count in ours.most_common(40):
                file.write(f"{count:7d} {count / busy:6.1%}  {name}\n")
            file.write("\nBy our innermost function and the leaf:\n")
            for (name, leaf), count in pairs.most_common(60):
                file.write(f"{count:7d} {count / busy:6.1%}  {name}  ->  {leaf}\n")
            file.write("\nWhole stacks:\n")
            for stack, count in stacks.most_common(40):
                file.write(f"\n{count} ({count / busy:.1%})\n")
                file.writelines(f"    {line}\n" for line in stack[-25:])


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--sampled-serve":
        sampled_serve(sys.argv[2], sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--sends", type=int, default=20, help="messages each client sends")
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--workers", type=int, default=1, help="server processes (PostgreSQL only)")
    parser.add_argument("--stream", action="store_true", help="also measure streamed sends")
    parser.add_argument("--sample-stacks", metavar="FILE", help="sample the server's stacks")
    add_db_option(parser)
    args = parser.parse_args()
    print(
        f"{args.clients} clients x {args.sends} sends over {args.agents} agents, endpoint "
        f"latency {args.latency_ms:g} ms, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    measured: list[Measured] = []
    with (
        fake_endpoint(latency_ms=args.latency_ms, echo=True) as endpoint,
        Databases() as dbs,
        tempfile.TemporaryDirectory(prefix="bench-home-") as home,
    ):
        for backend in backends(args.db):
            measured += measure(backend, dbs, endpoint.base_url, endpoint.api_key, args, home)
    report(measured)


if __name__ == "__main__":
    main()
