"""Many processes stepping many agents at once on one database, then a check
that nothing was lost or crossed.

    python benchmarks/concurrent_processes.py [--processes 8] [--agents 4] [--share 2]
        [--seconds 60] [--latency-ms 20] [--db sqlite|postgres|both|URL]

`--processes` worker processes each step `--agents` agents at once (one
`asyncio` loop, `await agent.astep(...)` per agent, each agent loaded with its
own `Agent.load(name, db=...)`), in a loop, for `--seconds`, all on one
database (`--db`, see databases.py), against a fake OpenAI endpoint in its own
process that answers after `--latency-ms` with `send_message` repeating the
user's message. Each agent is stepped by `--share` processes at once (the
default 2: 8 x 4 slots over 16 agents), so two processes contend for the
same agent's step lock all along.

Every user message carries a unique token (process, agent, counter). The
drivers record what they sent and which steps failed; afterwards the parent
reads every agent's messages from the database and counts:

- lost: a message whose step succeeded but which is not stored exactly once
  (missing or duplicated), or stored user messages no driver sent;
- crossed: a stored reply (the `send_message` of a step) that does not repeat
  the user message of its own step, plus replies a driver received that do
  not repeat what it sent;
- lock errors: BusyError, ConflictError, or any error mentioning a lock or a
  timeout, raised to a driver by a step; other errors are shown apart.

Prints steps per second, in total and per process, step latency, how often a
step waited for the other process's step of the same agent, and the counters
(0 expected for all three).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

from databases import Databases, add_db_option, backends, is_postgres, label
from fake_endpoint import fake_endpoint

TOKEN = re.compile(r"<(p\d+-a\d+-c\d+)>")


def agent_names(process: int, agents: int, total: int) -> list[str]:
    """The agents process `process` steps: slot j is agent (process * agents + j)
    modulo `total`, so with 8 processes x 4 slots over 16 agents, processes p
    and p + 4 step the same four."""
    return [f"agent-{(process * agents + j) % total:03d}" for j in range(agents)]


@dataclass
class Driven:
    """What one worker process did."""

    process: int
    steps: int = 0
    seconds: float = 0.0
    step_ms: list[float] = field(default_factory=list)
    sent: dict[str, list[tuple[str, bool]]] = field(default_factory=dict)  # by agent
    errors: Counter[str] = field(default_factory=Counter)
    first_error: dict[str, str] = field(default_factory=dict)
    crossed: int = 0  # replies received that do not repeat what was sent
    waits: int = 0


def driver_errors(db: str) -> tuple[type[BaseException], ...]:
    """What a step may raise to its driver: our errors, and the database
    driver's own should one leak through unwrapped."""
    from memgpt_lite.errors import MemGPTError

    if is_postgres(db):
        import psycopg

        return (MemGPTError, psycopg.Error)
    import sqlite3

    return (MemGPTError, sqlite3.Error)


async def drive(agent, driven: Driven, deadline: float, caught: tuple) -> None:
    """Step `agent` until `deadline`, recording each message and its outcome."""
    sent = driven.sent.setdefault(agent.state.name, [])
    number = int(agent.state.name.rsplit("-", 1)[1])
    counter = 0
    while time.perf_counter() < deadline:
        token = f"p{driven.process}-a{number}-c{counter}"
        counter += 1
        text = f"Message <{token}>: please remember it."
        started = time.perf_counter()
        try:
            result = await agent.astep(text)
        except caught as exc:
            name = type(exc).__name__
            driven.errors[name] += 1
            driven.first_error.setdefault(name, str(exc)[:300])
            sent.append((token, False))
            continue
        driven.step_ms.append((time.perf_counter() - started) * 1000)
        driven.steps += 1
        sent.append((token, True))
        if not any(f"<{token}>" in reply for reply in result.replies):
            driven.crossed += 1


def worker(process: int, args: argparse.Namespace, base_url: str, api_key: str) -> dict:
    from memgpt_lite import Agent

    total = args.processes * args.agents // args.share
    driven = Driven(process)
    agents = []
    for name in agent_names(process, args.agents, total):
        agent = Agent.load(name, db=args.worker_db, base_url=base_url, api_key=api_key)

        def waited(_text: str) -> None:
            driven.waits += 1

        agent.on_wait = waited
        agent.context_overview()  # loads the tokenizer, outside the timing; writes nothing
        agents.append(agent)
    print("ready", flush=True)
    sys.stdin.readline()  # "go", once every worker is ready
    started = time.perf_counter()
    deadline = started + args.seconds
    caught = driver_errors(args.worker_db)

    async def run() -> None:
        await asyncio.gather(*(drive(agent, driven, deadline, caught) for agent in agents))

    asyncio.run(run())
    driven.seconds = time.perf_counter() - started
    for agent in agents:
        agent.store.close()
    return driven.__dict__ | {"errors": dict(driven.errors)}


def create_agents(db: str, total: int, base_url: str) -> None:
    from memgpt_lite import Agent

    for i in range(total):
        agent = Agent.create(f"agent-{i:03d}", "gpt-4o-mini", db=db, base_url=base_url)
        agent.store.close()


def run_workers(args: argparse.Namespace, db: str, base_url: str, api_key: str) -> list[dict]:
    """Start the workers, let them go at once when all are ready, and collect
    what each did."""
    workers = []
    for process in range(args.processes):
        command = [sys.executable, __file__, "--worker", str(process), "--worker-db", db]
        command += ["--endpoint", base_url, api_key, "--seconds", str(args.seconds)]
        command += ["--processes", str(args.processes), "--agents", str(args.agents)]
        command += ["--share", str(args.share)]
        workers.append(
            subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        )
    for process in workers:
        if process.stdout.readline().strip() != "ready":
            raise SystemExit("a worker failed before it was ready (see its error above)")
    for process in workers:
        process.stdin.write("go\n")
        process.stdin.flush()
    rows = []
    for process in workers:
        out, _ = process.communicate()
        if process.returncode:
            raise SystemExit(f"a worker failed (exit {process.returncode}; see above)")
        rows.append(json.loads(out.strip().splitlines()[-1]))
    return rows


def tokens_of(text: str | None) -> list[str]:
    return TOKEN.findall(text or "")


def verify_agent(store, agent_id: str, sent: list[tuple[str, bool]]) -> dict:
    """Count, for one agent, lost and unexpected user messages and crossed
    replies, from what is stored."""
    messages = store.messages_from(agent_id, 0)
    stored = Counter(t for m in messages if m.role == "user" for t in tokens_of(m.content))
    succeeded = {token for token, ok in sent if ok}
    failed = {token for token, ok in sent if not ok}
    lost = sum(1 for token in succeeded if stored[token] != 1)
    unexpected = sum(n for token, n in stored.items() if token not in succeeded | failed)
    asked: dict[str | None, str] = {}  # the token of each step's user message
    crossed = replies = 0
    for message in messages:
        if message.role == "user":
            found = tokens_of(message.content)
            asked[message.step_id] = found[0] if found else ""
            continue
        for call in message.tool_calls if message.role == "assistant" else []:
            reply = call.sent_message()
            if reply is None:
                continue
            replies += 1
            if tokens_of(reply) != [asked.get(message.step_id)]:
                crossed += 1
    failed_stored = sum(1 for token in failed if stored[token])
    return {
        "lost": lost,
        "unexpected": unexpected,
        "crossed": crossed,
        "replies": replies,
        "failed_stored": failed_stored,
    }


def verify(db: str, rows: list[dict]) -> dict:
    from memgpt_lite.storage.open import open_storage

    sent: dict[str, list] = {}
    for row in rows:
        for name, tokens in row["sent"].items():
            sent.setdefault(name, []).extend(tuple(t) for t in tokens)
    totals: Counter[str] = Counter()
    with open_storage(db) as store:
        for name, tokens in sorted(sent.items()):
            agent_id = store.get_agent(name).id
            totals.update(verify_agent(store, agent_id, tokens))
    return dict(totals)


def is_lock_error(name: str, text: str) -> bool:
    return name in ("BusyError", "ConflictError") or bool(
        re.search(r"lock|timeout|timed out", text, re.IGNORECASE)
    )


def summarise(backend: str, args: argparse.Namespace, rows: list[dict], checked: dict) -> None:
    seconds = max(row["seconds"] for row in rows)
    steps = sum(row["steps"] for row in rows)
    step_ms = [ms for row in rows for ms in row["step_ms"]]
    errors: Counter[str] = Counter()
    first: dict[str, str] = {}
    for row in rows:
        errors.update(row["errors"])
        first.update(row["first_error"])
    lock_errors = sum(n for name, n in errors.items() if is_lock_error(name, first[name]))
    per_process = " ".join(f"{row['steps'] / row['seconds']:.1f}" for row in rows)
    p95 = statistics.quantiles(step_ms, n=20)[18] if len(step_ms) > 1 else float("nan")
    print(f"\n== {label(backend)}: {steps:,} steps in {seconds:.1f} s")
    print(f"  steps/s total:       {steps / seconds:.1f}")
    print(f"  steps/s per process: {per_process}")
    print(f"  step ms p50 / p95:   {statistics.median(step_ms):.1f} / {p95:.1f}")
    waits = sum(row["waits"] for row in rows)
    print(f"  waits for the other process's step of the same agent: {waits}")
    print(f"  replies stored: {checked.get('replies', 0):,}")
    print(f"  lost messages:   {checked.get('lost', 0) + checked.get('unexpected', 0)}")
    print(f"  crossed replies: {checked.get('crossed', 0) + sum(r['crossed'] for r in rows)}")
    print(f"  lock errors:     {lock_errors}")
    other = {name: n for name, n in errors.items() if not is_lock_error(name, first[name])}
    if other or lock_errors:
        print(f"  failed steps by error: {dict(errors)}; stored anyway: {checked['failed_stored']}")
        for name, text in first.items():
            print(f"    first {name}: {text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--agents", type=int, default=4, help="agents per process")
    parser.add_argument("--share", type=int, default=2, help="processes stepping each agent")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    add_db_option(parser)
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--worker-db", help=argparse.SUPPRESS)
    parser.add_argument("--endpoint", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        print(json.dumps(worker(args.worker, args, *args.endpoint)))
        return
    if (args.processes * args.agents) % args.share or args.share > args.processes:
        parser.error("--share must divide processes x agents and be at most --processes")
    total = args.processes * args.agents // args.share
    print(
        f"{args.processes} processes x {args.agents} agents ({total} agents, each stepped by "
        f"{args.share} processes), {args.seconds:g} s, endpoint latency {args.latency_ms:g} ms"
    )
    with fake_endpoint(latency_ms=args.latency_ms, echo=True) as endpoint, Databases() as dbs:
        for backend in backends(args.db):
            db = dbs.new(backend, "concurrent")
            create_agents(db, total, endpoint.base_url)
            rows = run_workers(args, db, endpoint.base_url, endpoint.api_key)
            summarise(backend, args, rows, verify(db, rows))


if __name__ == "__main__":
    main()
