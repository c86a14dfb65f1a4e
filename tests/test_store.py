"""The schema that migrations produce, and the store's behaviour on bad input."""

from __future__ import annotations

import sqlite3
from datetime import UTC, date, datetime, timedelta

import pytest

from memgpt_lite import AlreadyExistsError, NotFoundError, Store, StoreError
from memgpt_lite.migrations import migrations
from memgpt_lite.models import AgentState, Block, LLMConfig, Message, Passage
from memgpt_lite.store import fts_query


def new_agent(store: Store, name: str = "sam") -> AgentState:
    state = AgentState(name=name, llm=LLMConfig(model="gpt-4o-mini"), system="s")
    store.create_agent(state, [Block(label="persona", value="p"), Block(label="human")])
    return state


def test_migrations_build_the_expected_schema(tmp_path):
    store = Store(tmp_path / "a.db")
    tables = set(store.db.table_names())
    assert {
        "agents",
        "blocks",
        "agent_blocks",
        "messages",
        "passages",
        "messages_fts",
        "passages_fts",
        "_sqlite_migrations",
    } <= tables
    assert list(store.db["messages"].columns_dict) == [
        "seq",
        "id",
        "agent_id",
        "role",
        "content",
        "tool_calls",
        "tool_call_id",
        "name",
        "step_id",
        "created_at",
        "search_text",
    ]
    assert list(store.db["blocks"].columns_dict) == [
        "id",
        "label",
        "value",
        "char_limit",
        "description",
        "read_only",
        "updated_at",
    ]
    assert list(store.db["passages"].columns_dict) == [
        "seq", "id", "agent_id", "text", "tags", "created_at", "text_hash", "context",
    ]
    assert list(store.db["vectors"].columns_dict) == [
        "rowid", "agent_id", "owner", "item_seq", "vector",
    ]
    assert {"embedding_model", "embedding_dimension", "vector_inserts", "vector_deletes"} <= set(
        store.db["agents"].columns_dict
    )
    assert store.db["agents"].columns_dict["message_count"] is int
    assert {t.name for t in store.db.triggers} >= {
        "messages_count_insert",
        "messages_count_delete",
        "passages_count_insert",
        "passages_count_delete",
    }
    applied = [m.name for m in migrations.applied(store.db)]
    assert applied == [
        "m001_initial",
        "m002_full_text_search",
        "m003_counters",
        "m004_memory_pressure",
        "m005_archival_search",
        "m006_passage_context",
    ]
    assert store.db["agents"].columns_dict["pressure_warned"] is int
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()
    # Opening again applies nothing twice.
    again = Store(tmp_path / "a.db")
    assert [m.name for m in migrations.applied(again.db)] == applied


def test_not_a_database_is_a_clear_error_and_the_file_is_untouched(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n" * 100)
    before = path.read_bytes()
    with pytest.raises(StoreError, match="cannot open .*notes.db as a memgpt_lite database"):
        Store(path)
    assert path.read_bytes() == before


def test_duplicate_agent_name(tmp_path):
    store = Store(tmp_path / "a.db")
    new_agent(store)
    with pytest.raises(AlreadyExistsError, match="'sam' already exists"):
        new_agent(store)
    assert len(store.list_agents()) == 1
    assert store.db["blocks"].count == 2  # the failed create left nothing behind


def test_unknown_agent(tmp_path):
    with pytest.raises(NotFoundError, match="no agent named 'ghost'"):
        Store(tmp_path / "a.db").get_agent("ghost")


def test_delete_agent_keeps_blocks_another_agent_shares(tmp_path):
    store = Store(tmp_path / "a.db")
    shared = Block(label="team", value="t")
    one, two = (AgentState(name=n, llm=LLMConfig(model="m"), system="s") for n in ("one", "two"))
    store.create_agent(one, [shared, Block(label="own")])
    store.create_agent(two, [shared])
    store.add_messages([Message(agent_id=one.id, role="user", content="hi")])
    store.delete_agent(one.id)
    assert store.db["messages"].count == 0
    assert [b.label for b in store.get_blocks(two.id)] == ["team"]
    assert store.db["blocks"].count == 1


def test_counts_follow_inserts(tmp_path):
    store = Store(tmp_path / "a.db")
    state = new_agent(store)
    store.add_messages([Message(agent_id=state.id, role="user", content=f"m{i}") for i in range(3)])
    store.add_passage(Passage(agent_id=state.id, text="a passage"))
    stats = store.agent_stats(state.id)
    assert (stats.message_count, stats.passage_count) == (3, 1)
    assert stats.memory_updated_at is not None and stats.last_active is not None


def test_transaction_rolls_back_everything_on_error(tmp_path):
    store = Store(tmp_path / "a.db")
    state = new_agent(store)
    with pytest.raises(RuntimeError), store.transaction():
        store.add_messages([Message(agent_id=state.id, role="user", content="lost")])
        store.add_passage(Passage(agent_id=state.id, text="lost too"))
        raise RuntimeError("crash")
    stats = store.agent_stats(state.id)
    assert (stats.message_count, stats.passage_count) == (0, 0)


HOSTILE = [
    '"unbalanced',
    "AND",
    "OR NOT",
    "NEAR(a b)",
    "a*",
    "col:value",
    "-minus",
    "((",
    ")",
    "café",
    "日本語",
    "emoji 🙂",
    "",
    "   ",
    "'; DROP TABLE messages; --",
    "^start",
    "a + b",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_raise(tmp_path, query):
    store = Store(tmp_path / "a.db")
    state = new_agent(store)
    store.add_messages([Message(agent_id=state.id, role="user", content="a café in 日本語 land")])
    store.add_passage(Passage(agent_id=state.id, text="NEAR the café, col value"))
    found, total = store.search_messages(state.id, query, 5)
    assert total == len(found)
    if (match := fts_query(query)) is not None:
        store.rank_passages(state.id, match, 5)


def test_search_finds_stemmed_and_accented_words(tmp_path):
    store = Store(tmp_path / "a.db")
    state = new_agent(store)
    store.add_messages(
        [
            Message(agent_id=state.id, role="user", content="I went running at the café"),
            Message(
                agent_id=state.id, role="tool", content="running tool output", tool_call_id="c"
            ),
        ]
    )
    found, total = store.search_messages(state.id, "RUNS cafe", 5)
    assert total == 1 and found[0].content == "I went running at the café"


def test_fts_query_quotes_every_word():
    assert fts_query('say "hi" OR bye*') == '"say" OR "hi" OR "bye"'
    assert fts_query("what did she say about the cat?") == '"say" OR "cat"'
    assert fts_query("what is it") == '"what" OR "is" OR "it"'  # only stop words: keep them
    assert fts_query("!!! ---") is None


def test_messages_between_pages_by_day(tmp_path):
    store = Store(tmp_path / "a.db")
    state = new_agent(store)
    day = datetime(2026, 3, 1, 23, 30, tzinfo=UTC)
    store.add_messages(
        [
            Message(
                agent_id=state.id,
                role="user",
                content=f"day {i}",
                created_at=day + timedelta(days=i),
            )
            for i in range(4)
        ]
    )
    found, total = store.messages_between(state.id, date(2026, 3, 2), date(2026, 3, 3), limit=1)
    assert total == 2 and [m.content for m in found] == ["day 1"]
    found, _ = store.messages_between(state.id, date(2026, 3, 2), date(2026, 3, 3), 1, offset=1)
    assert [m.content for m in found] == ["day 2"]


def test_concurrent_store_connections_wait_for_the_lock(tmp_path):
    first = Store(tmp_path / "a.db")
    second = Store(tmp_path / "a.db", busy_timeout_seconds=0.2)
    state = new_agent(first)
    with first.transaction():
        first.add_passage(Passage(agent_id=state.id, text="held"))
        with pytest.raises(StoreError, match="is busy"):
            second.add_passage(Passage(agent_id=state.id, text="blocked"))
    second.add_passage(Passage(agent_id=state.id, text="after"))
    assert second.agent_stats(state.id).passage_count == 2


def test_raw_sqlite_sees_valid_json(tmp_path):
    store = Store(tmp_path / "a.db")
    state = new_agent(store)
    conn = sqlite3.connect(tmp_path / "a.db")
    row = conn.execute("SELECT json_valid(llm), json_valid(settings) FROM agents").fetchone()
    assert row == (1, 1)
    assert store.get_agent(state.id).name == "sam"


def test_searches_start_from_the_full_text_index(tmp_path):
    """With a plain JOIN SQLite scans every message of the agent and probes the
    index per row; the plan must start from the FTS match instead."""
    store = Store(tmp_path / "a.db")
    state = new_agent(store)
    store.add_messages(
        [Message(agent_id=state.id, role="user", content=f"m{i}") for i in range(50)]
    )
    store.add_passage(Passage(agent_id=state.id, text="p"))
    statements: list[str] = []
    store.db.conn.set_trace_callback(statements.append)
    store.search_messages(state.id, "m1 m2", 5)
    store.rank_passages(state.id, fts_query("p"), 5)
    store.db.conn.set_trace_callback(None)
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(selects) == 4
    for sql in selects:
        plan = [row[3] for row in store.db.execute("EXPLAIN QUERY PLAN " + sql)]
        assert plan[0].startswith("SCAN ") and "_fts VIRTUAL TABLE" in plan[0], (sql, plan)
