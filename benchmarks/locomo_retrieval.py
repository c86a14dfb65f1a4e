"""Retrieval recall on LoCoMo: does archival search find the turns that answer
each question?

    python benchmarks/locomo_retrieval.py --data ../shared/bench/locomo/locomo_dev.json
    python benchmarks/locomo_retrieval.py --data PATH --embedders none,local
    python benchmarks/locomo_retrieval.py --data PATH --db both

For each conversation, every turn goes into a fresh agent's archival memory as
one passage (speaker, text, the caption of a shared image) dated with its
session's date, with the turn before it as the passage's context
(searched, at lower weight, but not part of the passage). Every question
with evidence is a query. The metric is LoCoMo's recall accuracy: per
question |evidence in top k| / |evidence|,
averaged over questions, per category and overall, at k = 5 and 10.

Nothing here is tuned to the questions: the agent's search runs as shipped.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

from databases import Databases, add_db_option, backends, label

from memgpt_lite import Agent, ConfigError, Passage
from memgpt_lite.agent.setup import embedder_for

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


def load_agent(db: str, turns, embedder_spec: str | None) -> tuple[Agent, dict[str, set[str]]]:
    agent = Agent.create("locomo", "gpt-4o-mini", db=db)
    if embedder_spec:
        agent.set_embedder(embedder_for(embedder_spec, agent.process_settings))
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


def evaluate(
    data: list[dict], embedder_spec: str | None, databases: Databases, backend: str = "sqlite"
) -> dict:
    """Recall per category and k, each conversation in a fresh database of
    `backend` (a --db value, see databases.py)."""
    scores: dict[int, dict[int, list[float]]] = {k: defaultdict(list) for k in KS}
    search_seconds = load_seconds = 0.0
    for n, sample in enumerate(data):
        turns = turns_of(sample["conversation"])
        db = databases.new(backend, f"locomo-{n}")
        started = time.perf_counter()
        agent, dia_of = load_agent(db, turns, embedder_spec)
        load_seconds += time.perf_counter() - started
        known = {t[0] for t in turns}
        for qa in sample["qa"]:
            evidence = evidence_ids(qa.get("evidence", []), known)
            if not evidence:
                continue
            started = time.perf_counter()
            found, _ = agent.archival.search(qa["question"], limit=max(KS))
            search_seconds += time.perf_counter() - started
            for k in KS:
                top = set().union(*(dia_of[p.id] for p in found[:k])) if found else set()
                hit = len(set(evidence) & top) / len(evidence)
                scores[k][qa["category"]].append(hit)
        agent.store.close()
        databases.discard(db)
    return {"scores": scores, "search_seconds": search_seconds, "load_seconds": load_seconds}


def report(name: str, result: dict) -> None:
    scores = result["scores"]
    questions = sum(len(v) for v in scores[KS[0]].values())
    print(
        f"\n== {name}: {questions} questions; loading {result['load_seconds']:.1f} s, "
        f"search {1000 * result['search_seconds'] / max(questions, 1):.1f} ms/query"
    )
    print(f"{'category':<14}{'n':>5}" + "".join(f"{'R@' + str(k):>8}" for k in KS))
    for category in sorted(scores[KS[0]]):
        label = f"{category} {CATEGORIES.get(category, '?')}"
        n = len(scores[KS[0]][category])
        values = "".join(f"{100 * _mean(scores[k][category]):>8.1f}" for k in KS)
        print(f"{label:<14}{n:>5}{values}")
    overall = "".join(
        f"{100 * _mean([s for v in scores[k].values() for s in v]):>8.1f}" for k in KS
    )
    print(f"{'overall':<14}{questions:>5}{overall}")


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def overall(result: dict, k: int) -> float:
    return 100 * _mean([s for v in result["scores"][k].values() for s in v])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="a file in LoCoMo's format")
    parser.add_argument(
        "--embedders",
        default="none,local",
        help='comma-separated: "none" (lexical only), "local", "endpoint:MODEL"',
    )
    add_db_option(parser)
    args = parser.parse_args()
    data = json.loads(args.data.read_text())
    with Databases() as databases:
        for spec in args.embedders.split(","):
            spec = spec.strip()
            name = "lexical (no embedder)" if spec == "none" else f"hybrid, embedder {spec}"
            results = {}
            for backend in backends(args.db):
                try:
                    result = evaluate(data, None if spec == "none" else spec, databases, backend)
                except ConfigError as exc:
                    print(f"\n== {spec}: not available here ({exc})")
                    break
                results[label(backend)] = result
                report(name if args.db == "sqlite" else f"{name} [{label(backend)}]", result)
            if len(results) > 1:
                print(f"\n{name}, overall side by side:")
                for db, result in results.items():
                    print(f"  {db:<9}" + "".join(f"R@{k} {overall(result, k):5.1f}  " for k in KS))


if __name__ == "__main__":
    main()
