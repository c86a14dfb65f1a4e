"""The schema is the migrations' and never changes under them: a new database
gets exactly the schema of the snapshot taken from the migrations as they
shipped (tests/support/storage_schema.py), and a database made by an older
memgpt_lite (tests/support/old_databases.py) opens and works, on both backends."""

from __future__ import annotations

import json
import shutil
from datetime import date

import numpy as np
import psycopg
import pytest
from sqlite_utils import Database
from support.old_databases import DIMENSION, OLD_POSTGRES, OLD_SQLITE, at, vectors
from support.postgres_server import with_database
from support.storage_schema import (
    POSTGRES_SNAPSHOT,
    SQLITE_SNAPSHOT,
    postgres_schema,
    sqlite_rows,
    sqlite_schema,
)

from memgpt_lite.models import ApiKey, Message, Passage, UsageRecord
from memgpt_lite.storage.open import open_storage
from memgpt_lite.storage.postgres.connect import close_pool
from memgpt_lite.storage.protocol import Storage
from memgpt_lite.storage.sqlite.migrations import migrations

_names = iter(range(10**6))


def test_a_new_sqlite_database_has_the_schema_of_the_snapshot(tmp_path):
    open_storage(tmp_path / "new.db").close()
    assert sqlite_schema(tmp_path / "new.db") == json.loads(SQLITE_SNAPSHOT.read_text())


def test_a_new_sqlite_database_is_what_the_migrations_make_one_by_one(tmp_path):
    # A new file gets every migration at once (sqlite/new_database.py); an
    # older one, each migration it lacks in turn.
    open_storage(tmp_path / "new.db").close()
    stepwise = Database(tmp_path / "stepwise.db")
    stepwise.execute("PRAGMA foreign_keys = OFF")
    migrations.apply(stepwise)
    stepwise.close()
    assert sqlite_schema(tmp_path / "new.db") == sqlite_schema(tmp_path / "stepwise.db")
    assert sqlite_rows(tmp_path / "new.db") == sqlite_rows(tmp_path / "stepwise.db")


def test_a_new_postgres_database_has_the_schema_of_the_snapshot(pg_url):
    assert postgres_schema(pg_url) == json.loads(POSTGRES_SNAPSHOT.read_text())


@pytest.fixture
def old_postgres(pg_server) -> str:
    """A database restored from the dump of one an older memgpt_lite made
    (its SET lines and psql commands left out: they need a server as new as
    the one that dumped it, and configure nothing the restore needs)."""
    name = f"memgpt_old_{pg_server._run}_{next(_names)}"
    with psycopg.connect(pg_server.url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = with_database(pg_server.url, name)
    script = "\n".join(
        line
        for line in OLD_POSTGRES.read_text().splitlines()
        if not line.startswith(("\\", "SET ", "SELECT pg_catalog.set_config"))
    )
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(script)
    yield url
    close_pool(url)
    pg_server.drop(url)


def test_a_sqlite_database_from_before_opens_and_works(tmp_path):
    path = tmp_path / "old.db"
    shutil.copy(OLD_SQLITE, path)
    with open_storage(path) as store:
        reads_what_was_stored(store)
        writes_more(store)
    assert sqlite_schema(path) == json.loads(SQLITE_SNAPSHOT.read_text())


def test_a_postgres_database_from_before_opens_and_works(old_postgres):
    with open_storage(old_postgres) as store:
        reads_what_was_stored(store)
        writes_more(store)
    schema = postgres_schema(old_postgres)
    assert schema == json.loads(POSTGRES_SNAPSHOT.read_text())


def reads_what_was_stored(store: Storage) -> None:
    sam = store.get_agent("old-sam")
    assert (sam.id, sam.owner, sam.summary, sam.embedding_dimension) == (
        "agent-sam",
        "local",
        "Sam talked about tea.",
        DIMENSION,
    )
    assert sam.block_ids == ["block-persona", "block-human"]
    assert sam.created_at == at(0)
    assert [a.name for a, _ in store.list_agents()] == ["old-kim", "old-sam"]
    stats = store.agent_stats(sam.id)
    assert (stats.message_count, stats.passage_count, stats.last_active) == (3, 3, at(12))
    assert store.block_owners("block-human") == ["old-kim", "old-sam"]
    history = store.block_history("block-human")
    assert [(v.value, v.author) for v in history] == [
        ("Sam, a painter", "create"),
        ("Sam, a painter who moved to Lisbon", "agent-sam"),
    ]
    window = store.messages_from(sam.id, 0)
    assert [m.id for m in window] == ["msg-1", "msg-2", "msg-3"]
    assert window[1].tool_calls[0].arguments == '{"message": "Noted!"}'
    assert window[2].created_at == at(12)
    assert store.search_messages(sam.id, "tea", 5)[0][0].id == "msg-1"
    current, total = store.list_passages(sam.id, 10, superseded=False)
    assert ([p.id for p in current], total) == (["passage-lisbon", "passage-cat"], 2)
    porto = store.get_passage(sam.id, "passage-porto")
    assert (porto.superseded_by, porto.superseded_at) == ("passage-lisbon", at(60 * 24 * 40))
    assert porto.tags == ["places", "home"]
    in_march = store.list_passages(sam.id, 10, tags=["places"], start=date(2025, 3, 1),
                                   end=date(2025, 3, 31))[0]  # fmt: skip
    assert [p.id for p in in_march] == ["passage-porto"]
    ranked = store.rank_passages(sam.id, "cat Miso", 5).scored
    assert [p.id for p, _ in ranked] == ["passage-cat"]
    loaded = store.load_vectors(sam.id, "passage", 0, DIMENSION)
    assert np.allclose(loaded.matrix, vectors(3, seed=1))
    assert store.vector_counters(sam.id).inserts == 4
    assert [(u.model, u.prompt_tokens) for u in store.usage_by_model(sam.id)] == [
        ("gpt-4o", 50),
        ("gpt-4o-mini", 220),
    ]
    assert store.api_key_by_hash("b" * 64).revoked_at is not None
    assert [k.id for k in store.list_api_keys()] == ["key-1", "key-2"]
    assert store.step_lock_holder("agent-kim").token == "old-token"


def writes_more(store: Storage) -> None:
    sam = store.get_agent("old-sam")
    added = [Message(agent_id=sam.id, role="user", content="and oolong too")]
    store.add_messages(added)
    assert added[0].seq > max(m.seq for m in store.messages_from(sam.id, 0)[:-1])
    assert store.add_passage(Passage(agent_id=sam.id, text="Sam drinks oolong"))
    assert store.add_passage(Passage(agent_id=sam.id, text="Sam's cat is named Miso")) is False
    store.add_usage(UsageRecord(agent_id=sam.id, step_id="step-2", model="gpt-4o"))
    store.add_api_key(ApiKey(user="sam", key_hash="c" * 64))
    store.update_agent(sam.id, lambda state: setattr(state, "summary", "more tea"))
    assert store.get_agent(sam.id).summary == "more tea"
    assert [m.content for m in store.search_messages(sam.id, "oolong", 5)[0]] == ["and oolong too"]
    assert store.agent_stats(sam.id).passage_count == 4
    store.delete_agent("agent-kim")
    assert store.block_owners("block-human") == ["old-sam"]
