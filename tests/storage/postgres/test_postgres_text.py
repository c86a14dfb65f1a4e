"""PostgreSQL's full-text search, beyond the contract: BM25 as SQLite's FTS5
computes it, accents, stop words, the budget, and what writes keep for it
(word counts, vectors dropped with their items)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from memgpt_lite.models import AgentState, LLMConfig, Message, Passage
from memgpt_lite.storage.postgres.fulltext import (
    MAX_POSITIONS,
    plain_text,
    tsquery_of,
    word_count,
)
from memgpt_lite.storage.postgres.store import PostgresStore
from memgpt_lite.storage.protocol import Storage
from memgpt_lite.storage.sqlite.store import Store

VOCABULARY = [
    "apple",
    "pie",
    "river",
    "garage",
    "door",
    "running",
    "runs",
    "ran",
    "cafe",
    "café",
    "tea",
    "oolong",
    "meeting",
    "thursday",
    "green",
    "blue",
    "car",
    "parked",
    "music",
    "guitar",
    "the",
    "is",
    "a",
    "of",
    "and",
    "to",
    "in",
    "dog",
    "cat",
    "house",
    "naïve",
]
QUERIES = [
    "apple",
    "apple pie",
    "RUNNING cafe",
    "oolong tea thursday",
    "the is",
    "guitar music dog",
    "cafés parked garage door",
    "naive",
]


@pytest.fixture
def pg(pg_url: str) -> Iterator[PostgresStore]:
    store = PostgresStore(pg_url)
    yield store
    store.close()


def new_agent(store: Storage, name: str = "sam") -> AgentState:
    state = AgentState(name=name, llm=LLMConfig(model="gpt-4o-mini"), system="s")
    store.create_agent(state, [])
    return state


def corpus(seed: int = 4, size: int = 200) -> list[tuple[str, str]]:
    """(text, context) pairs of random words, some repeated within a row."""
    rng = random.Random(seed)

    def words(low: int, high: int) -> str:
        return " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(low, high)))

    return [(words(3, 30), words(0, 10)) for _ in range(size)]


def fill(store: Storage, rows: list[tuple[str, str]]) -> str:
    state = new_agent(store)
    store.add_passages([Passage(agent_id=state.id, text=t, context=c) for t, c in rows])
    store.add_messages([Message(agent_id=state.id, role="user", content=t) for t, _ in rows])
    return state.id


def rankings(store: Storage, agent_id: str, query: str) -> dict[str, tuple[list, list, int]]:
    """Per kind: the texts found (best first), their scores, and the total."""
    passages = store.rank_passages(agent_id, query, 25)
    messages = store.rank_messages(agent_id, query, 25)
    return {
        "passages": (
            [p.text for p, _ in passages.scored],
            [s for _, s in passages.scored],
            passages.total,
        ),
        "messages": (
            [m.content for m, _ in messages.scored],
            [s for _, s in messages.scored],
            messages.total,
        ),
    }


def test_bm25_ranks_and_scores_as_sqlite_does(pg: PostgresStore, tmp_path: Path):
    rows = corpus()
    sqlite = Store(tmp_path / "same.db")
    try:
        ids = fill(pg, rows), fill(sqlite, rows)
        for query in QUERIES:
            ours, theirs = rankings(pg, ids[0], query), rankings(sqlite, ids[1], query)
            for kind in ("passages", "messages"):
                assert ours[kind][0] == theirs[kind][0], (query, kind)
                assert ours[kind][2] == theirs[kind][2], (query, kind)
                assert ours[kind][1] == pytest.approx(theirs[kind][1], rel=1e-9), (query, kind)
    finally:
        sqlite.close()


def test_a_words_count_is_read_back_exactly_up_to_the_positions_kept(
    pg: PostgresStore, tmp_path: Path
):
    """tf comes from ts_rank through its float4 levels: every count must come
    back as itself, in the text and in the context (scores equal SQLite's)."""
    counts = [1, 2, 3, 7, 20, 64, 128, 200, MAX_POSITIONS]
    rows = [(f"row{i} " + "kiwi " * n, "kiwi " * (i % 4)) for i, n in enumerate(counts)]
    rows.append(("plum", "kiwi " * 3))
    sqlite = Store(tmp_path / "same.db")
    try:
        ids = fill(pg, rows), fill(sqlite, rows)
        ours, theirs = rankings(pg, ids[0], "kiwi"), rankings(sqlite, ids[1], "kiwi")
    finally:
        sqlite.close()
    for kind in ("passages", "messages"):
        assert ours[kind][0] == theirs[kind][0]
        assert ours[kind][1] == pytest.approx(theirs[kind][1], rel=1e-9)


def test_accents_are_ignored_both_ways(pg: PostgresStore):
    state = new_agent(pg)
    pg.add_messages(
        [
            Message(agent_id=state.id, role="user", content="Un café à Montréal"),
            Message(agent_id=state.id, role="user", content="a naive resume"),
        ]
    )
    assert [m.content for m in pg.search_messages(state.id, "cafe montreal", 5)[0]] == [
        "Un café à Montréal"
    ]
    assert [m.content for m in pg.search_messages(state.id, "naïve résumé", 5)[0]] == [
        "a naive resume"
    ]
    assert plain_text("Ångström ﬁsh") == "Angstrom fish"


def test_stop_words_are_indexed_and_searched_alone(pg: PostgresStore):
    state = new_agent(pg)
    pg.add_passages(
        [Passage(agent_id=state.id, text=t) for t in ["to be or not to be", "question"]]
    )
    found = pg.rank_passages(state.id, "not to be", 5)
    assert [p.text for p, _ in found.scored] == ["to be or not to be"]
    assert pg.rank_passages(state.id, "question the", 5).total == 1  # "the" left out


def test_a_broad_query_over_the_budget_is_not_proven(pg: PostgresStore):
    state = new_agent(pg)
    pg.add_passages([Passage(agent_id=state.id, text=f"common word n{i}") for i in range(30)])
    pg.add_passages([Passage(agent_id=state.id, text="common rare")])
    broad = pg.rank_passages(state.id, "common", 5, budget=10)
    assert not broad.proven and broad.total == 10  # the newest ten matches
    assert broad.scored[0][0].text == "common rare"  # the newest, shortest
    # "rare" chooses the candidates; "common" alone cannot score as high.
    exact = pg.rank_passages(state.id, "common rare", 5, budget=10, exact=1)
    assert exact.proven and exact.scored[0][0].text == "common rare"
    assert pg.rank_passages(state.id, "common", 5).proven  # within the default budget
    assert not pg.rank_passages(state.id, "common", 5, budget=10).proven  # counted past 10


def test_a_word_counted_to_the_budget_weighs_as_its_statistics_say(pg: PostgresStore):
    """Counting stops at the budget, but the IDF must be the word's: once the
    table is analyzed, a word in every passage scores as with no budget
    (next to nothing), not as a word in budget + 1 passages."""
    state = new_agent(pg)
    texts = [f"common filler n{i}" for i in range(200)]
    texts += ["common common common common plain", "rare common"]
    pg.add_passages([Passage(agent_id=state.id, text=t) for t in texts])
    query = "rare common"

    def scores(budget: int) -> list[tuple[str, float]]:
        ranked = pg.rank_passages(state.id, query, 3, budget=budget)
        return [(p.text, round(score, 9)) for p, score in ranked.scored]

    best = scores(10_000)[0]  # "rare" alone chooses the candidates under a budget
    assert best[0] == "rare common"
    assert scores(10)[0] != best  # before ANALYZE: "common" taken as in 11 passages
    with pg.transaction():
        pg.conn.execute("ANALYZE passages")
    assert scores(10)[0] == best


def test_scores_are_the_agents_own(pg: PostgresStore):
    """IDF and lengths are the agent's: another agent's passages change nothing."""
    sam = new_agent(pg, "sam")
    pg.add_passages([Passage(agent_id=sam.id, text=t) for t, _ in corpus(1, 40)])
    alone = pg.rank_passages(sam.id, "apple river", 10).scored
    kim = new_agent(pg, "kim")
    pg.add_passages([Passage(agent_id=kim.id, text=f"apple apple {i}") for i in range(50)])
    assert pg.rank_passages(sam.id, "apple river", 10).scored == alone


def test_counts_kept_for_a_word_follow_new_passages(pg: PostgresStore):
    state = new_agent(pg)
    pg.add_passages([Passage(agent_id=state.id, text=f"pear {i}") for i in range(3)])
    pg.add_passages([Passage(agent_id=state.id, text=f"plum {i}") for i in range(20)])
    first = pg.rank_passages(state.id, "pear", 10)
    pg.add_passage(Passage(agent_id=state.id, text="pear again"))
    again = pg.rank_passages(state.id, "pear", 10)
    assert (first.total, again.total) == (3, 4)
    assert again.scored[0][1] != first.scored[0][1]  # the IDF moved with the count


def test_word_counts_follow_every_write(pg: PostgresStore, pg_url: str):
    state = new_agent(pg)
    messages = [Message(agent_id=state.id, role="user", content=f"one two {i}") for i in range(3)]
    pg.add_messages(messages)
    pg.add_messages(
        [Message(agent_id=state.id, role="tool", content="not searched", tool_call_id="c")]
    )
    pg.update_message(messages[0].model_copy(update={"content": "just one"}))
    pg.delete_messages_from(state.id, messages[2].seq or 0)
    kept = Passage(agent_id=state.id, text="a b c", context="d e")
    dropped = Passage(agent_id=state.id, text="f g")
    assert pg.add_passages([kept, dropped, Passage(agent_id=state.id, text=" a b c ")]) == [
        True,
        True,
        False,
    ]
    pg.delete_passage(state.id, dropped.id)
    with psycopg.connect(pg_url) as conn:
        row = conn.execute(
            "SELECT message_count, message_tokens, passage_count, passage_tokens FROM agents "
            "WHERE id = %s",
            [state.id],
        ).fetchone()
        sums = conn.execute(
            "SELECT (SELECT sum(search_length) FROM messages), "
            "(SELECT sum(search_length) FROM passages)"
        ).fetchone()
    assert row == (2, 2 + 3, 1, 5)  # the tool result went with messages[2]
    assert tuple(sums) == (5, 5)
    assert word_count("it's a dog_house!") == 4


def test_deleting_and_editing_drop_vectors_and_count_them(pg: PostgresStore, pg_url: str):
    state = new_agent(pg)
    messages = [Message(agent_id=state.id, role="user", content=f"m{i}") for i in range(3)]
    pg.add_messages(messages)
    stored = Passage(agent_id=state.id, text="p")
    pg.add_passage(stored)
    with psycopg.connect(pg_url) as conn:
        kind = conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'vectors'::regclass AND attname = 'vector'"
        ).fetchone()[0]
        value = "'[1,2]'::vector" if kind != "bytea" else "'\\x00'::bytea"
        items = [("message", m.seq) for m in messages] + [("passage", stored.seq)]
        for owner, seq in items:
            conn.execute(
                f"INSERT INTO vectors (agent_id, owner, item_seq, dimension, vector) "
                f"VALUES (%s, %s, %s, 2, {value})",
                [state.id, owner, seq],
            )
    pg.update_message(messages[0].model_copy(update={"content": "edited"}))
    pg.delete_messages_from(state.id, messages[2].seq or 0)
    pg.delete_passage(state.id, stored.id)
    with psycopg.connect(pg_url) as conn:
        left = conn.execute("SELECT owner, item_seq FROM vectors").fetchall()
        deletes = conn.execute(
            "SELECT vector_deletes FROM agents WHERE id = %s", [state.id]
        ).fetchone()[0]
    assert left == [("message", messages[1].seq)] and deletes == 3


def test_a_lexeme_is_quoted_into_a_tsquery_that_matches_only_it(pg_url: str):
    with psycopg.connect(pg_url) as conn:
        for lexeme in ["it's", "back\\slash", "a & b | !c", "'"]:
            query = conn.execute("SELECT %s::tsquery::text", [tsquery_of(lexeme)]).fetchone()[0]
            vector = conn.execute("SELECT array_to_tsvector(ARRAY[%s])::text", [lexeme]).fetchone()
            assert query == vector[0]


def test_a_batch_of_thousands_is_stored_in_order(pg: PostgresStore):
    state = new_agent(pg)
    batch = [
        Passage(agent_id=state.id, text=f"passage {i}", tags=[f"t{i % 3}"]) for i in range(5000)
    ]
    assert all(pg.add_passages(batch))
    seqs = [p.seq for p in batch]
    assert seqs == sorted(seqs) and len(set(seqs)) == 5000
    assert pg.agent_stats(state.id).passage_count == 5000
    assert pg.list_passages(state.id, 1, tags=["t1"])[1] == 1667
