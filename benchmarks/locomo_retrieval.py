"""Retrieval recall on LoCoMo: does archival search find the turns that answer
each question?

    python benchmarks/locomo_retrieval.py --data ../shared/bench/locomo/locomo_dev.json
    python benchmarks/locomo_retrieval.py --data PATH --embedders none,local
    python benchmarks/locomo_retrieval.py --data PATH --db both
    python benchmarks/locomo_retrieval.py --data PATH --shares        # each weight's share
    python benchmarks/locomo_retrieval.py --data PATH --set ranking.SUBJECT_BOOST=1.3
    python benchmarks/locomo_retrieval.py --data PATH --embedders local --speed

For each conversation, every turn goes into a fresh agent's archival memory as
one passage (speaker, text, the caption of a shared image) dated with its
session's date, with the turn before it as the passage's context
(searched, at lower weight, but not part of the passage). Every question
with evidence is a query. The metric is LoCoMo's recall accuracy: per
question |evidence in top k| / |evidence|,
averaged over questions, per category and overall, at k = 5 and 10.

Figures are given for the whole file and for its two halves by conversation
(`halves`: the conversations sorted by id, the first half, rounded up, and
the rest). A ranking change is judged on both: one that helps a half and
hurts the other fits those questions rather than language.

`--shares` measures each ranking weight's share (`SHARES`): recall as
shipped minus recall with that weight set to its neutral value, per half.
`--set NAME=VALUE` runs with a module constant changed (benchmarks/overrides.py).
Embeddings are kept in benchmarks/.cache/ (benchmarks/embedding_cache.py),
so a run after the first embeds nothing; `--speed` times the embedder itself.

Nothing here is tuned to the questions: the agent's search runs as shipped.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from databases import Databases, add_db_option, backends, label
from embedding_cache import DEFAULT_DIR, CachedEmbedder
from locomo_shares import report_shares
from overrides import overridden, parse_setting

from memgpt_lite import Agent, ConfigError, Passage
from memgpt_lite.agent.setup import embedder_for
from memgpt_lite.embeddings.embedder import Embedder
from memgpt_lite.settings.resolve import resolve_settings

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
KS = (5, 10)


def session_date(text: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023" as a UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turns_of(conversation: dict) -> list[tuple[str, str, datetime]]:
    """(dia_id, passage text, session date) for every turn, in order."""
    turns = []
    session = 1
    while f"session_{session}" in conversation:
        when = session_date(conversation[f"session_{session}_date_time"])
        for turn in conversation[f"session_{session}"]:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" (shares an image: {turn['blip_caption']})"
            turns.append((turn["dia_id"], text, when))
        session += 1
    return turns


def evidence_ids(raw: list[str], known: set[str]) -> list[str]:
    """Evidence ids that are turns of the conversation (a few entries are
    malformed: "D8:6; D9:17", "D:11:26", or ids that do not exist)."""
    ids = [part for entry in raw for part in re.split(r"[;\s]+", entry) if part]
    return list(dict.fromkeys(i for i in ids if i in known))


def halves(data: list[dict]) -> tuple[list[str], list[str]]:
    """The conversations' ids in two halves: sorted, the first half (rounded
    up) and the rest. Fixed by the ids alone, so every run splits alike."""
    ids = sorted(sample["sample_id"] for sample in data)
    middle = (len(ids) + 1) // 2
    return ids[:middle], ids[middle:]


def load_agent(db: str, turns, embedder: Embedder | None) -> tuple[Agent, dict[str, set[str]]]:
    agent = Agent.create("locomo", "gpt-4o-mini", db=db)
    if embedder is not None:
        agent.set_embedder(embedder)
    # A turn's context is the turn before it: "Yes, it was great!" is about
    # whatever the other speaker just asked.
    passages = [
        Passage(
            agent_id=agent.state.id,
            text=text,
            created_at=when,
            context=turns[i - 1][1] if i else "",
        )
        for i, (_, text, when) in enumerate(turns)
    ]
    report = agent.archival.insert_many(passages)
    # Stored passages keep their ids (their text may gain resolved dates); a
    # repeated turn maps to the passage already held, reported in order.
    stored = {p.id for p in report.stored}
    held = iter(report.duplicates)
    dia_of: dict[str, set[str]] = defaultdict(set)
    for (dia_id, _, _), passage in zip(turns, passages, strict=True):
        dia_of[passage.id if passage.id in stored else next(held)].add(dia_id)
    return agent, dia_of


@dataclass(frozen=True)
class Answered:
    """One question's recall at each k."""

    conversation: str
    category: int
    recall: dict[int, float]


@dataclass
class Run:
    answered: list[Answered] = field(default_factory=list)
    search_seconds: float = 0.0
    load_seconds: float = 0.0

    def recall(
        self, k: int, conversations: Sequence[str] | None = None, category: int | None = None
    ) -> float:
        """Mean recall@k in percent over the questions of `conversations`
        (None: all) and `category` (None: all)."""
        values = [
            a.recall[k]
            for a in self.answered
            if (conversations is None or a.conversation in conversations)
            and (category is None or a.category == category)
        ]
        return 100 * sum(values) / len(values) if values else 0.0

    def count(self, conversations: Sequence[str] | None = None, category: int | None = None) -> int:
        return sum(
            1
            for a in self.answered
            if (conversations is None or a.conversation in conversations)
            and (category is None or a.category == category)
        )


def evaluate(
    data: list[dict], embedder: Embedder | None, databases: Databases, backend: str = "sqlite"
) -> Run:
    """Recall of every question, each conversation in a fresh database of
    `backend` (a --db value, see databases.py)."""
    run = Run()
    for n, sample in enumerate(data):
        turns = turns_of(sample["conversation"])
        db = databases.new(backend, f"locomo-{n}")
        started = time.perf_counter()
        agent, dia_of = load_agent(db, turns, embedder)
        run.load_seconds += time.perf_counter() - started
        known = {t[0] for t in turns}
        for qa in sample["qa"]:
            evidence = evidence_ids(qa.get("evidence", []), known)
            if not evidence:
                continue
            started = time.perf_counter()
            found, _ = agent.archival.search(qa["question"], limit=max(KS))
            run.search_seconds += time.perf_counter() - started
            recall = {}
            for k in KS:
                top = set().union(*(dia_of[p.id] for p in found[:k])) if found else set()
                recall[k] = len(set(evidence) & top) / len(evidence)
            run.answered.append(Answered(sample["sample_id"], qa["category"], recall))
        agent.store.close()
        databases.discard(db)
    return run


def _cells(run: Run, parts: Sequence[Sequence[str] | None], category: int | None) -> str:
    return "".join(
        "".join(f"{run.recall(k, part, category):>6.1f}" for k in KS) + "  " for part in parts
    )


def report(name: str, run: Run, split: tuple[list[str], list[str]]) -> None:
    """The table: per category, recall@5 and @10 over all conversations and
    over each half (with each half's question counts)."""
    parts: list[Sequence[str] | None] = [None, *split]
    questions = run.count()
    print(
        f"\n== {name}: {questions} questions; loading {run.load_seconds:.1f} s, "
        f"search {1000 * run.search_seconds / max(questions, 1):.1f} ms/query"
    )
    print(f"   half A: {', '.join(split[0])}; half B: {', '.join(split[1])}")
    heads = ("all", "A", "B")
    print(
        f"{'category':<14}{'n (A/B)':>12}  "
        + "".join(f"{h + ' @5':>6}{'@10':>6}  " for h in heads).rstrip()
    )
    for category in sorted({a.category for a in run.answered}):
        text = f"{category} {CATEGORIES.get(category, '?')}"
        by_half = "/".join(str(run.count(part, category)) for part in split)
        counts = f"{run.count(None, category)} ({by_half})"
        print(f"{text:<14}{counts:>12}  {_cells(run, parts, category)}".rstrip())
    counts = f"{questions} ({'/'.join(str(run.count(p)) for p in split)})"
    print(f"{'overall':<14}{counts:>12}  {_cells(run, parts, None)}".rstrip())


def make_embedder(spec: str, cache: Path | None) -> Embedder | None:
    """The embedder `spec` names ("none": None), behind the disk cache unless
    `cache` is None."""
    if spec == "none":
        return None
    embedder = embedder_for(spec, resolve_settings())
    return embedder if cache is None else CachedEmbedder(embedder, cache)


def speed(spec: str, data: list[dict], passages: int = 256, queries: int = 100) -> None:
    """The embedder's own time, nothing cached: `passages` turns embedded
    together (as an insert does, after a first call that loads the model),
    then `queries` questions one at a time (as searches do)."""
    embedder = make_embedder(spec, None)
    assert embedder is not None
    turns = [text for sample in data for _, text, _ in turns_of(sample["conversation"])]
    questions = [qa["question"] for sample in data for qa in sample["qa"]]
    embedder.embed(["warm up"])
    started = time.perf_counter()
    embedder.embed(turns[:passages])
    per_passage = 1000 * (time.perf_counter() - started) / passages
    times = []
    for question in questions[:queries]:
        started = time.perf_counter()
        embedder.embed([question])
        times.append(1000 * (time.perf_counter() - started))
    times.sort()
    print(
        f"\n== speed of {spec}: {per_passage:.2f} ms/passage ({passages} in one call), "
        f"{sum(times) / len(times):.1f} ms/query mean, p95 {times[int(0.95 * len(times))]:.1f} "
        f"({len(times)} one at a time)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="a file in LoCoMo's format")
    parser.add_argument(
        "--embedders",
        default="none,local",
        help='comma-separated: "none" (lexical only), "local", "endpoint:MODEL"',
    )
    parser.add_argument(
        "--shares", action="store_true", help="each ranking weight's share (SHARES)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="run with a module constant changed, e.g. ranking.SUBJECT_BOOST=1.3",
    )
    parser.add_argument("--speed", action="store_true", help="time each embedder, uncached")
    parser.add_argument("--cache", type=Path, default=DEFAULT_DIR, help="embedding cache folder")
    parser.add_argument("--no-cache", action="store_true", help="embed everything anew")
    add_db_option(parser)
    args = parser.parse_args()
    data = json.loads(args.data.read_text())
    split = halves(data)
    settings = dict(parse_setting(text) for text in args.set)
    cache = None if args.no_cache else args.cache
    with Databases() as databases, overridden(settings):
        for spec in (s.strip() for s in args.embedders.split(",")):
            name = "lexical (no embedder)" if spec == "none" else f"hybrid, embedder {spec}"
            try:
                embedder = make_embedder(spec, cache)
            except ConfigError as exc:
                print(f"\n== {spec}: not available here ({exc})")
                continue
            if args.speed and embedder is not None:
                speed(spec, data)
            results = {}
            for backend in backends(args.db):
                run = evaluate(data, embedder, databases, backend)
                results[label(backend)] = run
                report(name if args.db == "sqlite" else f"{name} [{label(backend)}]", run, split)
                if args.shares:
                    again = functools.partial(evaluate, data, embedder, databases, backend)
                    report_shares(name, run, again, split)
            if isinstance(embedder, CachedEmbedder):
                embedder.save()
            if len(results) > 1:
                print(f"\n{name}, overall side by side:")
                for db, run in results.items():
                    print(f"  {db:<9}" + "".join(f"R@{k} {run.recall(k):5.1f}  " for k in KS))


if __name__ == "__main__":
    main()
