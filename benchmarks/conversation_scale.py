"""conversation_search over a very long history: latency at 100k and 1M messages.

    python benchmarks/conversation_scale.py [--sizes 100000,1000000] [--queries 200]

The messages are `archival_scale.py`'s synthetic texts, alternately from the
user and the assistant, all in one agent, and so are the queries. Measured,
per size, in a fresh process and database:

- insert: `Store.add_messages` in batches of 5,000 (no embedder);
- search: `Store.search_messages(query, 5)`, what `conversation_search` runs
  without an embedder, p50 and p95 after warm-up searches;
- exhaustive: the same ranking with no budget (every match scored; see
  `ranking.RANK_BUDGET`), on a subset of the queries, for comparison.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from archival_scale import SEED, WARMUP_QUERIES, Corpus, peak_rss_mb, percentile

BATCH = 5_000
EXHAUSTIVE_QUERIES = 40  # every match scored: slow at 1M, so a subset


def worker(size: int, query_count: int) -> dict:
    from memgpt_lite import Agent
    from memgpt_lite.models import Message

    corpus = Corpus(size)
    rng, query_rng = np.random.default_rng(SEED), np.random.default_rng(SEED + 1)
    warmup = corpus.queries(query_rng, WARMUP_QUERIES)
    queries = corpus.queries(query_rng, query_count)
    with tempfile.TemporaryDirectory() as tmp:
        agent = Agent.create("bench", "gpt-4o-mini", db=Path(tmp) / "bench.db")
        store, agent_id = agent.store, agent.state.id
        insert_seconds = 0.0
        for start in range(0, size, BATCH):
            texts = corpus.texts(rng, min(BATCH, size - start))
            batch = [
                Message(agent_id=agent_id, role="user" if i % 2 else "assistant", content=text)
                for i, text in enumerate(texts)
            ]
            started = time.perf_counter()
            store.add_messages(batch)
            insert_seconds += time.perf_counter() - started
        for query in warmup:
            store.search_messages(agent_id, query, 5)

        def timed(search) -> list[float]:
            times = []
            for query in queries:
                started = time.perf_counter()
                search(query)
                times.append((time.perf_counter() - started) * 1000)
            return times

        budgeted = timed(lambda q: store.search_messages(agent_id, q, 5))
        queries = queries[:EXHAUSTIVE_QUERIES]
        exhaustive = timed(lambda q: store.rank_messages(agent_id, q, 5, budget=10**12))
        store.close()
    return {
        "size": size,
        "insert_rate": size / insert_seconds,
        "budgeted": budgeted,
        "exhaustive": exhaustive,
        "peak_rss_mb": peak_rss_mb(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.queries)))
        return
    print(
        f"{'messages':>9} {'insert/s':>9} {'p50 ms':>7} {'p95 ms':>7} "
        f"{'exhaustive p50':>15} {'p95':>7} {'RSS MB':>7}"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        command = [sys.executable, __file__, "--worker", str(size), "--queries", str(args.queries)]
        out = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        budgeted, exhaustive = row["budgeted"], row["exhaustive"]
        print(
            f"{size:>9,} {row['insert_rate']:>9,.0f} {percentile(budgeted, 50):>7.1f} "
            f"{percentile(budgeted, 95):>7.1f} {percentile(exhaustive, 50):>15.1f} "
            f"{percentile(exhaustive, 95):>7.1f} {row['peak_rss_mb']:>7.0f}",
            flush=True,
        )
    print("search_messages(query, 5), no embedder; exhaustive: every match scored")


if __name__ == "__main__":
    main()
