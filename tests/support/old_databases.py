"""Databases made by an older memgpt_lite, kept as test data, so that a test
can open them with this one (tests/storage/test_storage_schema.py).

    python tests/support/old_databases.py --write

made tests/data/storage/old.db (SQLite) and old_postgres.sql (a plain-SQL
dump of a PostgreSQL database, `pg_dump --inserts`) with the storage code of
commit fee51e5, before storage was rebuilt on one core; do not write them
again with newer code, or they stop testing what they are for. `populate`
fills a store through the `Storage` protocol alone, with fixed ids and times;
tests/storage/test_storage_schema.py checks what a reader finds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from memgpt_lite.models import (
    AgentState,
    ApiKey,
    Block,
    LLMConfig,
    Message,
    Passage,
    ToolCall,
    UsageRecord,
)
from memgpt_lite.storage.protocol import StepLockHolder, Storage

# Computed here, not taken from paths.py: the module also runs as a script.
DATA = Path(__file__).resolve().parents[1] / "data" / "storage"
OLD_SQLITE = DATA / "old.db"
OLD_POSTGRES = DATA / "old_postgres.sql"
START = datetime(2025, 3, 1, 9, 30, tzinfo=UTC)
DIMENSION = 4


def at(minutes: int) -> datetime:
    return START + timedelta(minutes=minutes)


def vectors(count: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((count, DIMENSION)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def populate(store: Storage) -> None:
    """Two agents sharing a block, with messages, passages (one replaced),
    vectors, token usage, a step lock and two API keys (one revoked)."""
    shared = Block(id="block-human", label="human", value="Sam, a painter", updated_at=at(0))
    persona = Block(id="block-persona", label="persona", value="kind", updated_at=at(0))
    sam = AgentState(
        id="agent-sam",
        name="old-sam",
        llm=LLMConfig(model="gpt-4o-mini"),
        system="You are Sam's assistant.",
        tool_names=["send_message", "archival_memory_search"],
        created_at=at(0),
        updated_at=at(0),
    )
    kim = AgentState(
        id="agent-kim",
        name="old-kim",
        owner="kim",
        llm=LLMConfig(model="gpt-4o"),
        system="s",
        created_at=at(1),
        updated_at=at(1),
    )
    store.create_agent(sam, [persona, shared])
    store.create_agent(kim, [shared])
    shared.value = "Sam, a painter who moved to Lisbon"
    store.save_block(shared, author="agent-sam")

    def embedded(state: AgentState) -> None:
        state.embedding_model, state.embedding_dimension = "fake", DIMENSION
        state.summary = "Sam talked about tea."

    store.update_agent(sam.id, embedded)
    call = ToolCall(id="call-1", name="send_message", arguments='{"message": "Noted!"}')
    messages = [
        Message(id="msg-1", agent_id=sam.id, role="user", content="I like green tea",
                step_id="step-1", created_at=at(10)),
        Message(id="msg-2", agent_id=sam.id, role="assistant", content="thinking",
                tool_calls=[call], step_id="step-1", created_at=at(11)),
        Message(id="msg-3", agent_id=sam.id, role="tool", content='{"status": "OK"}',
                tool_call_id="call-1", name="send_message", step_id="step-1", created_at=at(12)),
    ]  # fmt: skip
    store.add_messages(messages)
    passages = [
        Passage(id="passage-cat", agent_id=sam.id, text="Sam's cat is named Miso",
                tags=["pets"], context="we talked about pets", created_at=at(20)),
        Passage(id="passage-porto", agent_id=sam.id, text="Sam lives in Porto",
                tags=["places", "home"], created_at=at(21)),
        Passage(id="passage-lisbon", agent_id=sam.id, text="Sam lives in Lisbon",
                tags=["places"], created_at=at(60 * 24 * 40)),
    ]  # fmt: skip
    store.add_passages(passages)
    store.supersede_passages(sam.id, ["passage-porto"], "passage-lisbon", at(60 * 24 * 40))
    store.add_vectors(sam.id, "passage", [p.seq for p in passages], vectors(3, seed=1))
    store.add_vectors(sam.id, "message", [messages[0].seq], vectors(1, seed=2))
    for model, prompt in (("gpt-4o-mini", 100), ("gpt-4o-mini", 120), ("gpt-4o", 50)):
        store.add_usage(
            UsageRecord(agent_id=sam.id, step_id="step-1", model=model, prompt_tokens=prompt,
                        completion_tokens=10, total_tokens=prompt + 10, created_at=at(13))
        )  # fmt: skip
    store.add_api_key(ApiKey(id="key-1", user="sam", key_hash="a" * 64, created_at=at(2)))
    store.add_api_key(ApiKey(id="key-2", user="kim", key_hash="b" * 64, created_at=at(3)))
    store.revoke_api_key("key-2")
    holder = StepLockHolder(token="old-token", pid=1, hostname="old-host", host_id="old-host-id")
    assert store.take_step_lock(kim.id, holder, 60.0, lambda _: False) is None


def _write() -> None:
    """Make both databases with the code of this checkout (see above)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for `support`
    from memgpt_lite.storage.open import open_storage
    from support.postgres_server import TestServer

    DATA.mkdir(parents=True, exist_ok=True)
    OLD_SQLITE.unlink(missing_ok=True)
    with open_storage(OLD_SQLITE) as store:
        populate(store)
    # One file: the WAL checkpointed into it.
    import sqlite3

    conn = sqlite3.connect(OLD_SQLITE)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    os.environ["MEMGPT_LITE_PG_VECTORS"] = "off"  # bytea: no pgvector needed to restore it
    server = TestServer()
    try:
        url = server.new_database()
        with open_storage(url) as store:
            populate(store)
        from memgpt_lite.storage.postgres.connect import close_pool

        close_pool(url)
        import pgserver

        pg_dump = Path(pgserver.__file__).parent / "pginstall" / "bin" / "pg_dump"
        dump = subprocess.run(
            [str(pg_dump), "--inserts", "--no-owner", "--no-privileges", "--dbname", url],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        OLD_POSTGRES.write_text(dump)
        server.drop(url)
    finally:
        server.stop()


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    _write()
