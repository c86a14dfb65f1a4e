"""The schema that migrations produce, and the store's behaviour on bad input."""

from __future__ import annotations

import ctypes
import json
import os
import random
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path

import pytest
from sqlite_utils import Database
from support.backends import undo_agent_names_per_owner
from support.contract.agents import protocol_members

from memgpt_lite import Agent, Store, StoreError
from memgpt_lite.models import AgentState, Block, LLMConfig, Message, Passage
from memgpt_lite.storage.core.words import fts_words
from memgpt_lite.storage.protocol import Ranking
from memgpt_lite.storage.sqlite.connect import file_problem
from memgpt_lite.storage.sqlite.fulltext import fts_any
from memgpt_lite.storage.sqlite.migrations import migrations


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
        "conversation_id",
    ]
    assert list(store.db["blocks"].columns_dict) == [
        "id",
        "label",
        "value",
        "char_limit",
        "description",
        "read_only",
        "updated_at",
        "owner",
    ]
    assert list(store.db["passages"].columns_dict) == [
        "seq",
        "id",
        "agent_id",
        "text",
        "tags",
        "created_at",
        "text_hash",
        "context",
        "superseded_by",
        "superseded_at",
    ]
    assert list(store.db["vectors"].columns_dict) == [
        "rowid",
        "agent_id",
        "owner",
        "item_seq",
        "vector",
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
        "messages_edit_update",
        "messages_edit_delete",
        "agents_edit_delete",
    }
    applied = [m.name for m in migrations.applied(store.db)]
    assert applied == [
        "m001_initial",
        "m002_full_text_search",
        "m003_counters",
        "m004_memory_pressure",
        "m005_archival_search",
        "m006_passage_context",
        "m007_timeout_default",
        "m008_step_locks",
        "m009_message_edits",
        "m010_token_usage",
        "m011_users_and_api_keys",
        "m012_passage_supersession",
        "m013_block_history",
        "m014_reflected_seq",
        "m015_tool_registry",
        "m016_admin_keys",
        "m017_tool_tags",
        "m018_agent_names_per_owner",
        "m019_letta_runs",
        "m020_sent_requests",
        "m021_block_owner",
        "m022_conversations",
        "m023_letta_run_streams",
        "m024_agent_groups",
        "m025_display_names_repeat",
        "m026_identities",
        "m027_providers",
        "m028_archives",
        "m029_group_members",
        "m030_step_feedback",
    ]
    assert list(store.db["message_edits"].columns_dict) == ["stamp", "agent_id"]
    assert list(store.db["api_keys"].columns_dict) == [
        "id",
        "user",
        "key_hash",
        "created_at",
        "revoked_at",
        "admin",
    ]
    assert store.db["agents"].columns_dict["owner"] is str
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


def test_query_words_are_quoted_plain_words():
    assert fts_words('say "hi" OR bye*') == ["say", "hi", "bye"]
    assert fts_words("what did she say about the cat?") == ["say", "cat"]
    assert fts_words("what is it") == ["what", "is", "it"]  # only stop words: keep them
    assert fts_words("!!! ---") == []
    assert fts_any(["say", "hi"]) == '"say" OR "hi"'


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
    store.rank_passages(state.id, "p", 5)
    store.rank_passages_in_period(state.id, "p", 5, period=(date(2026, 1, 1), None), period_limit=2)
    store.db.conn.set_trace_callback(None)
    # The joins of messages or passages with their full-text index.
    selects = [
        s for s in statements if s.lstrip().upper().startswith(("SELECT", "WITH")) and "JOIN" in s
    ]
    assert len(selects) == 3
    for sql in selects:
        plan = [row[3] for row in store.db.execute("EXPLAIN QUERY PLAN " + sql)]
        scans = [step for step in plan if step.startswith("SCAN ")]
        # Only the index and subqueries over it are scanned; rows are fetched by seq.
        assert any("_fts VIRTUAL TABLE" in step for step in scans), (sql, plan)
        base_tables = ("SCAN p", "SCAN m", "SCAN passages", "SCAN messages")
        assert not any(s.split(" USING")[0] in base_tables for s in scans), (sql, plan)
        assert any(step.startswith("SEARCH ") and "rowid=?" in step for step in plan)


def common_word_texts(seed: int, common_share: float) -> list[str]:
    """600 texts: each of three common words in `common_share` of them, two of
    forty rare codes in each, some filler, and a unique word."""
    rng = random.Random(seed)
    rare = [f"zq{i}" for i in range(40)]
    texts = []
    for i in range(600):
        words = [w for w in ("apple", "river", "stone") if rng.random() < common_share]
        words += rng.sample(rare, 2) + ["filler"] * rng.randint(0, 8)
        rng.shuffle(words)
        texts.append(" ".join([*words, f"n{i}"]))
    return texts


def _store_with_common_words(tmp_path: Path) -> tuple[Store, AgentState]:
    """600 passages: three words in most of them, forty rare codes in a few each."""
    store = Store(tmp_path / "ranking.db")
    state = new_agent(store)
    store.add_passages([Passage(agent_id=state.id, text=t) for t in common_word_texts(7, 0.6)])
    return store, state


QUERIES = ["zq1 apple", "zq2 zq3 river stone", "zq5 apple river stone", "zq7 zq8 zq9 apple"]


def budgeted_ranking_is_true(everything: Ranking, ranking: Ranking, exact: int) -> bool:
    """Checks a budgeted ranking against the exhaustive one: a budget was
    applied, every score is the true one, and a proven top `exact` is the
    exhaustive top. Returns whether it was proven."""
    true_score = {item.seq: score for item, score in everything.scored}
    assert ranking.scored and ranking.total < everything.total
    for item, score in ranking.scored:
        assert score == pytest.approx(true_score[item.seq])
    if ranking.proven:
        top = [score for _, score in everything.scored[:exact]]
        assert [score for _, score in ranking.scored[:exact]] == pytest.approx(top)
    return ranking.proven


def test_budgeted_ranking_gives_true_scores_and_exact_order_when_proven(tmp_path):
    """Only passages holding the rarer words are scored, yet each gets its full
    BM25 score over all the words, and a proven ranking is FTS5's own."""
    store, state = _store_with_common_words(tmp_path)
    proven = 0
    for query in QUERIES:
        everything = store.rank_passages(state.id, query, 1000, budget=10**9)
        assert everything.proven and everything.total == len(everything.scored)
        ranking = store.rank_passages(state.id, query, 10, exact=3, budget=60)
        proven += budgeted_ranking_is_true(everything, ranking, exact=3)
    assert proven >= 2


def test_a_query_of_common_words_scores_their_newest_matches(tmp_path):
    store, state = _store_with_common_words(tmp_path)
    everything = store.rank_passages(state.id, "apple river", 1000, budget=10**9)
    ranking = store.rank_passages(state.id, "apple river", 10, budget=50)
    assert not ranking.proven and ranking.total == 50
    newest_apples = sorted(
        (p.seq for p, _ in everything.scored if "apple" in p.text.split()), reverse=True
    )[:50]
    assert {p.seq for p, _ in ranking.scored} <= set(newest_apples)
    true_score = {p.seq: score for p, score in everything.scored}
    for passage, score in ranking.scored:
        assert score == pytest.approx(true_score[passage.seq])


def test_a_ranking_that_misses_better_passages_is_not_claimed_proven(tmp_path):
    """The rare word is buried in long passages; short passages of common
    words outscore them. Scoring only the rare word's passages cannot be
    proven right, and is not."""
    store = Store(tmp_path / "a.db")
    state = new_agent(store)
    texts = [f"zeta {' '.join(['filler'] * 60)} n{i}" for i in range(2)]
    texts += [f"apple river stone n{i}" for i in range(60)]
    texts += [f"other words here n{i}" for i in range(140)]
    store.add_passages([Passage(agent_id=state.id, text=t) for t in texts])
    words = "zeta apple river stone"
    best = store.rank_passages(state.id, words, 1, budget=10**9).scored[0][0]
    assert "zeta" not in best.text
    ranking = store.rank_passages(state.id, words, 5, exact=1, budget=10)
    assert not ranking.proven
    assert {p.text.split()[0] for p, _ in ranking.scored} == {"zeta"}


def test_message_ranking_is_budgeted_like_passages(tmp_path):
    """Messages get the same budgeted ranking: true scores, FTS5's own order
    when proven, and the agent and step filters still applied."""
    store = Store(tmp_path / "m.db")
    sam, kim = new_agent(store, "sam"), new_agent(store, "kim")
    messages = []
    for i, text in enumerate(common_word_texts(11, 0.12)):
        owner = kim if i % 5 == 0 else sam
        step = "step-x" if i % 7 == 0 else None
        role = "user" if i % 2 else "assistant"
        messages.append(Message(agent_id=owner.id, role=role, content=text, step_id=step))
    store.add_messages(messages)
    proven = 0
    queries = ["zq1 apple", "zq2 zq3 river", "zq4 stone", "zq5 zq6 apple"]
    for words in queries:
        everything = store.rank_messages(sam.id, words, 1000, "step-x", budget=10**9)
        assert everything.proven and everything.total == len(everything.scored)
        assert {m.agent_id for m, _ in everything.scored} == {sam.id}
        assert all(m.step_id != "step-x" for m, _ in everything.scored)
        ranking = store.rank_messages(sam.id, words, 2, "step-x", budget=60)
        proven += budgeted_ranking_is_true(everything, ranking, exact=2)
    assert proven >= 2
    # Paging: the second page follows the first.
    first, total = store.search_messages(sam.id, "zq1 apple", 3)
    second, _ = store.search_messages(sam.id, "zq1 apple", 3, offset=3)
    ranked = store.rank_messages(sam.id, "zq1 apple", 6).scored
    assert [m.seq for m in first + second] == [m.seq for m, _ in ranked]
    assert total >= 6


def test_a_database_from_a_newer_version_is_refused(tmp_path):
    path = tmp_path / "a.db"
    Store(path).close()
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
            "VALUES ('memgpt_lite', 'm042_from_the_future', '2030-01-01')"
        )
    conn.close()
    with pytest.raises(StoreError) as caught:
        Store(path)
    known = max(int(m.name[1:4]) for m in migrations.pending(Database(memory=True)))
    assert str(caught.value) == (
        f"{path} was written by a newer memgpt_lite: schema 42, this version knows {known}; "
        "upgrade memgpt_lite"
    )


def test_a_full_disk_is_one_line_and_loses_nothing(tmp_path):
    path = tmp_path / "a.db"
    store = Store(path)
    state = new_agent(store)
    store.add_passage(Passage(agent_id=state.id, text="stored before"))
    pages = store.db.execute("PRAGMA page_count").fetchone()[0]
    store.db.execute(f"PRAGMA max_page_count = {pages}")  # as if the disk were full
    big = [Passage(agent_id=state.id, text=f"passage {i} " + "word " * 500) for i in range(20)]
    with pytest.raises(StoreError) as caught:
        store.add_passages(big)
    assert str(caught.value) == f"the disk holding {path} is full; nothing was changed"
    assert store.agent_stats(state.id).passage_count == 1
    store.db.execute(f"PRAGMA max_page_count = {2**30}")  # space was freed
    store.add_passages(big)
    assert store.agent_stats(state.id).passage_count == 21
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_an_sql_mistake_is_not_mistaken_for_a_file_problem(tmp_path):
    store = Store(tmp_path / "a.db")
    with pytest.raises(sqlite3.OperationalError) as caught:
        store.db.execute("SELECT no_such_column FROM agents")
    assert file_problem(store.path, caught.value) is None
    with pytest.raises(sqlite3.OperationalError), store.transaction():
        store.db.execute("INSERT INTO no_such_table VALUES (1)")


def without_root_powers() -> None:
    """For a child process: as root, give up bypassing file permissions (root
    keeps them across exec otherwise), so it meets a read-only file as any
    user would."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


# Runs CLI commands in one process (one interpreter start for all of them).
CLI_RUNS = """
import json, sys
from click.testing import CliRunner
from memgpt_lite.cli.main import cli
results = []
for args in json.loads(sys.argv[1]):
    result = CliRunner().invoke(cli, args)
    crash = None if isinstance(result.exception, SystemExit | None) else repr(result.exception)
    results.append([result.exit_code, result.stdout, result.stderr, crash])
print(json.dumps(results))
"""

Run = tuple[int, str, str]


@pytest.fixture
def as_a_user(tmp_path: Path) -> Callable[..., list[Run]]:
    """Runs `memgpt-lite ARGS` for each ARGS, in a process without root's
    powers over files; returns (exit code, stdout, stderr) of each. Skips
    where that cannot be had (a root without CAP_SETPCAP)."""
    probe = tmp_path / "probe"
    probe.write_text("")
    probe.chmod(0o444)
    try:
        check = subprocess.run(
            [sys.executable, "-c", f"open({str(probe)!r}, 'w')"],
            preexec_fn=without_root_powers,
            capture_output=True,
        )
    except (OSError, subprocess.SubprocessError):
        pytest.skip("cannot run a process without root's powers over files")
    if check.returncode == 0:
        pytest.skip("this process may write read-only files")

    def run(*runs: Sequence[str], env: dict[str, str] | None = None) -> list[Run]:
        finished = subprocess.run(
            [sys.executable, "-c", CLI_RUNS, json.dumps([list(args) for args in runs])],
            capture_output=True,
            text=True,
            timeout=60,
            env=env or os.environ.copy(),
            preexec_fn=without_root_powers,
        )
        assert finished.returncode == 0, finished.stderr
        results = json.loads(finished.stdout)
        assert [crash for *_, crash in results] == [None] * len(runs)  # no traceback
        return [(code, out, err) for code, out, err, _ in results]

    return run


def read_only_db(tmp_path: Path) -> Path:
    db = tmp_path / "ro" / "state.db"
    agent = Agent.create("sam", "gpt-4o-mini", db=db)
    agent.archival.insert("The car is in the garage.", tags=["home"])
    agent.store.add_messages([Message(agent_id=agent.state.id, role="user", content="hi there")])
    agent.store.close()
    assert sorted(p.name for p in db.parent.iterdir()) == ["state.db"]  # no -wal, no -shm
    return db


READS = [
    ("agents",),
    ("show", "sam"),
    ("memory", "sam"),
    ("blocks", "sam"),
    ("archival", "sam", "list"),
    ("archival", "sam", "search", "garage"),
    ("export", "sam", "-o", "-"),
    ("context", "sam"),
]


@pytest.mark.parametrize("what", ["file", "folder"])
def test_a_read_only_database_serves_reads_and_refuses_writes_in_one_line(
    tmp_path, as_a_user, what
):
    db = read_only_db(tmp_path)
    read_only = db if what == "file" else db.parent
    read_only.chmod(0o444 if what == "file" else 0o555)
    writes = [("send", "sam", "hello"), ("archival", "sam", "insert", "more")]
    try:
        results = as_a_user(*[("--db", str(db), *args) for args in READS + writes])
    finally:
        read_only.chmod(0o755 if what == "folder" else 0o644)
    for args, (code, _, err) in zip(READS, results, strict=False):
        assert (code, err) == (0, ""), args
    assert "The car is in the garage." in results[READS.index(("archival", "sam", "list"))][1]
    for code, out, err in results[len(READS) :]:
        assert (code, out) == (1, "")
        assert err.startswith(f"Error: the database {db} is read-only")
        assert err.endswith("; nothing was changed\n") and err.count("\n") == 1
    assert user_contents(db) == ["hi there"]


def user_contents(db: Path) -> list[str | None]:
    with Store(db) as store:
        state = store.get_agent("sam")
        return [m.content for m in store.messages_from(state.id, 0) if m.role == "user"]


def test_a_read_only_database_that_needs_upgrading_says_so(tmp_path, as_a_user):
    db = read_only_db(tmp_path)
    undo_agent_names_per_owner(db)
    conn = sqlite3.connect(db)
    with conn:  # as written by the version before message edit stamps
        conn.execute("DROP TRIGGER messages_edit_update")
        conn.execute("DROP TRIGGER messages_edit_delete")
        conn.execute("DROP TRIGGER agents_edit_delete")
        conn.execute("DROP TABLE message_edits")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm009_message_edits'")
        conn.execute("DROP TABLE token_usage")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm010_token_usage'")
        conn.execute("DROP TABLE api_keys")
        conn.execute("DROP INDEX agents_owner")
        conn.execute("ALTER TABLE agents DROP COLUMN owner")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm011_users_and_api_keys'")
        conn.execute("DROP INDEX passages_superseded")
        conn.execute("ALTER TABLE passages DROP COLUMN superseded_by")
        conn.execute("ALTER TABLE passages DROP COLUMN superseded_at")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm012_passage_supersession'")
        conn.execute("DROP TABLE block_history")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm013_block_history'")
        conn.execute("ALTER TABLE agents DROP COLUMN reflected_seq")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm014_reflected_seq'")
        conn.execute("DROP TABLE tools")
        conn.execute("DROP TABLE mcp_servers")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm015_tool_registry'")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm016_admin_keys'")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm017_tool_tags'")
        conn.execute("DROP TABLE letta_runs")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm019_letta_runs'")
        conn.execute("DROP TABLE sent_requests")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm020_sent_requests'")
        conn.execute("DROP INDEX blocks_owner")
        conn.execute("ALTER TABLE blocks DROP COLUMN owner")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm021_block_owner'")
        conn.execute("DROP TABLE agent_group_members")
        conn.execute("DROP TABLE agent_groups")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm024_agent_groups'")
        conn.execute("DROP TABLE letta_run_chunks")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm023_letta_run_streams'")
        conn.execute("DROP TABLE conversation_step_locks")
        conn.execute("DROP INDEX messages_conversation")
        conn.execute("ALTER TABLE messages DROP COLUMN conversation_id")
        conn.execute("DROP TABLE conversations")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm022_conversations'")
        conn.execute("DROP TABLE identity_blocks")
        conn.execute("DROP TABLE identity_agents")
        conn.execute("DROP TABLE identities")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm026_identities'")
        conn.execute("DROP TABLE agent_archives")
        conn.execute("DROP TABLE archives")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm028_archives'")
        conn.execute("DROP TABLE providers")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm027_providers'")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm029_group_members'")
        conn.execute("DROP TABLE step_feedback")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm030_step_feedback'")
    conn.close()
    db.chmod(0o444)
    try:
        [(code, _, err)] = as_a_user(("--db", str(db), "agents"))
    finally:
        db.chmod(0o644)
    assert code == 1 and err.count("\n") == 1
    assert err.startswith(
        f"Error: the database {db} is read-only and needs upgrading from schema 8 to 30"
    )


def test_a_home_that_is_a_file_or_read_only_is_named_in_one_line(tmp_path, as_a_user):
    home = tmp_path / "home"
    home.write_text("not a folder")
    env = {**os.environ, "MEMGPT_LITE_HOME": str(home)}
    [(code, out, err)] = as_a_user(("agents",), env=env)
    assert (code, out) == (1, "")
    assert err == (
        f"Error: cannot open the database {home / 'memgpt_lite.db'}: "
        f"$MEMGPT_LITE_HOME ({home}) is a file, not a folder\n"
    )
    home.unlink()
    home.mkdir(mode=0o555)
    try:
        [(code, out, err)] = as_a_user(("agents",), env=env)
    finally:
        home.chmod(0o755)
    assert err == (
        f"Error: cannot open the database {home / 'memgpt_lite.db'}: "
        f"$MEMGPT_LITE_HOME ({home}) is read-only, so it cannot be created there\n"
    )


def test_every_storage_method_holds_the_stores_lock():
    """Threads share a store: each call runs alone (transactions, snapshots
    and busy_timeout hold the lock for their whole block themselves)."""
    holds_for_its_block = {"transaction", "snapshot", "busy_timeout"}
    no_database = {"in_transaction", "__enter__", "__exit__"}  # reads this thread's state
    unguarded = [
        name
        for name in protocol_members()
        if name not in holds_for_its_block | no_database
        and not getattr(getattr(Store, name), "guarded", False)
    ]
    assert unguarded == []
