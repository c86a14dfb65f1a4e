"""Search latency on a kept database of archival_scale.py's synthetic passages.

    python benchmarks/search_latency.py --db /tmp/bench-1m.db --size 1000000
    python benchmarks/search_latency.py --db /tmp/bench-1m.db --size 1000000 \\
        --against ../old-checkout --against-db /tmp/bench-1m-old.db

Builds the database the first time (agent "bench", the same corpus, seed and
dates as `archival_scale.py --sizes N`; about 10 minutes at 1M), then times
`archival.search(query)` (limit 5, words alone) for the same queries as
archival_scale.py, plain, naming a month (`--dated` there) and asked as
"when did ...?", after a warm-up, and prints p50 / p95.

With `--against`, the same searches also run on another checkout of
memgpt_lite (its folder, put first on PYTHONPATH) and its own database file,
each in its own process, taking turns query by query (one waits while the
other searches), so that the machine's speed, which drifts over minutes,
weighs on both alike; it prints both and their ratios. A version from before
a schema change cannot open a file the newer one migrated: give it a copy
made before.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from archival_scale import SEED, WARMUP_QUERIES, Corpus, dated, insert_all, percentile

from memgpt_lite import Agent

MODES = ("plain", "dated", "when")


def asking_when(queries: list[str]) -> list[str]:
    """The queries as questions asking when ("when did ... ?"): search then
    also reads each candidate for a time it states (ranking.py TIME_BOOST)."""
    return [f"when did {q}?" for q in queries]


def open_or_build(db: Path, size: int, corpus: Corpus) -> Agent:
    if db.exists():
        agent = Agent.load("bench", db=str(db))
        stored = agent.store.list_passages(agent.state.id, 0)[1]
        if stored != size:
            sys.exit(f"{db} holds {stored:,} passages, not {size:,}: use another --db")
        return agent
    agent = Agent.create("bench", "gpt-4o-mini", db=str(db))
    insert_all(agent, corpus, size)
    return agent


def query_sets(corpus: Corpus, count: int) -> dict[str, tuple[list[str], list[str]]]:
    """Per mode, the warm-up queries and the timed ones, as archival_scale.py
    draws them."""
    rng = np.random.default_rng(SEED + 1)
    warmup, queries = corpus.queries(rng, WARMUP_QUERIES), corpus.queries(rng, count)
    return {
        "plain": (warmup, queries),
        "dated": (dated(warmup), dated(queries)),
        "when": (asking_when(warmup), asking_when(queries)),
    }


def serve(args: argparse.Namespace) -> None:
    """A worker of `--against`: "MODE I" on stdin searches the I-th query of
    MODE (-1: warm up) and answers its milliseconds."""
    import time

    corpus = Corpus(args.size)
    agent = open_or_build(args.db, args.size, corpus)
    sets = query_sets(corpus, args.queries)
    print("ready", flush=True)
    for line in sys.stdin:
        mode, index = line.split()
        warmup, queries = sets[mode]
        if int(index) < 0:
            for query in warmup:
                agent.archival.search(query)
            print(0.0, flush=True)
            continue
        started = time.perf_counter()
        agent.archival.search(queries[int(index)])
        print((time.perf_counter() - started) * 1000, flush=True)


def worker(db: Path, args: argparse.Namespace, code: Path) -> subprocess.Popen:
    command = [sys.executable, __file__, "--serve", "--db", str(db), "--size", str(args.size)]
    command += ["--queries", str(args.queries)]
    env = os.environ | {"PYTHONPATH": str(code.resolve())}
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    if process.stdout is None or process.stdout.readline().strip() != "ready":
        sys.exit(f"the worker for {db} did not start")
    return process


def ask(process: subprocess.Popen, mode: str, index: int) -> float:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(f"{mode} {index}\n")
    process.stdin.flush()
    return float(process.stdout.readline())


def compare(args: argparse.Namespace) -> None:
    here = Path(__file__).resolve().parents[1]
    sides = {
        "this": worker(args.db, args, here),
        "other": worker(args.against_db, args, args.against),
    }
    print(f"{args.size:,} passages, {args.queries} queries, taking turns; ms p50 / p95")
    for mode in MODES:
        times: dict[str, list[float]] = {name: [] for name in sides}
        for process in sides.values():
            ask(process, mode, -1)
        for index in range(args.queries):
            order = list(sides) if index % 2 == 0 else list(sides)[::-1]
            for name in order:
                times[name].append(ask(sides[name], mode, index))
        this, other = times["this"], times["other"]
        print(
            f"{mode:>5}: this {percentile(this, 50):6.1f} / {percentile(this, 95):6.1f}   "
            f"other {percentile(other, 50):6.1f} / {percentile(other, 95):6.1f}   "
            f"this/other {percentile(this, 50) / percentile(other, 50):.2f} / "
            f"{percentile(this, 95) / percentile(other, 95):.2f}",
            flush=True,
        )
    for process in sides.values():
        process.terminate()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True, help="an SQLite file, kept")
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--against", type=Path, help="another checkout's folder")
    parser.add_argument("--against-db", type=Path, help="its own copy of the database")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args)
    elif args.against:
        if args.against_db is None:
            parser.error("--against needs --against-db: a copy of the database for it")
        compare(args)
    else:
        compare_alone(args)


def compare_alone(args: argparse.Namespace) -> None:
    """This checkout alone, in this process."""
    import time

    corpus = Corpus(args.size)
    agent = open_or_build(args.db, args.size, corpus)
    print(f"{args.size:,} passages, {args.queries} queries, ms p50 / p95")
    for mode, (warmup, queries) in query_sets(corpus, args.queries).items():
        for query in warmup:
            agent.archival.search(query)
        ms = []
        for query in queries:
            started = time.perf_counter()
            agent.archival.search(query)
            ms.append((time.perf_counter() - started) * 1000)
        print(f"{mode:>5}: {percentile(ms, 50):6.1f} / {percentile(ms, 95):6.1f}", flush=True)
    agent.store.close()


if __name__ == "__main__":
    main()
