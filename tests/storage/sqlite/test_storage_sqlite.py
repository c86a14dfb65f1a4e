"""The storage contract (tests/support/contract/) run against the SQLite backend.
SQLite's own behaviour (schema, migrations, read-only files, a full disk,
WAL, FTS5 query plans) is tested in test_store.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.contract import OpenStore, StorageContract, sealing

from memgpt_lite.storage.open import open_storage
from memgpt_lite.storage.protocol import Storage


class TestSQLiteStorage(StorageContract):
    @pytest.fixture
    def open_store(self, tmp_path: Path) -> Iterator[OpenStore]:
        opened: list[Storage] = []

        def open_one() -> Storage:
            # With a secret, as the edges open stores: agents' keys are sealed.
            opened.append(open_storage(tmp_path / "contract.db", settings=sealing(tmp_path)))
            return opened[-1]

        yield open_one
        for store in opened:
            store.close()
