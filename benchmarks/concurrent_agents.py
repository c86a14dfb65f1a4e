"""Many agents stepping at once in one event loop, against one after another.

    python benchmarks/concurrent_agents.py [--agents 50] [--steps 10] [--latency-ms 50]

Every agent lives in the same SQLite file and talks to a fake endpoint (in
its own process) that takes `--latency-ms` to answer each request. First each
agent takes its steps with `agent.step()`, one agent after another; then all
of them take theirs with `await agent.astep()` in one event loop
(`asyncio.gather`), each agent's steps in order. Prints both wall times and
their ratio; the ideal ratio is about the number of agents, less the
framework's own time per step, which runs one step at a time.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from fake_endpoint import fake_endpoint

from memgpt_lite import Agent


def make_agents(db: Path, count: int, base_url: str, api_key: str) -> list[Agent]:
    return [
        Agent.create(f"agent-{i}", "gpt-4o-mini", db=db, base_url=base_url, api_key=api_key)
        for i in range(count)
    ]


def one_after_another(agents: list[Agent], steps: int) -> float:
    started = time.perf_counter()
    for agent in agents:
        for i in range(steps):
            agent.step(f"Message {i}: tell me something.")
    return time.perf_counter() - started


async def all_at_once(agents: list[Agent], steps: int) -> float:
    async def chat(agent: Agent) -> None:
        for i in range(steps):
            await agent.astep(f"Message {i}: tell me something.")

    started = time.perf_counter()
    await asyncio.gather(*(chat(agent) for agent in agents))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    args = parser.parse_args()
    with (
        fake_endpoint(latency_ms=args.latency_ms) as endpoint,
        tempfile.TemporaryDirectory() as tmp,
    ):
        sequential = make_agents(
            Path(tmp) / "a.db", args.agents, endpoint.base_url, endpoint.api_key
        )
        sequential_s = one_after_another(sequential, args.steps)
        concurrent = make_agents(
            Path(tmp) / "b.db", args.agents, endpoint.base_url, endpoint.api_key
        )
        concurrent_s = asyncio.run(all_at_once(concurrent, args.steps))
    steps = args.agents * args.steps
    print(f"{args.agents} agents x {args.steps} steps, endpoint latency {args.latency_ms:g} ms")
    print(
        f"  one after another: {sequential_s:7.2f} s  ({1000 * sequential_s / steps:.1f} ms/step)"
    )
    print(
        f"  all at once:       {concurrent_s:7.2f} s  ({1000 * concurrent_s / steps:.1f} ms/step)"
    )
    print(f"  ratio:             {sequential_s / concurrent_s:7.1f}x")


if __name__ == "__main__":
    main()
