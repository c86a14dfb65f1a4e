"""PostgreSQL's own behaviour, on a real server (tests/support/postgres_server.py):
migrations under concurrency, one-line errors about the server, read-only
databases, and vectors with and without pgvector (the storage contract runs
in test_storage_postgres.py)."""

from __future__ import annotations

import logging
import multiprocessing
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import psycopg
import pytest
from support.postgres_server import with_database

from memgpt_lite.errors import ReadOnlyError, StoreError
from memgpt_lite.models import AgentState, Block, LLMConfig
from memgpt_lite.settings.resolve import resolve_settings
from memgpt_lite.settings.values import PG_VECTORS_ENV
from memgpt_lite.storage.postgres import store as store_module
from memgpt_lite.storage.postgres.connect import close_pool
from memgpt_lite.storage.postgres.migrations import MIGRATIONS
from memgpt_lite.storage.postgres.store import PostgresStore
from memgpt_lite.storage.protocol import VectorSearch

DIMENSION = 8
_names = iter(range(10**6))


def new_agent(store: PostgresStore, name: str = "sam") -> AgentState:
    state = AgentState(name=name, llm=LLMConfig(model="gpt-4o-mini"), system="s")
    store.create_agent(state, [Block(label="persona", value="p")])
    return state


def unit_vectors(count: int, dimension: int = DIMENSION, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((count, dimension)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture
def empty_url(pg_server) -> Iterator[str]:
    """A new database with no schema at all (not copied from the template)."""
    name = f"memgpt_empty_{pg_server._run}_{next(_names)}"
    with psycopg.connect(pg_server.url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = with_database(pg_server.url, name)
    yield url
    pg_server.drop(url)


@pytest.fixture
def pgvector(pg_server) -> None:
    """Skips a test of pgvector's HNSW search where the server cannot run it
    (see TestServer._hnsw_works)."""
    if not pg_server.hnsw_works:
        pytest.skip("this server's pgvector cannot build HNSW indexes on this CPU")


@pytest.fixture
def store(pg_url: str) -> Iterator[PostgresStore]:
    opened = PostgresStore(pg_url)
    yield opened
    opened.close()


# Migrations


def _open_and_close(url: str) -> str:
    """In a spawned process: open (so migrate) the database, with the settings
    of its environment, as the command line would; '' or the error."""
    try:
        PostgresStore(url, settings=resolve_settings().storage).close()
    except StoreError as exc:
        return str(exc)
    return ""


def test_ten_processes_opening_a_new_database_migrate_it_once(empty_url):
    with multiprocessing.get_context("spawn").Pool(10) as processes:
        errors = processes.map(_open_and_close, [empty_url] * 10)
    assert errors == [""] * 10
    with psycopg.connect(empty_url) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM memgpt_lite_migrations")]
    assert names == [name for name, _ in MIGRATIONS]


def test_a_database_from_a_newer_version_is_refused_in_one_line(pg_url):
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("INSERT INTO memgpt_lite_migrations (name) VALUES ('m999_from_the_future')")
    with pytest.raises(StoreError) as refused:
        PostgresStore(pg_url)
    message = str(refused.value)
    assert "\n" not in message and "newer memgpt_lite" in message and "schema 999" in message


# One-line errors about the server


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _assert_one_line(url: str, *names: str) -> str:
    with pytest.raises(StoreError) as failed:
        PostgresStore(url)
    message = str(failed.value)
    assert "\n" not in message and "s3cret-pw" not in message, message
    for name in names:
        assert name in message, message
    return message


def test_an_unreachable_server_is_one_line_naming_host_and_database():
    port = _closed_port()
    url = f"postgresql://memgpt:s3cret-pw@127.0.0.1:{port}/notes"
    _assert_one_line(url, f"127.0.0.1:{port}", '"notes"')


def test_a_refused_login_is_one_line_without_the_password(pg_server, pg_url):
    """The pgserver test server listens on a Unix socket with `trust`
    authentication, so no password is checked there: an unknown role is
    refused instead (with the password in the URL, which must not show)."""
    parts = urlsplit(pg_url)
    netloc = "ghost:s3cret-pw@" + parts.netloc.rsplit("@", 1)[-1]
    url = urlunsplit(parts._replace(netloc=netloc))
    message = _assert_one_line(url, "ghost", urlsplit(pg_url).path.lstrip("/"))
    assert "cannot use PostgreSQL" in message


def test_a_missing_database_is_one_line(pg_server):
    url = with_database(pg_server.url, "no_such_database")
    _assert_one_line(url, '"no_such_database"', "does not exist")


def test_a_read_only_database_serves_reads_and_refuses_writes(pg_server, pg_url, pgvector):
    with PostgresStore(pg_url) as writer:
        state = new_agent(writer)
        writer.add_vectors(state.id, "passage", [1, 2], unit_vectors(2))
    # As a new process would open it: new connections see the database's new
    # default, and nothing found at the first opening is kept.
    close_pool(pg_url)
    store_module._prepared.pop(pg_url, None)
    name = urlsplit(pg_url).path.lstrip("/")
    with psycopg.connect(pg_server.url, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    with PostgresStore(pg_url) as reader:
        assert reader.read_only
        assert reader.get_agent("sam").id == state.id
        assert reader.load_vectors(state.id, "passage", 0, DIMENSION).seqs.tolist() == [1, 2]
        assert reader.nearest_vectors(state.id, "passage", unit_vectors(1)[0], 1).ranked
        with pytest.raises(ReadOnlyError, match="read-only"):
            new_agent(reader, "kim")
        with pytest.raises(ReadOnlyError):
            reader.add_vectors(state.id, "passage", [3], unit_vectors(1))


# Vectors


def test_a_replaced_vector_counts_as_a_delete_and_an_insert(store):
    state = new_agent(store)
    first, second = unit_vectors(2, seed=1), unit_vectors(1, seed=2)
    store.add_vectors(state.id, "passage", [1, 2], first)
    loaded = store.load_vectors(state.id, "passage", 0, DIMENSION)
    store.add_vectors(state.id, "passage", [2], second)
    assert tuple(store.vector_counters(state.id)) == (3, 1)
    since = store.load_vectors(state.id, "passage", loaded.cursor, DIMENSION)
    assert since.seqs.tolist() == [2] and np.array_equal(since.matrix, second)
    every = store.load_vectors(state.id, "passage", 0, DIMENSION)
    assert every.seqs.tolist() == [1, 2] and np.array_equal(every.matrix[1], second[0])
    store.delete_vectors(state.id)
    assert tuple(store.vector_counters(state.id)) == (3, 3)


def _indexes(store: PostgresStore) -> set[str]:
    with psycopg.connect(store.url) as conn:
        rows = conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'vectors'")
        return {row[0] for row in rows}


def test_the_first_vectors_of_a_dimension_make_its_hnsw_index(store, pgvector):
    assert store.server_vectors and isinstance(store, VectorSearch)
    state = new_agent(store)
    assert not {"vectors_hnsw_8", "vectors_hnsw_16"} & _indexes(store)
    store.add_vectors(state.id, "passage", [1], unit_vectors(1))
    other = new_agent(store, "kim")
    store.add_vectors(other.id, "message", [1], unit_vectors(1, 16))
    assert {"vectors_hnsw_8", "vectors_hnsw_16"} <= _indexes(store)


def _exact(vectors: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    return [int(i) + 1 for i in np.argsort(-(vectors @ query), kind="stable")[:k]]


def test_nearest_vectors_are_the_agents_own_with_exact_similarities(store, pgvector):
    state, other = new_agent(store), new_agent(store, "kim")
    mine = unit_vectors(300, seed=3)
    store.add_vectors(state.id, "passage", list(range(1, 301)), mine)
    store.add_vectors(state.id, "message", list(range(1, 301)), unit_vectors(300, seed=4))
    store.add_vectors(other.id, "passage", list(range(301, 1301)), unit_vectors(1000, seed=5))
    query = unit_vectors(1, seed=6)[0]
    found = store.nearest_vectors(state.id, "passage", query, 10, also=[7, 8, 900])
    assert len(set(found.ranked) & set(_exact(mine, query, 10))) >= 9
    assert found.ranked == sorted(found.ranked, key=lambda s: -found.similarity[s])
    assert 900 not in found.similarity  # another agent's item
    for seq in [*found.ranked, 7, 8]:
        assert found.similarity[seq] == pytest.approx(float(mine[seq - 1] @ query), abs=1e-5)


def test_a_small_agent_among_big_ones_gets_its_exact_nearest(store, pgvector):
    for n, name in enumerate(["big1", "big2", "big3"]):
        big = new_agent(store, name)
        seqs = list(range(10_000 * (n + 1), 10_000 * (n + 1) + 4000))
        store.add_vectors(big.id, "passage", seqs, unit_vectors(4000, seed=10 + n))
    small = new_agent(store, "small")
    vectors = unit_vectors(40, seed=20)
    store.add_vectors(small.id, "passage", list(range(1, 41)), vectors)
    with psycopg.connect(store.url, autocommit=True) as conn:
        conn.execute("ANALYZE vectors")
    for seed in range(5):
        query = unit_vectors(1, seed=30 + seed)[0]
        assert store.nearest_vectors(small.id, "passage", query, 10).ranked == _exact(
            vectors, query, 10
        )


def _add_items(store: PostgresStore, agent_id: str, count: int) -> tuple[list[int], list[int]]:
    """Passages and searchable messages written by SQL, as the store writes them."""
    with psycopg.connect(store.url, autocommit=True) as conn:
        passages = [
            row[0]
            for row in conn.execute(
                "INSERT INTO passages (id, agent_id, text, text_hash, created_at, search_vector) "
                "SELECT 'p' || i || %s, %s, 'text ' || i, md5(i::text || %s), now(), "
                "to_tsvector('text') FROM generate_series(1, %s) i RETURNING seq",
                [agent_id, agent_id, agent_id, count],
            )
        ]
        messages = [
            row[0]
            for row in conn.execute(
                "INSERT INTO messages (id, agent_id, role, content, created_at, search_text) "
                "SELECT 'm' || i || %s, %s, 'user', 'said ' || i, now(), "
                "CASE WHEN i %% 2 = 0 THEN NULL ELSE 'said ' || i END "
                "FROM generate_series(1, %s) i RETURNING seq",
                [agent_id, agent_id, count],
            )
        ]
    return sorted(passages), sorted(messages)


def test_unembedded_items_are_those_without_a_vector(store):
    state, other = new_agent(store), new_agent(store, "kim")
    passages, messages = _add_items(store, state.id, 6)
    _add_items(store, other.id, 3)
    store.add_vectors(state.id, "passage", passages[:2], unit_vectors(2))
    assert [p.seq for p in store.unembedded_passages(state.id, 3)] == passages[2:5]
    searchable = messages[::2]  # the odd ones have search text
    store.add_vectors(state.id, "message", searchable[:1], unit_vectors(1))
    assert store.unembedded_messages(state.id, 10) == [
        (seq, f"said {messages.index(seq) + 1}") for seq in searchable[1:]
    ]


def test_without_pgvector_vectors_are_bytes_and_the_notice_is_given_once_when_made(
    empty_url, monkeypatch, caplog
):
    monkeypatch.setenv(PG_VECTORS_ENV, "off")
    settings = resolve_settings().storage  # as an edge resolves the variable
    with caplog.at_level(logging.WARNING, logger="memgpt_lite.storage.postgres.store"):
        first = PostgresStore(empty_url, settings=settings)
        second = PostgresStore(empty_url, settings=settings)
    from memgpt_lite.storage.postgres import store as store_module

    monkeypatch.setattr(store_module, "_prepared", {})  # as another process opens it
    with caplog.at_level(logging.WARNING, logger="memgpt_lite.storage.postgres.store"):
        PostgresStore(empty_url, settings=settings).close()
    notices = [r.getMessage() for r in caplog.records if "pgvector" in r.getMessage()]
    assert len(notices) == 1 and "searched in this process" in notices[0]
    assert not first.server_vectors and not second.server_vectors
    state = new_agent(first)
    vectors = unit_vectors(3)
    first.add_vectors(state.id, "passage", [1, 2, 3], vectors)
    loaded = second.load_vectors(state.id, "passage", 0, DIMENSION)
    assert np.array_equal(loaded.matrix, vectors)
    from memgpt_lite.memory.retrieval.vector_index import VectorIndex

    index = VectorIndex(second, state.id, "passage", DIMENSION)
    assert index.search(vectors[1], 1).ranked == [2]
    assert not _indexes(first) & {"vectors_hnsw_8"}
    with pytest.raises(NotImplementedError):
        first.nearest_vectors(state.id, "passage", vectors[0], 1)
    first.close()
    second.close()
