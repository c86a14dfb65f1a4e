"""The cost of time parsing (memory/retrieval/dates.py): per insert and per query.

    python benchmarks/date_parsing.py [--data ../shared/bench/locomo/locomo_dev.json]

Per insert: `annotate(text, at)`, which `ArchivalMemory.insert_many` runs on
every passage. Per query: `query_period(query, now)`, which every archival
and conversation search runs. Timed on the synthetic passages and queries of
archival_scale.py (English-like text that rarely names a date) and, with
--data, on LoCoMo's conversation turns and questions (real chat, often
dated). Each text is timed alone; mean, p50 and p95 in microseconds, the best
of three rounds (this machine is shared). For scale, the whole insert of the
same passages (`archival.insert_many`, SQLite, no embedder, annotation
included) is timed too.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from archival_scale import Corpus

from memgpt_lite import Agent, Passage
from memgpt_lite.memory.retrieval.dates import annotate
from memgpt_lite.memory.retrieval.questions import query_period

AT = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
ROUNDS = 3


def per_item(function: Callable[[str], object], items: Sequence[str]) -> list[float]:
    """Microseconds per item, the best of ROUNDS for each."""
    best = [float("inf")] * len(items)
    for _ in range(ROUNDS):
        for i, item in enumerate(items):
            started = time.perf_counter()
            function(item)
            best[i] = min(best[i], 1e6 * (time.perf_counter() - started))
    return best


def summary(name: str, micros: list[float]) -> None:
    ordered = sorted(micros)
    p95 = ordered[int(0.95 * (len(ordered) - 1))]
    print(
        f"  {name:<34}{len(micros):>6}{statistics.mean(micros):>9.1f}"
        f"{statistics.median(micros):>9.1f}{p95:>9.1f}"
    )


def insert_cost(texts: Sequence[str]) -> float:
    """Microseconds per passage of a bulk insert into a fresh SQLite agent."""
    with tempfile.TemporaryDirectory() as folder:
        agent = Agent.create("bench", "gpt-4o-mini", db=Path(folder) / "a.db")
        passages = [Passage(agent_id=agent.state.id, text=t, created_at=AT) for t in texts]
        started = time.perf_counter()
        agent.archival.insert_many(passages)
        seconds = time.perf_counter() - started
        agent.store.close()
    return 1e6 * seconds / len(texts)


def locomo(path: Path) -> tuple[list[str], list[str]]:
    turns, questions = [], []
    for sample in json.loads(path.read_text()):
        conversation = sample["conversation"]
        session = 1
        while f"session_{session}" in conversation:
            turns += [f"{t['speaker']}: {t['text']}" for t in conversation[f"session_{session}"]]
            session += 1
        questions += [qa["question"] for qa in sample["qa"]]
    return turns, questions


def report(name: str, texts: list[str], queries: list[str]) -> None:
    annotated = sum(annotate(t, AT) != t for t in texts)
    dated = sum(query_period(q, AT) is not None for q in queries)
    print(
        f"\n== {name}: {annotated} of {len(texts)} texts annotated, {dated} of "
        f"{len(queries)} queries name a period"
    )
    print(f"  {'microseconds per item':<34}{'n':>6}{'mean':>9}{'p50':>9}{'p95':>9}")
    summary("annotate (per insert)", per_item(lambda t: annotate(t, AT), texts))
    summary("query_period (per query)", per_item(lambda q: query_period(q, AT), queries))
    print(f"  whole insert_many, per passage: {insert_cost(texts):.1f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="a file in LoCoMo's format")
    parser.add_argument("--count", type=int, default=5_000, help="synthetic texts and queries")
    args = parser.parse_args()
    corpus, rng = Corpus(args.count), np.random.default_rng(7)
    report(
        "synthetic (archival_scale.py)",
        corpus.texts(rng, args.count),
        corpus.queries(rng, args.count),
    )
    if args.data:
        turns, questions = locomo(args.data)
        report("LoCoMo turns and questions", turns, questions)


if __name__ == "__main__":
    main()
