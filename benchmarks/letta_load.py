"""Server CPU per send through Letta's own client: `letta-client` (the
AsyncLetta of Letta's Python SDK) sending to `memgpt-lite serve`.

    python benchmarks/letta_load.py [--clients 8] [--sends 25] [--agents 8]
        [--latency-ms 50] [--db sqlite|postgres|both|URL] [--rounds 1]

The same server, fake endpoint and database as server_load.py, but every
call is Letta's: agents made with `agents.create`, then `--clients` clients
(one AsyncLetta each, retries off) send `--sends` messages each, client i
to agent i modulo `--agents`, first with `agents.messages.create` (JSON),
then with `agents.messages.stream` (server-sent events) on fresh agents.
Every Letta send is a run (run id, seq ids), so this is the path Letta's
apps take, not our own /api routes.

Per mode: sends/s, client latency p50/p95, the server's CPU time per send
(all its threads, from /proc, over the load only), errors, and replies that
did not repeat the client's own token (crossed). `--rounds N` repeats the
whole measurement N times on fresh servers and prints each round's row;
`--sample-stacks FILE` samples the server's threads (see server_load.py).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from databases import Databases, add_db_option, backends, label
from fake_endpoint import fake_endpoint
from letta_client import APIError, AsyncLetta
from server_load import (
    USER,
    cpu_seconds,
    make_key,
    message_for,
    quantiles,
    replies_carry,
    serve_process,
    server_env,
    token_for,
)

MODEL = "openai/gpt-4o-mini"
_ROUNDS = itertools.count()


@dataclass
class Load:
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    crossed: int = 0


def letta_client(url: str, key: str) -> AsyncLetta:
    return AsyncLetta(base_url=url, api_key=key, max_retries=0, timeout=120)


async def create_agents(url: str, key: str, count: int, mode: str) -> list[str]:
    """`count` agents, each sent one warm-up message (not counted)."""
    client = letta_client(url, key)
    ids = []
    for number in range(count):
        blocks = [{"label": "human", "value": "A benchmark."}]
        agent = await client.agents.create(
            name=f"Bench {mode} agent {number}", model=MODEL, memory_blocks=blocks
        )
        ids.append(agent.id)
        warm = [{"role": "user", "content": message_for(token_for(9999, number, 0))}]
        await client.agents.messages.create(agent.id, messages=warm)
    await client.close()
    return ids


async def send(client: AsyncLetta, agent_id: str, token: str, stream: bool) -> list[str]:
    """One send; the assistant's words it got back."""
    messages = [{"role": "user", "content": message_for(token)}]
    if not stream:
        answer = await client.agents.messages.create(agent_id, messages=messages)
        items = answer.messages
    else:
        events = await client.agents.messages.stream(agent_id, messages=messages)
        items = [item async for item in events]
    return [m.content for m in items if getattr(m, "message_type", "") == "assistant_message"]


async def run_load(
    url: str, key: str, agents: list[str], clients: int, sends: int, stream: bool, pid: int
) -> Load:
    load = Load()
    start = asyncio.Event()

    async def one_client(number: int) -> None:
        client = letta_client(url, key)
        index = number % len(agents)
        await start.wait()
        for count in range(sends):
            token = token_for(number, index, count)
            began = time.perf_counter()
            try:
                replies = await send(client, agents[index], token, stream)
            except APIError as exc:  # a status, a refused connection or a timeout: counted
                load.errors.append(f"{type(exc).__name__}: {str(exc)[:160]}")
                continue
            load.latencies.append((time.perf_counter() - began) * 1000)
            load.crossed += not replies_carry(replies, token)
        await client.close()

    tasks = [asyncio.create_task(one_client(i)) for i in range(clients)]
    await asyncio.sleep(0.2)
    cpu, began = cpu_seconds(pid), time.perf_counter()
    start.set()
    await asyncio.gather(*tasks)
    load.seconds = time.perf_counter() - began
    load.cpu_seconds = cpu_seconds(pid) - cpu
    return load


def measure(
    backend: str, dbs: Databases, endpoint: Any, args: argparse.Namespace, home: str
) -> list[str]:
    db = dbs.new(backend, f"letta-load-{next(_ROUNDS)}")
    from memgpt_lite.storage.open import open_storage

    with open_storage(db):  # the schema, before the key
        pass
    key = make_key(db, USER)
    rows = []
    env = server_env(endpoint.base_url, endpoint.api_key, home)
    with serve_process(db, env, sample_stacks=args.sample_stacks) as server:
        for stream in (False, True):
            mode = "sse" if stream else "json"
            agents = asyncio.run(create_agents(server.url, key, args.agents, mode))
            load = asyncio.run(
                run_load(server.url, key, agents, args.clients, args.sends, stream, server.pid)
            )
            rows.append(row(label(backend), mode, load))
    return rows


def row(db: str, mode: str, load: Load) -> str:
    total = len(load.latencies) + len(load.errors)
    p50, p95 = quantiles(load.latencies)
    per_second = len(load.latencies) / load.seconds if load.seconds else 0.0
    cpu = load.cpu_seconds * 1000 / max(1, total)
    line = (
        f"| {db} | {mode} | {per_second:.1f} | {p50:.0f} / {p95:.0f} | {cpu:.1f} "
        f"| {len(load.errors)} | {load.crossed} |"
    )
    if load.errors:
        line += "\n    first error: " + load.errors[0]
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--sends", type=int, default=25, help="messages each client sends")
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--sample-stacks", metavar="FILE", help="sample the server's stacks")
    add_db_option(parser)
    args = parser.parse_args()
    print(
        f"letta-client: {args.clients} clients x {args.sends} sends over {args.agents} agents, "
        f"endpoint latency {args.latency_ms:g} ms, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    columns = ["db", "mode", "sends/s", "client ms p50 / p95", "server CPU ms per send"]
    columns += ["errors", "crossed"]
    print("| " + " | ".join(columns) + " |")
    print("|" + " --- |" * len(columns))
    with (
        fake_endpoint(latency_ms=args.latency_ms, echo=True) as endpoint,
        Databases() as dbs,
        tempfile.TemporaryDirectory(prefix="bench-home-") as home,
    ):
        for _ in range(args.rounds):
            for backend in backends(args.db):
                for line in measure(backend, dbs, endpoint, args, home):
                    print(line, flush=True)


if __name__ == "__main__":
    main()
