"""How much of the exact top 10 the binary-code candidates keep, on real
sentence embeddings.

    python benchmarks/vector_recall.py --data ../shared/bench/locomo/locomo_dev.json
    python benchmarks/vector_recall.py --data PATH --embedder endpoint:MODEL

Above `vector_index.EXACT_VECTOR_LIMIT` vectors, search picks candidates by the
Hamming distance of binary codes and compares only those exactly, so its
recall is the share of the exact nearest neighbours among the candidates.
`archival_scale.py` measures that on random vectors, the worst case; this
script measures it where it matters, on embeddings of real text: every turn
of every conversation in a LoCoMo-format file, pooled in one index, queried
with every question. The candidate share is given as a fraction of the index
(at 1M vectors search takes 8,192 candidates: 0.8%).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from memgpt_lite import ConfigError
from memgpt_lite.agent.setup import embedder_for
from memgpt_lite.memory.retrieval.vector_index import VectorIndex
from memgpt_lite.models import AgentState, Block, LLMConfig
from memgpt_lite.settings.resolve import resolve_settings
from memgpt_lite.storage.sqlite.store import Store

sys.path.insert(0, str(Path(__file__).parent))
from locomo_retrieval import turns_of  # noqa: E402 (a sibling script, not a package)

FRACTIONS = (0.005, 0.01, 0.02, 0.05)
K = 10


def candidate_recall(vectors: np.ndarray, queries: np.ndarray) -> list[tuple[float, float]]:
    """(share, mean recall@K of the exact neighbours among the candidates)."""
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "recall.db")
        state = AgentState(name="recall", llm=LLMConfig(model="none"), system="s")
        store.create_agent(state, [Block(label="persona", value="")])
        seqs = np.arange(1, len(vectors) + 1)
        store.add_vectors(state.id, "passage", seqs.tolist(), vectors)
        index = VectorIndex(store, state.id, "passage", vectors.shape[1])
        index.refresh()
        index._build_codes()  # what search does beyond EXACT_VECTOR_LIMIT
        exact = np.argsort(-(vectors @ queries.T), axis=0, kind="stable")[:K].T
        results = []
        for fraction in FRACTIONS:
            count = max(K, round(fraction * index.size))
            recalls = []
            for query, best in zip(queries, exact, strict=True):
                rows, _ = index._candidates(query, count)
                found = set(index._seqs[rows].tolist())
                recalls.append(len(found & set(seqs[best].tolist())) / K)
            results.append((fraction, float(np.mean(recalls))))
        store.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="a file in LoCoMo's format")
    parser.add_argument("--embedder", default="local", help="local or endpoint:MODEL")
    args = parser.parse_args()
    data = json.loads(Path(args.data).read_text())
    texts = [text for item in data for _, text, _ in turns_of(item["conversation"])]
    questions = [qa["question"] for item in data for qa in item["qa"]]
    try:
        embedder = embedder_for(args.embedder, resolve_settings())
        started = time.perf_counter()
        vectors = embedder.embed(texts)
        queries = embedder.embed(questions)
    except ConfigError as exc:
        sys.exit(f"Error: {exc}")
    print(
        f"{embedder.name}: {len(texts):,} turns and {len(questions):,} questions "
        f"embedded in {time.perf_counter() - started:.1f} s"
    )

    # The same share of a larger index holds more candidates per true
    # neighbour, so recall at a fixed share rises with size: measured on a
    # quarter, a half and all of the turns.
    rng = np.random.default_rng(0)
    print(f"\n{'vectors':>8} {'candidates':>11} {'share':>6} {f'recall@{K}':>10}")
    for size in (len(texts) // 4, len(texts) // 2, len(texts)):
        picked = np.sort(rng.choice(len(texts), size, replace=False))
        for fraction, recall in candidate_recall(vectors[picked], queries):
            count = max(K, round(fraction * size))
            print(f"{size:>8,} {count:>11,} {fraction:>6.1%} {recall:>10.1%}")
    print(
        f"\nrecall@{K}: share of the exact {K} nearest turns (cosine) among the "
        "candidates, which search then compares exactly"
    )


if __name__ == "__main__":
    main()
