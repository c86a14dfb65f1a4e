"""Archival memory at 10k, 100k and 1M passages: insert rate, search latency, size, RSS.

    python benchmarks/archival_scale.py [--sizes 10000,100000,1000000] [--queries 200]
        [--db sqlite|postgres|both|URL] [--hybrid-max N]

Each size runs in a fresh process (so peak RSS is that size's own) on a fresh
temporary database. The passages are synthetic English-like text: 20 to 60
words in sentences, function words ("the", "of", ...) mixed with content
words drawn from a Zipf-Mandelbrot distribution over about 5,000 words (a
hundred real common words first, then made-up ones), and a rare code word
("kx01234") in 2% of passages. So the most common content words are in about
half of all passages and the tail in a handful: the queries (2 to 6 words
drawn the same way, a fifth of them with a rare code) match anything from no
passage to most of them, and broad queries are the worst case for BM25
ranking, which scores every matching row. The table after the main one splits
the latencies by the share of passages a query matched.

Measured, for each size:

- insert: `archival.insert_many` in batches of 5,000 passages, no embedder.
  Building the `Passage` objects is outside the timing.
- vectors: the time to embed and store a vector for every passage with
  `search.store_vectors` (batches of 10,000), with a stub embedder that
  returns a deterministic random unit vector per text (384 dimensions); the
  stub's own time is shown apart.
- lexical search: `archival.search(query)` (limit 5) on the agent without an
  embedder, p50 and p95 over the queries, after warm-up searches.
- hybrid search: the same with the stub embedder set (BM25 and vector ranking
  fused). The time inside the embedder's `embed()` call, which stands for the
  call to the embeddings endpoint, is measured on each search and subtracted.
- index load: the first load of the vectors from SQLite into the in-memory
  matrix, timed on its own before the hybrid searches (it happens once per
  process, not per search). So is the first check for passages without a
  vector: later searches look only past what it saw (what a search inside a
  step's write saw is kept once that write commits).
- quality: the budgeted BM25 ranking (see ranking.RANK_BUDGET) against
  an exhaustive one (share of searches proven exact, share of the exhaustive
  top-5 scores returned), and the vector index's recall@10 against an
  exhaustive scan. The stub's random vectors are the hardest case for the
  binary codes used above 200,000 vectors (every neighbour is nearly as far
  as any other); real sentence embeddings cluster by topic.
- database size on disk (the file, -wal and -shm; PostgreSQL's
  pg_database_size) and the process's peak RSS.

`--dated` adds a month of the passages' year to every query ("... in May
2026"), to measure what the date signal of memory/retrieval/dates.py costs: such a
query ranks deeper and runs a second ranking within the month.

Each size's database is fresh, of the backend `--db` names (databases.py):
`both` prints SQLite's and PostgreSQL's rows one above the other. Sizes above
`--hybrid-max` skip the vectors and hybrid search (shown as nan), for a
backend whose vector index takes too long to build at the largest size.

Targets: search p95 under 50 ms at 1M passages; insert at least 5,000
passages per second without embeddings.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import resource
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
from databases import Databases, add_db_option, backends, size_mb
from databases import label as db_label

INSERT_BATCH = 5_000
VECTOR_BATCH = 10_000
WARMUP_QUERIES = 20
QUALITY_QUERIES = 50  # compared with exhaustive ranking (slow at 1M, so a subset)
DIMENSION = 384
SEED = 20240601


def split_words(text: str) -> list[str]:
    return text.split()


FUNCTION_WORDS = split_words(
    "the of and to a in is it that was for on are with as i his they be at one have this "
    "from or had by but some what there we can out other were all your when up use how "
    "said an each she which do their if will about many then them would so these her"
)
COMMON_WORDS = split_words(
    "time people year day way man thing woman life child world school state family student "
    "group country problem hand part place case week company system program question work "
    "government number night point home water room mother area money story fact month lot "
    "right study book eye job word business issue side kind head house service friend father "
    "power hour game line end member law car city community name president team minute idea "
    "kid body information back parent face others level office door health person art war "
    "history party result change morning reason research girl guy moment air teacher force "
    "education project meeting coffee garden music travel doctor dinner plan"
)
ONSETS = split_words("b br c ch cl d dr f fl g gr h j k l m n p pl pr r s sh st t th tr v w z")
VOWELS = split_words("a e i o u ai ea io ou")
CODAS = ["", "", "n", "r", "l", "s", "t", "nd", "rk", "m"]


class StubEmbedder:
    """A deterministic random unit vector per text; keeps the time spent in `embed`."""

    name = "bench:random-384"
    dimension: int | None = DIMENSION

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        started = time.perf_counter()
        matrix = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for i, text in enumerate(texts):
            digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
            rng = np.random.default_rng(int.from_bytes(digest, "little"))
            matrix[i] = rng.standard_normal(DIMENSION, dtype=np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        self.seconds += time.perf_counter() - started
        self.calls += 1
        return matrix


class Corpus:
    """Synthetic passages and queries with Zipf-distributed content words."""

    def __init__(self, size: int, content_words: int = 5_000) -> None:
        rng = random.Random(SEED)
        vocabulary = list(COMMON_WORDS)
        seen = set(vocabulary) | set(FUNCTION_WORDS)
        while len(vocabulary) < content_words:
            word = "".join(
                rng.choice(ONSETS) + rng.choice(VOWELS) for _ in range(rng.randint(1, 3))
            ) + rng.choice(CODAS)
            if len(word) > 2 and word not in seen:
                seen.add(word)
                vocabulary.append(word)
        self.words = np.array(vocabulary)
        ranks = np.arange(1, len(vocabulary) + 1)
        weights = 1.0 / (ranks + 20.0)  # Zipf-Mandelbrot, s = 1
        self.cumulative = np.cumsum(weights / weights.sum())
        function_ranks = np.arange(1, len(FUNCTION_WORDS) + 1)
        function_weights = 1.0 / function_ranks
        self.function_cumulative = np.cumsum(function_weights / function_weights.sum())
        self.function_words = np.array(FUNCTION_WORDS)
        self.codes = max(1, size // 50)  # each rare code in about one passage

    def _content(self, rng: np.random.Generator, n: int) -> np.ndarray:
        picks = np.searchsorted(self.cumulative, rng.random(n))
        return self.words[np.minimum(picks, len(self.words) - 1)]

    def _code(self, rng: np.random.Generator) -> str:
        return f"kx{int(rng.integers(self.codes)):05d}"

    def texts(self, rng: np.random.Generator, count: int) -> list[str]:
        lengths = rng.integers(20, 61, count)
        total = int(lengths.sum())
        content = self._content(rng, total)
        function = self.function_words[
            np.minimum(
                np.searchsorted(self.function_cumulative, rng.random(total)),
                len(self.function_words) - 1,
            )
        ]
        tokens = np.where(rng.random(total) < 0.45, function, content).tolist()
        sentence_lengths = rng.integers(6, 17, total).tolist()
        with_code = (rng.random(count) < 0.02).tolist()
        texts, at = [], 0
        for n, code in zip(lengths.tolist(), with_code, strict=True):
            words = tokens[at : at + n]
            if code:
                words[len(words) // 2] = self._code(rng)
            sentences, i = [], 0
            while i < n:
                k = sentence_lengths[at + i]
                sentence = words[i : i + k]
                sentences.append(" ".join([sentence[0].capitalize(), *sentence[1:]]) + ".")
                i += k
            texts.append(" ".join(sentences))
            at += n
        return texts

    def queries(self, rng: np.random.Generator, count: int) -> list[str]:
        queries = []
        for _ in range(count):
            words = self._content(rng, int(rng.integers(2, 7))).tolist()
            if rng.random() < 0.2:
                words[int(rng.integers(len(words)))] = self._code(rng)
            if rng.random() < 0.3:  # natural phrasing: fts_words drops function words
                words.insert(0, str(rng.choice(["what", "the", "about"])))
            queries.append(" ".join(words))
        return queries


def batches(corpus: Corpus, agent_id: str, size: int) -> Iterator[list]:
    from memgpt_lite import Passage

    rng = np.random.default_rng(SEED)
    now = datetime.now(UTC)
    for start in range(0, size, INSERT_BATCH):
        count = min(INSERT_BATCH, size - start)
        ages = rng.integers(0, 365 * 86_400, count).tolist()
        topics = rng.integers(0, 20, count).tolist()
        yield [
            Passage(
                agent_id=agent_id,
                text=text,
                tags=[f"topic{topic:02d}"],
                created_at=now - timedelta(seconds=age),
            )
            for text, age, topic in zip(corpus.texts(rng, count), ages, topics, strict=True)
        ]


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def log(message: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def timed_searches(agent, queries: list[str], embedder: StubEmbedder | None) -> list[dict]:
    """Each query searched once: latency in ms (embedding excluded) and matches."""
    runs = []
    for query in queries:
        embedded = embedder.seconds if embedder else 0.0
        started = time.perf_counter()
        _, total = agent.archival.search(query)
        elapsed = time.perf_counter() - started
        embed = (embedder.seconds - embedded) if embedder else 0.0
        runs.append({"ms": (elapsed - embed) * 1000, "embed_ms": embed * 1000, "matched": total})
    return runs


def lexical_agreement(agent, queries: list[str]) -> dict:
    """How often the budgeted ranking is proven exact (top 5), and how many of
    the exhaustive ranking's top 5 scores it returns, on a subset of queries."""
    agent_id = agent.state.id
    proven = [agent.store.rank_passages(agent_id, q, 50, exact=5).proven for q in queries]
    overlaps = []
    for query in queries[:QUALITY_QUERIES]:
        best = agent.store.rank_passages(agent_id, query, 5, budget=10**12).scored
        if not best:
            continue
        got = agent.store.rank_passages(agent_id, query, 50, exact=5).scored[:5]
        wanted = {round(score, 6) for _, score in best}  # scores: ties may swap passages
        overlaps.append(len(wanted & {round(score, 6) for _, score in got}) / len(wanted))
    return {"proven_share": float(np.mean(proven)), "top5_agreement": float(np.mean(overlaps))}


def nearest_recall(index, embedder: StubEmbedder, queries: list[str]) -> float:
    """Recall@10 of the index's nearest neighbours against an exhaustive scan."""
    recalls = []
    for query in queries:
        vector = embedder.embed([query])[0]
        found = index.search(vector, 10).ranked
        scores = index._matrix[: index.size] @ vector
        exact = {int(s) for s in index._seqs[np.argsort(-scores)[:10]]}
        recalls.append(len(exact & set(found)) / 10)
    return float(np.mean(recalls))


def insert_all(agent, corpus: Corpus, size: int) -> dict:
    """`archival.insert_many` of every passage, in batches, no embedder."""
    insert_seconds, stored, duplicates, batch_rates = 0.0, 0, 0, []
    wall = time.perf_counter()
    for batch in batches(corpus, agent.state.id, size):
        started = time.perf_counter()
        report = agent.archival.insert_many(batch)
        elapsed = time.perf_counter() - started
        insert_seconds += elapsed
        stored += len(report.stored)
        duplicates += len(report.duplicates)
        batch_rates.append(len(batch) / elapsed)
        if len(batch_rates) % 20 == 0:
            log(f"{size}: inserted {stored:,} ({len(batch) / elapsed:,.0f}/s this batch)")
    log(f"{size}: inserted {stored:,} in {insert_seconds:.1f}s")
    return {
        "stored": stored,
        "duplicates": duplicates,
        "insert_seconds": insert_seconds,
        "insert_rate": stored / insert_seconds,
        "insert_rate_first_batch": batch_rates[0],
        "insert_rate_last_batch": batch_rates[-1],
        "load_wall_seconds": time.perf_counter() - wall,
    }


def store_all_vectors(agent, embedder: StubEmbedder, stored: int) -> dict:
    """A vector for every passage, by seq ranges (not `unembedded_passages`,
    which would warm up the pending check measured later)."""
    from memgpt_lite.memory.retrieval.search import store_vectors

    agent.set_embedder(embedder)
    vector_seconds, last_seq, embedded = 0.0, 0, 0
    while embedded < stored:
        seqs = range(last_seq + 1, last_seq + 1 + VECTOR_BATCH)
        rows = sorted(agent.store.passages_by_seq(agent.state.id, seqs).items())
        last_seq += VECTOR_BATCH
        embedded += len(rows)
        started = time.perf_counter()
        store_vectors(agent, "passage", [s for s, _ in rows], [p.text for _, p in rows])
        vector_seconds += time.perf_counter() - started
    log(f"{stored}: vectors stored in {vector_seconds:.1f}s (stub embed {embedder.seconds:.1f}s)")
    return {"vector_seconds": vector_seconds, "stub_embed_seconds": embedder.seconds}


def hybrid_phase(agent, embedder: StubEmbedder, warmup: list[str], queries: list[str]) -> dict:
    """The index's first load, the first check for unembedded passages, then
    the hybrid searches and the index's recall."""
    from memgpt_lite.memory.retrieval.search import backfill

    started = time.perf_counter()
    index = agent.runner.vector_index("passage")
    index.refresh()
    index_load = time.perf_counter() - started
    # The first hybrid search in a process also checks for passages without
    # a vector (to embed them); later searches look only past what it saw.
    started = time.perf_counter()
    assert backfill(agent.runner, "passage") == 0
    pending_check = time.perf_counter() - started
    timed_searches(agent, warmup, embedder)
    hybrid = timed_searches(agent, queries, embedder)
    log(f"hybrid p95 {percentile([r['ms'] for r in hybrid], 95):.1f} ms")
    return {
        "index_size": index.size,
        "index_load_seconds": index_load,
        "pending_check_seconds": pending_check,
        "hybrid": hybrid,
        "vector_recall": nearest_recall(index, embedder, queries[:QUALITY_QUERIES]),
    }


def not_measured(lexical: list[dict]) -> dict:
    """The vector and hybrid figures of a size above --hybrid-max: NaN."""
    nan = float("nan")
    return {
        "vector_seconds": nan,
        "stub_embed_seconds": nan,
        "index_load_seconds": nan,
        "pending_check_seconds": nan,
        "hybrid": [{"ms": nan, "embed_ms": nan, "matched": r["matched"]} for r in lexical],
        "vector_recall": nan,
    }


def dated(queries: list[str]) -> list[str]:
    """The queries naming a month of the passages' year ("... in May 2026"):
    search then also ranks that month's passages (memory/retrieval/dates.py)."""
    month = datetime.now(UTC) - timedelta(days=120)
    return [f"{q} in {month:%B %Y}" for q in queries]


def worker(
    size: int, query_count: int, db: str, hybrid_max: int | None = None, with_date: bool = False
) -> dict:
    from memgpt_lite import Agent

    corpus = Corpus(size)
    query_rng = np.random.default_rng(SEED + 1)
    warmup = corpus.queries(query_rng, WARMUP_QUERIES)
    queries = corpus.queries(query_rng, query_count)
    if with_date:
        warmup, queries = dated(warmup), dated(queries)
    agent = Agent.create("bench", "gpt-4o-mini", db=db)
    inserted = insert_all(agent, corpus, size)

    # Lexical search (the agent has no embedder).
    assert agent.embedder is None
    timed_searches(agent, warmup, None)
    lexical = timed_searches(agent, queries, None)
    log(f"{size}: lexical p95 {percentile([r['ms'] for r in lexical], 95):.1f} ms")
    rss_lexical = peak_rss_mb()
    lexical_quality = lexical_agreement(agent, queries)

    if hybrid_max is not None and size > hybrid_max:
        vectors, hybrid = {}, not_measured(lexical)
    else:
        embedder = StubEmbedder()
        vectors = store_all_vectors(agent, embedder, inserted["stored"])
        hybrid = hybrid_phase(agent, embedder, warmup, queries)
        assert hybrid["index_size"] == inserted["stored"], (hybrid["index_size"], inserted)
    db_mb = size_mb(db)
    agent.store.close()
    return {
        "size": size,
        **inserted,
        **vectors,
        **hybrid,
        "lexical": lexical,
        **lexical_quality,
        "db_mb": db_mb,
        "peak_rss_lexical_mb": rss_lexical,
        "peak_rss_mb": peak_rss_mb(),
    }


BUCKETS = ("none", "<1%", "1-10%", ">10%")


def bucket(matched: int, size: int) -> str:
    share = matched / size
    return (
        "none" if matched == 0 else "<1%" if share <= 0.01 else "1-10%" if share <= 0.1 else ">10%"
    )


def breakdown(row: dict) -> list[str]:
    lines = []
    for label in BUCKETS:
        picked = [
            i
            for i, run in enumerate(row["lexical"])
            if bucket(run["matched"], row["size"]) == label
        ]
        if not picked:
            continue
        lex = [row["lexical"][i]["ms"] for i in picked]
        hyb = [row["hybrid"][i]["ms"] for i in picked]
        lines.append(
            f"{'':>9} {label:>9} {len(picked):>8} "
            f"{percentile(lex, 50):>8.1f} {percentile(lex, 95):>8.1f} "
            f"{percentile(hyb, 50):>8.1f} {percentile(hyb, 95):>8.1f}"
        )
    return lines


def collect(args: argparse.Namespace) -> list[dict]:
    """Each size on each backend in a fresh process and database."""
    rows = []
    with Databases(tmpdir=args.tmpdir) as databases:
        for size in (int(s) for s in args.sizes.split(",")):
            for backend in backends(args.db):
                db = databases.new(backend, f"archival-{size}")
                command = [sys.executable, __file__, "--worker", str(size)]
                command += ["--queries", str(args.queries), "--worker-db", db]
                if args.hybrid_max is not None:
                    command += ["--hybrid-max", str(args.hybrid_max)]
                if args.dated:
                    command += ["--dated"]
                out = subprocess.run(
                    command, stdout=subprocess.PIPE, text=True, check=True, env=os.environ.copy()
                )
                databases.discard(db)
                rows.append(
                    json.loads(out.stdout.strip().splitlines()[-1]) | {"db": db_label(backend)}
                )
    return rows


def print_main(rows: list[dict], db: str) -> None:
    print()
    print(
        f"{db and 'db':>{len(db)}}{'passages':>9} {'insert/s':>9} {'vectors s':>10} "
        f"{'index s':>8} {'lex p50':>8} {'lex p95':>8} {'hyb p50':>8} {'hyb p95':>8} "
        f"{'DB MB':>8} {'RSS MB':>8}"
    )
    for row in rows:
        lex = [r["ms"] for r in row["lexical"]]
        hyb = [r["ms"] for r in row["hybrid"]]
        print(
            f"{db and row['db']:>{len(db)}}"
            f"{row['size']:>9,} {row['insert_rate']:>9,.0f} {row['vector_seconds']:>10.1f} "
            f"{row['index_load_seconds']:>8.2f} "
            f"{percentile(lex, 50):>8.1f} {percentile(lex, 95):>8.1f} "
            f"{percentile(hyb, 50):>8.1f} {percentile(hyb, 95):>8.1f} "
            f"{row['db_mb']:>8.0f} {row['peak_rss_mb']:>8.0f}"
        )
    print(
        "\nsearch times in ms, limit 5; hybrid excludes the embed() call; "
        "'vectors s' includes the stub embedder's own time (below)"
    )


def print_breakdown(rows: list[dict], db: str) -> None:
    print(
        f"\n{db and 'db':>{len(db)}}{'passages':>9} {'matched':>9} {'queries':>8} "
        f"{'lex p50':>8} {'lex p95':>8} {'hyb p50':>8} {'hyb p95':>8}"
    )
    for row in rows:
        print(f"{db and row['db']:>{len(db)}}{row['size']:>9,}")
        for line in breakdown(row):
            print(" " * len(db) + line)
    print("('matched': share of all passages the query matched)")


def print_details(rows: list[dict], db: str) -> None:
    print()
    for row in rows:
        matched = [r["matched"] / row["size"] for r in row["lexical"]]
        embed_ms = [r["embed_ms"] for r in row["hybrid"]]
        print(
            f"{db and row['db'] + ' ':>{len(db)}}"
            f"{row['size']:>9,}: stored {row['stored']:,} ({row['duplicates']} duplicates); "
            f"insert {row['insert_seconds']:.1f}s (first batch "
            f"{row['insert_rate_first_batch']:,.0f}/s, last "
            f"{row['insert_rate_last_batch']:,.0f}/s; with text generation "
            f"{row['load_wall_seconds']:.1f}s); vectors {row['vector_seconds']:.1f}s of which stub "
            f"embed {row['stub_embed_seconds']:.1f}s; median query matched "
            f"{percentile(matched, 50):.1%} of passages; stub query embed "
            f"{percentile(embed_ms, 50):.2f} ms (excluded); first check for unembedded "
            f"passages {row['pending_check_seconds'] * 1000:.0f} ms (once per process); "
            f"peak RSS before vectors "
            f"{row['peak_rss_lexical_mb']:.0f} MB"
        )


def print_quality(rows: list[dict], db: str) -> None:
    print(
        f"\n{db and 'db':>{len(db)}}{'passages':>9} {'proven':>8} {'top-5 agree':>12} "
        f"{'vector R@10':>12}"
    )
    for row in rows:
        print(
            f"{db and row['db']:>{len(db)}}"
            f"{row['size']:>9,} {row['proven_share']:>8.0%} {row['top5_agreement']:>12.1%} "
            f"{row['vector_recall']:>12.1%}"
        )
    print(
        "(proven: searches whose top 5 is provably FTS5's exhaustive BM25 ranking; top-5 "
        "agree: share of the exhaustive top-5 scores returned; vector R@10: nearest "
        "neighbours found, against an exhaustive scan, on the stub's random vectors)"
    )


def print_targets(rows: list[dict], db: str) -> None:
    print()
    for name in dict.fromkeys(row["db"] for row in rows):
        largest = [row for row in rows if row["db"] == name][-1]
        p95s = [percentile([r["ms"] for r in largest[k]], 95) for k in ("lexical", "hybrid")]
        p95 = max(p for p in p95s if not math.isnan(p))
        print(
            f"targets at {largest['size']:,} passages: search p95 < 50 ms: "
            f"{'met' if p95 < 50 else 'MISSED'} ({p95:.1f} ms, worse of lexical and hybrid); "
            f"insert >= 5,000/s: {'met' if largest['insert_rate'] >= 5000 else 'MISSED'} "
            f"({largest['insert_rate']:,.0f}/s)" + (f" [{name}]" if db else "")
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--tmpdir", default=None, help="where the temporary databases go")
    add_db_option(parser)
    parser.add_argument(
        "--hybrid-max",
        type=int,
        help="sizes above this measure insert and lexical search only (vectors: nan)",
    )
    parser.add_argument(
        "--dated",
        action="store_true",
        help='every query also names a month ("... in May 2026"): the cost of the date signal',
    )
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--worker-db", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        result = worker(args.worker, args.queries, args.worker_db, args.hybrid_max, args.dated)
        print(json.dumps(result))
        return
    rows = collect(args)
    db = "" if args.db == "sqlite" else " " * 9  # a db column, unless SQLite's alone
    print_main(rows, db)
    print_breakdown(rows, db)
    print_details(rows, db)
    print_quality(rows, db)
    print_targets(rows, db)


if __name__ == "__main__":
    main()
