"""PostgreSQL vectors at scale: writing, loading, server-side nearest search.

    python benchmarks/postgres_vectors.py                      # a pgserver of its own
    python benchmarks/postgres_vectors.py --url postgresql://...  # a new database there

Stores clustered unit vectors (see `unit`) for several
agents of different sizes in one database, then measures: `add_vectors` in
batches; `load_vectors` of the biggest agent three ways (the store's raw
binary reader, pgvector.psycopg's loader, a `vector::real[]` cast);
`nearest_vectors` p50 and recall@10 against exact numpy per agent, and the
plans the server picks; `unembedded_passages` when every passage has a vector.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import psycopg

from memgpt_lite.models import AgentState, Block, LLMConfig
from memgpt_lite.storage.postgres import vectors as vectors_module
from memgpt_lite.storage.postgres.store import PostgresStore

SIZES = (100_000, 25_000, 5_000, 200)
K = 10


def unit(rng: np.random.Generator, count: int, dimension: int) -> np.ndarray:
    """Unit vectors near 1,000 topic centres, as sentence embeddings cluster
    (uniformly random ones in 384 dimensions have no near neighbours: any
    approximate index, HNSW or ours, finds few of their exact top ten)."""
    centres = np.random.default_rng(99).standard_normal((1_000, dimension))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    picks = centres[rng.integers(len(centres), size=count)]
    vectors = picks + 0.6 * rng.standard_normal((count, dimension)) / np.sqrt(dimension)
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def new_database(server_url: str) -> str:
    name = f"memgpt_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(urlsplit(server_url)._replace(path=f"/{name}"))


def fill(store: PostgresStore, dimension: int) -> dict[str, tuple[list[int], np.ndarray]]:
    """The agents' vectors. The first batch goes in as the store writes them,
    with the dimension's HNSW index kept up to date (made by that batch); the
    rest without it, and the index is then built at once, as
    `CREATE INDEX` does best (maintaining it row by row is much slower)."""
    rng = np.random.default_rng(0)
    agents, seq, batches = {}, 1, []
    for n, size in enumerate(SIZES):
        state = AgentState(name=f"agent{n}", llm=LLMConfig(model="m"), system="s")
        store.create_agent(state, [Block(label="persona")])
        vectors = unit(rng, size, dimension)
        seqs = list(range(seq, seq + size))
        seq += size
        agents[state.id] = (seqs, vectors)
        batches += [
            (state.id, seqs[start : start + 5_000], vectors[start : start + 5_000])
            for start in range(0, size, 5_000)
        ]
    first_agent, first_seqs, first_vectors = batches[0]
    started = time.perf_counter()
    store.add_vectors(first_agent, "passage", first_seqs, first_vectors)
    took = time.perf_counter() - started
    print(f"add_vectors, 5,000 vectors with the HNSW index kept: {took:6.2f} s")
    index = f"vectors_hnsw_{dimension}"
    with psycopg.connect(store.url, autocommit=True) as conn:
        definition = conn.execute("SELECT pg_get_indexdef(%s::regclass)", [index]).fetchone()[0]
        conn.execute(f"DROP INDEX {index}")
        # Known to this process as made: the store's next writes do not make it again.
        vectors_module._indexed.add((store.url, dimension))
        started = time.perf_counter()
        for agent_id, seqs, vectors in batches[1:]:
            store.add_vectors(agent_id, "passage", seqs, vectors)
        took = time.perf_counter() - started
        count = sum(SIZES) - 5_000
        print(f"add_vectors, {count:,} vectors without it: {took:6.2f} s ({count / took:,.0f}/s)")
        started = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute(definition)
        print(f"CREATE INDEX {index} on {sum(SIZES):,}: {time.perf_counter() - started:6.1f} s")
        conn.execute("ANALYZE vectors")
    return agents


def stored(store: PostgresStore, dimension: int) -> dict[str, tuple[list[int], np.ndarray]]:
    """The vectors of the agents `fill` made, biggest first."""
    agents = {}
    for state, _ in store.list_agents():
        loaded = store.load_vectors(state.id, "passage", 0, dimension)
        if len(loaded.seqs):
            agents[state.id] = (loaded.seqs.tolist(), loaded.matrix)
    return dict(sorted(agents.items(), key=lambda item: -len(item[1][0])))


def time_loads(store: PostgresStore, agent_id: str, dimension: int) -> None:
    started = time.perf_counter()
    loaded = store.load_vectors(agent_id, "passage", 0, dimension)
    took = time.perf_counter() - started
    print(f"load_vectors {len(loaded.seqs):>7,} vectors, store's raw reader: {took:6.2f} s")
    query = "SELECT id, item_seq, vector FROM vectors WHERE agent_id = %s ORDER BY id"
    with psycopg.connect(store.url) as conn:
        from pgvector.psycopg import register_vector

        register_vector(conn)
        started = time.perf_counter()
        rows = conn.cursor(binary=True).execute(query, [agent_id]).fetchall()
        matrix = np.stack([row[2].to_numpy() for row in rows]).astype(np.float32)
        took = time.perf_counter() - started
        print(f"load_vectors {len(matrix):>7,} vectors, pgvector.psycopg:   {took:6.2f} s")
        started = time.perf_counter()
        cast = query.replace("vector FROM", "vector::real[] FROM")
        rows = conn.cursor(binary=True).execute(cast, [agent_id]).fetchall()
        matrix = np.array([row[2] for row in rows], dtype=np.float32)
        took = time.perf_counter() - started
        print(f"load_vectors {len(matrix):>7,} vectors, vector::real[]:     {took:6.2f} s")


def time_nearest(store: PostgresStore, agents: dict, dimension: int, queries: int) -> None:
    rng = np.random.default_rng(1)
    for agent_id, (seqs, vectors) in agents.items():
        times, recalls = [], []
        for query in unit(rng, queries, dimension):
            also = [seqs[i] for i in rng.integers(0, len(seqs), 50)]
            started = time.perf_counter()
            found = store.nearest_vectors(agent_id, "passage", query, K, also)
            times.append(time.perf_counter() - started)
            exact = {seqs[i] for i in np.argsort(-(vectors @ query))[:K]}
            recalls.append(len(exact & set(found.ranked)) / K)
        print(
            f"nearest_vectors agent of {len(seqs):>7,}: p50 {statistics.median(times) * 1000:6.1f}"
            f" ms, p90 {sorted(times)[int(0.9 * len(times))] * 1000:6.1f} ms, "
            f"recall@{K} {statistics.mean(recalls):.3f}"
        )


def explain(store: PostgresStore, agents: dict, dimension: int) -> None:
    query = "[" + ",".join(["0.05"] * dimension) + "]"
    column = f"vector::vector({dimension})"
    with psycopg.connect(store.url) as conn:
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        for agent_id, (seqs, _) in agents.items():
            plan = conn.execute(
                f"EXPLAIN SELECT item_seq FROM vectors WHERE agent_id = %s AND owner = 'passage' "
                f"AND dimension = {dimension} ORDER BY {column} <=> %s::vector({dimension}) "
                "LIMIT 10",
                [agent_id, query],
            ).fetchall()
            scans = [row[0].strip() for row in plan if "Scan" in row[0]]
            print(f"plan, agent of {len(seqs):>7,}: {' / '.join(scans)}")


def time_unembedded(store: PostgresStore, count: int) -> None:
    """An agent of `count` searchable messages (written by SQL), all but the
    last 100 with a vector (of 8 dimensions: only their presence matters).
    Messages, not passages: the other agents' made-up passage seqs are taken."""
    state = AgentState(name=f"archivist{time.time_ns()}", llm=LLMConfig(model="m"), system="s")
    store.create_agent(state, [Block(label="persona")])
    with psycopg.connect(store.url, autocommit=True) as conn:
        seqs = [
            row[0]
            for row in conn.execute(
                "INSERT INTO messages (id, agent_id, role, content, created_at, search_text) "
                "SELECT 'm' || i || %s, %s, 'user', 'said ' || i, now(), 'said ' || i "
                "FROM generate_series(1, %s) i RETURNING seq",
                [state.id, state.id, count],
            )
        ]
    embedded = sorted(seqs)[:-100]
    vectors = unit(np.random.default_rng(2), len(embedded), 8)
    for start in range(0, len(embedded), 10_000):
        end = start + 10_000
        store.add_vectors(state.id, "message", embedded[start:end], vectors[start:end])
    with psycopg.connect(store.url, autocommit=True) as conn:
        conn.execute("ANALYZE")
    times = []
    for _ in range(20):
        started = time.perf_counter()
        pending = store.unembedded_messages(state.id, 512)
        times.append(time.perf_counter() - started)
    print(
        f"unembedded_messages, {count:,} messages, {len(pending)} without a vector: "
        f"p50 {statistics.median(times) * 1000:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a PostgreSQL server (default: a pgserver of its own)")
    parser.add_argument(
        "--database", help="a database this script filled before: measure it again, as it is"
    )
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memgpt-pgbench-") as folder:
        server = None
        if args.url is None:
            import pgserver

            server = pgserver.get_server(Path(folder), cleanup_mode="stop")
        url = args.database or new_database(args.url or server.get_uri())
        with PostgresStore(url) as store:
            print(f"{sum(SIZES):,} vectors of {args.dimension} dimensions, {len(SIZES)} agents")
            agents = stored(store, args.dimension) if args.database else fill(store, args.dimension)
            biggest = next(iter(agents))
            time_loads(store, biggest, args.dimension)
            explain(store, agents, args.dimension)
            time_nearest(store, agents, args.dimension, args.queries)
            time_unembedded(store, 100_000)
        if server is not None:
            server.cleanup()


if __name__ == "__main__":
    main()
