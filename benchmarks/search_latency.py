"""Search latency on a kept database of archival_scale.py's synthetic passages.

    python benchmarks/search_latency.py --db /tmp/bench-1m.db --size 1000000
    python benchmarks/search_latency.py --db /tmp/bench-1m.db --size 1000000 --rounds 3

Builds the database the first time (agent "bench", the same corpus, seed and
dates as `archival_scale.py --sizes N`; about 10 minutes at 1M), then times
`archival.search(query)` (limit 5, words alone) for the same 200 queries as
archival_scale.py, plain and naming a month (`--dated` there), after a
warm-up, and prints p50 / p95 per round. Keeping the database makes a
before/after comparison a matter of minutes: run two versions of the code
against copies of one file, in alternating rounds (the machine's speed
drifts between rounds, so compare within one). A version from before a
schema change cannot open a file the newer one migrated: copy it first.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from archival_scale import (
    SEED,
    WARMUP_QUERIES,
    Corpus,
    dated,
    insert_all,
    percentile,
    timed_searches,
)

from memgpt_lite import Agent


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True, help="an SQLite file, kept")
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    corpus = Corpus(args.size)
    agent = open_or_build(args.db, args.size, corpus)
    query_rng = np.random.default_rng(SEED + 1)  # as archival_scale.py draws them
    warmup = corpus.queries(query_rng, WARMUP_QUERIES)
    queries = corpus.queries(query_rng, args.queries)
    print(f"{args.size:,} passages, {args.queries} queries, ms p50 / p95")
    for round_number in range(1, args.rounds + 1):
        for mode, (warm, timed) in {
            "plain": (warmup, queries),
            "dated": (dated(warmup), dated(queries)),
        }.items():
            timed_searches(agent, warm, None)
            ms = [run["ms"] for run in timed_searches(agent, timed, None)]
            print(
                f"round {round_number} {mode:>5}: "
                f"{percentile(ms, 50):6.1f} / {percentile(ms, 95):6.1f}",
                flush=True,
            )
    agent.store.close()


if __name__ == "__main__":
    main()
