"""The storage contract (tests/support/contract/) run against the PostgreSQL backend,
on a real server (tests/support/postgres_server.py). PostgreSQL's own behaviour
(migrations under concurrency, errors about the server, pgvector) is tested
in test_postgres.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.contract import OpenStore, StorageContract, sealing
from support.contract.agents import protocol_members
from support.contract.base import new_agent

from memgpt_lite.storage.postgres.store import PostgresStore
from memgpt_lite.storage.protocol import Storage


class TestPostgresStorage(StorageContract):
    @pytest.fixture
    def open_store(self, pg_url: str, tmp_path: Path) -> Iterator[OpenStore]:
        opened: list[Storage] = []

        def open_one() -> Storage:
            # With a secret, as the edges open stores: agents' keys are sealed.
            opened.append(PostgresStore(pg_url, settings=sealing(tmp_path)))
            return opened[-1]

        yield open_one
        for store in opened:
            store.close()


def test_every_storage_method_holds_the_stores_lock():
    """Threads share a store: each call runs alone, on the connection it took
    (transactions, snapshots, busy_timeout and rollback_interrupted hold the
    lock for their whole block themselves)."""
    holds_for_its_block = {"transaction", "snapshot", "busy_timeout", "rollback_interrupted"}
    no_database = {"in_transaction", "__enter__", "__exit__"}  # reads this thread's state
    unguarded = [
        name
        for name in protocol_members()
        if name not in holds_for_its_block | no_database
        and not getattr(getattr(PostgresStore, name, None), "guarded", False)
    ]
    assert unguarded == []


def test_stores_share_the_process_pool_and_hold_no_connection_between_calls(pg_url):
    """Forty stores (an agent each) use the pool's few connections, taking
    one only for a call or a transaction."""
    from memgpt_lite.storage.postgres.connect import POOL_MAX_SIZE, pool

    stores = [PostgresStore(pg_url) for _ in range(4 * POOL_MAX_SIZE)]
    for i, store in enumerate(stores):
        new_agent(store, name=f"agent-{i}")
    with stores[0].transaction():
        assert len(stores[1].list_agents()) == 4 * POOL_MAX_SIZE  # another connection
    assert pool(pg_url).get_stats()["pool_size"] <= POOL_MAX_SIZE
    assert all(store._conn is None for store in stores)
    taken = pool(pg_url).get_stats()["requests_num"]
    for store in stores:
        store.close()  # nothing to give back: takes no connection to do nothing
    assert pool(pg_url).get_stats()["requests_num"] == taken


def test_commits_skip_the_disk_flush_unless_the_url_asks_for_it(pg_url):
    from memgpt_lite.storage.postgres.connect import pool

    strict = pg_url + ("&" if "?" in pg_url else "?") + "options=-c%20synchronous_commit%3Don"
    for url, expected in ((pg_url, "off"), (strict, "on")):
        PostgresStore(url).close()
        with pool(url).connection() as conn:
            assert conn.execute("SHOW synchronous_commit").fetchone()[0] == expected
