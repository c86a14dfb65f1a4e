"""The storage contract (tests/contract/) run against the PostgreSQL backend,
on a real server (tests/postgres_server.py). PostgreSQL's own behaviour
(migrations under concurrency, errors about the server, pgvector) is tested
in test_postgres.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from contract import OpenStore, StorageContract

from memgpt_lite.storage.postgres.store import PostgresStore
from memgpt_lite.storage.protocol import Storage


class TestPostgresStorage(StorageContract):
    @pytest.fixture
    def open_store(self, pg_url: str) -> Iterator[OpenStore]:
        opened: list[Storage] = []

        def open_one() -> Storage:
            opened.append(PostgresStore(pg_url))
            return opened[-1]

        yield open_one
        for store in opened:
            store.close()
