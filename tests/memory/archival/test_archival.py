"""Archival memory: chunking, dedupe, filters, paging, hybrid search and
embedders, through the real store and the fake server's /v1/embeddings. The
tests of what the store does (dedupe, filters, paging, ranking, vectors, all
or nothing) run against SQLite and PostgreSQL (`db_location`)."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from support.backends import open_db

from memgpt_lite import Agent, ConfigError, LLMError, NotFoundError, Passage
from memgpt_lite.cli.main import cli
from memgpt_lite.embeddings.embedder import EmbeddingMismatchError, EndpointEmbedder, make_embedder
from memgpt_lite.llm.tokens import TokenCounter
from memgpt_lite.memory.archival.chunks import chunk_text
from memgpt_lite.memory.retrieval.fusion import VECTOR_WEIGHT, combine
from memgpt_lite.memory.retrieval.search import passage_vectors
from memgpt_lite.testing import call, drop, error, reply, say


class SynonymEmbedder:
    """A user-supplied embedder whose space knows that a car is an automobile:
    a meaning BM25 cannot see, so a hybrid hit proves the vector side works."""

    GROUPS = [{"car", "automobile", "vehicle"}, {"cat", "kitten", "feline"}, {"rain", "storm"}]

    def __init__(self, name: str = "test:synonyms", dimension: int = 8) -> None:
        self.name, self.dimension, self.calls = name, dimension, 0

    def embed(self, texts):
        self.calls += 1
        rows = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in zip(rows, texts, strict=True):
            words = set(re.findall(r"\w+", text.lower()))
            for i, group in enumerate(self.GROUPS):
                row[i] = len(words & group)
            row[-1] = 0.1  # every text has some direction
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def make_agent(tmp_path, **kwargs) -> Agent:
    return make_agent_in(tmp_path / "a.db", **kwargs)


def make_agent_in(db: str | Path, **kwargs) -> Agent:
    return Agent.create("sam", "gpt-4o-mini", db=db, **kwargs)


def test_chunking_keeps_every_word_and_respects_the_size():
    counter = TokenCounter("gpt-4o-mini")
    paragraphs = [" ".join(f"word{p}_{i}." for i in range(n)) for p, n in enumerate([5, 400, 30])]
    text = "\n\n".join(paragraphs)
    chunks = chunk_text(counter, text, max_tokens=100)
    assert len(chunks) > 3
    assert all(counter.count_text(c) <= 110 for c in chunks)
    assert " ".join(chunks).split() == text.split()
    assert chunk_text(counter, "short note") == ["short note"]
    unbroken = "x" * 5000  # no sentence or paragraph break at all
    assert "".join(chunk_text(counter, unbroken, max_tokens=50)) == unbroken


def test_insert_dedupes_and_reports(db_location):
    agent = make_agent_in(db_location)
    first = agent.archival.insert("Alice's sister is called Beth.", tags=["family"])
    again = agent.archival.insert("  Alice's sister is called Beth.  ")
    assert len(first.stored) == 1 and again.stored == []
    assert again.duplicates == [first.stored[0].id]
    assert agent.archival.count() == 1
    with pytest.raises(ConfigError, match="empty"):
        agent.archival.insert("   ")


def test_list_get_delete_and_filters(db_location):
    agent = make_agent_in(db_location)
    days = [datetime(2026, 1, d, 12, tzinfo=UTC) for d in (1, 2, 3)]
    ids = [
        agent.archival.insert(f"note {i} about the garden", tags=tags, created_at=day).stored[0].id
        for i, (tags, day) in enumerate(zip([["a"], ["b"], ["a", "b"]], days, strict=True))
    ]
    listed, total = agent.archival.list()
    assert total == 3 and [p.id for p in listed] == ids[::-1]
    assert {p.id for p in agent.archival.list(tags=["a"])[0]} == {ids[0], ids[2]}
    found, total = agent.archival.search("garden", tags=["b"])
    assert total == 2 and {p.id for p in found} == {ids[1], ids[2]}
    found, _ = agent.archival.search("garden", start=date(2026, 1, 2), end=date(2026, 1, 2))
    assert [p.id for p in found] == [ids[1]]
    page0, total = agent.archival.search("garden", limit=2)
    page1, _ = agent.archival.search("garden", limit=2, offset=2)
    assert total == 3 and len(page0) == 2 and len(page1) == 1
    assert {p.id for p in page0 + page1} == set(ids)
    assert agent.archival.get(ids[1]).tags == ["b"]
    agent.archival.delete(ids[1])
    with pytest.raises(NotFoundError):
        agent.archival.get(ids[1])
    with pytest.raises(NotFoundError):
        agent.archival.delete(ids[1])
    assert agent.archival.count() == 2


def test_tools_take_tags_and_dates_and_show_id_time_tags(fake_llm, db_location):
    agent = make_agent_in(db_location)
    fake_llm.enqueue(
        reply(
            tool_calls=[
                call(
                    "archival_memory_insert",
                    content="Beth likes tulips",
                    tags=["family"],
                    request_heartbeat=True,
                )
            ]
        ),
        reply(
            tool_calls=[
                call("archival_memory_insert", content="Beth likes tulips", request_heartbeat=True)
            ]
        ),
        reply(
            tool_calls=[
                call(
                    "archival_memory_search",
                    query="what does beth like?",
                    tags=["family"],
                    start_date="2000-01-01",
                    end_date="2999-12-31",
                    request_heartbeat=True,
                )
            ]
        ),
        reply(
            tool_calls=[
                call(
                    "archival_memory_search",
                    query="tulips",
                    start_date="june",
                    request_heartbeat=True,
                )
            ]
        ),
        say("tulips"),
    )
    results = agent.step("remember and recall").tool_results
    assert results[0].content.startswith("Saved 1 passage(s) to archival memory: passage-")
    assert "Skipped 1 passage(s) already stored word for word" in results[1].content
    assert re.search(
        r"\[\d{4}-\d\d-\d\d \d\d:\d\d UTC\] \(passage-\w+\) tags: family\n"
        r"  Beth likes tulips",
        results[2].content,
    )
    assert "start_date must be a date as YYYY-MM-DD" in results[3].content
    assert fake_llm.rejections == []


def test_combine_normalises_and_weighs_both_sides():
    # BM25 is divided by the best score; similarities are min-max normalised
    # over the items of both sides and count VECTOR_WEIGHT.
    assert VECTOR_WEIGHT == 0.4
    lexical = {1: 10.0, 2: 5.0}
    similarity = {1: 0.0, 2: 1.0, 3: 0.9}
    # 1: 1.0 + 0.4 * 0.0 = 1.0;  2: 0.5 + 0.4 * 1.0 = 0.9;  3: 0 + 0.4 * 0.9 = 0.36
    assert combine(lexical, similarity) == [1, 2, 3]
    # Words about as good: the vectors decide. Similarities 0.6 to 0.9 span
    # the scale: 1: 1.0 + 0.4 * 0.0 = 1.0;  2: 0.9 + 0.4 * 1.0 = 1.3.
    assert combine({1: 10.0, 2: 9.0}, {1: 0.6, 2: 0.9, 3: 0.8}) == [2, 1, 3]
    assert combine({}, {4: 0.2, 5: 0.3}) == [5, 4]
    assert combine({6: 3.0}, {}) == [6]


def test_context_is_searched_but_not_shown(db_location):
    agent = make_agent_in(db_location)
    agent.archival.insert_many(
        [
            Passage(
                agent_id=agent.state.id,
                text="Yes, it was wonderful!",
                context="Melanie: How was the pottery class?",
            ),
            Passage(agent_id=agent.state.id, text="Pottery is messy.", context=""),
        ]
    )
    found, total = agent.archival.search("pottery class")
    assert total == 2
    assert [p.text for p in found] == ["Pottery is messy.", "Yes, it was wonderful!"]
    assert found[1].context == "Melanie: How was the pottery class?"
    assert agent.archival.search("wonderful")[0][0].text == "Yes, it was wonderful!"


def test_later_chunks_carry_the_end_of_the_previous_one(tmp_path):
    agent = make_agent(tmp_path)
    text = "\n\n".join(f"Paragraph {i} " + "about gardens " * 60 for i in range(4))
    stored = agent.archival.insert(text).stored
    assert len(stored) > 1 and stored[0].context == ""
    assert all(p.context and p.context in stored[i].text for i, p in enumerate(stored[1:]))


def test_hybrid_search_finds_what_words_alone_miss(db_location, another_db_location):
    embedder = SynonymEmbedder()
    agent = make_agent_in(db_location, embedder=embedder)
    agent.archival.insert("My car is red and fast.")
    agent.archival.insert("The weather report promised sun.")
    assert agent.state.embedding_model == "test:synonyms" and agent.state.embedding_dimension == 8
    found, _ = agent.archival.search("automobile")
    assert [p.text for p in found][:1] == ["My car is red and fast."]
    plain = make_agent_in(another_db_location)
    plain.archival.insert("My car is red and fast.")
    assert plain.archival.search("automobile") == ([], 0)


# Two replies alike in words: what each answers is in its context.
REPLIES = [
    ("Yes, it was wonderful!", "How was the drive in your new automobile?"),
    ("Yes, it was lovely!", "Did the kitten sleep well?"),
]


def test_a_passages_vector_is_its_texts_alone(db_location):
    # Leaning it toward its context was retired (docs/benchmarks.md): the
    # context is found by words only.
    agent = make_agent_in(db_location, embedder=SynonymEmbedder())
    passages = [Passage(agent_id=agent.state.id, text=t, context=c) for t, c in REPLIES]
    vectors = passage_vectors(agent.runner, passages)
    assert np.allclose(vectors, SynonymEmbedder().embed([t for t, _ in REPLIES]))
    agent.archival.insert_many(passages)
    found, _ = agent.archival.search("kitten", limit=1)
    assert found[0].text == REPLIES[1][0]  # by its context's words


def test_passages_stored_before_an_embedder_are_backfilled(db_location):
    agent = make_agent_in(db_location)
    agent.archival.insert("A kitten slept on the sofa.")
    embedder = SynonymEmbedder()
    agent.set_embedder(embedder)
    found, _ = agent.archival.search("feline")
    assert [p.text for p in found] == ["A kitten slept on the sofa."]
    # Reopened in another "process": the stored vectors are used, not recomputed.
    again = Agent.load("sam", db=db_location, embedder=SynonymEmbedder())
    assert again.archival.search("feline")[0][0].text == "A kitten slept on the sofa."
    assert again.embedder.calls == 1  # only the query was embedded


def test_embedder_mismatch_is_refused_until_reembedded(db_location):
    agent = make_agent_in(db_location, embedder=SynonymEmbedder())
    agent.archival.insert("storm warning tonight")
    with pytest.raises(EmbeddingMismatchError, match="has vectors from test:synonyms"):
        Agent.load("sam", db=db_location, embedder=SynonymEmbedder("test:other"))
    with pytest.raises(EmbeddingMismatchError, match="8 dimensions"):
        Agent.load("sam", db=db_location, embedder=SynonymEmbedder(dimension=16))
    agent = Agent.load("sam", db=db_location)
    assert agent.archival.reembed(SynonymEmbedder("test:other", dimension=16)) == 1
    assert (agent.state.embedding_model, agent.state.embedding_dimension) == ("test:other", 16)
    # "tonight" gains its date (memory/retrieval/dates.py)
    assert agent.archival.search("rain")[0][0].text.startswith("storm warning tonight [")


@pytest.mark.parametrize("query", ['"', "NEAR(", "AND OR", "*", "-x", "a:b", "日本語", "", "  "])
def test_hostile_queries_with_an_embedder(db_location, query):
    agent = make_agent_in(db_location, embedder=SynonymEmbedder())
    agent.archival.insert("NEAR the car park")
    found, total = agent.archival.search(query)
    assert total >= len(found)


def test_endpoint_embedder_batches_and_retries(fake_llm, tmp_path):
    embedder = EndpointEmbedder(
        "text-embedding-3-small",
        base_url=fake_llm.base_url,
        api_key=fake_llm.api_key,
        batch_size=2,
        max_retries=1,
    )
    fake_llm.enqueue_embeddings(error(429, "slow down", headers={"Retry-After": "0"}))
    vectors = embedder.embed(["one", "two", "three", "four", "five"])
    assert vectors.shape == (5, 64) and embedder.dimension == 64
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert fake_llm.embedding_inputs_seen == 5
    assert [len(r["input"]) for r in fake_llm.embedding_requests] == [2, 2, 2, 1]
    assert embedder.embed([]).shape[0] == 0


def test_endpoint_embedder_error_is_the_endpoints_own_message(fake_llm):
    embedder = EndpointEmbedder(
        "text-embedding-3-small",
        base_url=fake_llm.base_url,
        api_key=fake_llm.api_key,
        max_retries=0,
    )
    fake_llm.enqueue_embeddings(error(400, "model not loaded"))
    with pytest.raises(LLMError) as caught:
        embedder.embed(["x"])
    assert str(caught.value).endswith("answered 400: model not loaded")


def test_endpoint_embedder_end_to_end_and_outage(fake_llm, db_location):
    agent = make_agent_in(
        db_location, embedder="endpoint:text-embedding-3-small", llm_options={"max_retries": 0}
    )
    assert agent.state.settings.embedder == "endpoint:text-embedding-3-small"
    agent.archival.insert("The walking trail by the river.")
    assert agent.state.embedding_model == "endpoint:text-embedding-3-small"
    # The endpoint goes down: the passage is still stored, and searched by words.
    agent = Agent.load("sam", db=db_location)
    agent.embedder.max_retries = 0
    fake_llm.enqueue_embeddings(drop(), drop())
    agent.archival.insert("Walked to the river twice.")
    assert agent.archival.count() == 2
    found, _ = agent.archival.search("river walks")
    assert len(found) == 2
    # Back up: the missing vector is filled in at the next search.
    stats_before = fake_llm.embedding_inputs_seen
    agent.archival.search("river")
    assert fake_llm.embedding_inputs_seen == stats_before + 2  # the backfill and the query


def test_conversation_search_is_hybrid_with_an_embedder(fake_llm, db_location):
    agent = make_agent_in(db_location, embedder=SynonymEmbedder())
    fake_llm.enqueue(say("Lovely, a new kitten!"))
    agent.step("We adopted a cat yesterday")
    fake_llm.enqueue(
        reply(tool_calls=[call("conversation_search", query="feline", request_heartbeat=False)])
    )
    result = agent.step("what pet did we get?")
    content = result.tool_results[0].content
    assert "user: We adopted a cat yesterday" in content
    assert "what pet did we get" not in content  # the current step is left out


def test_unknown_embedder_spec():
    with pytest.raises(ConfigError, match="unknown embedder 'word2vec'"):
        make_embedder("word2vec")


def test_cli_archival_commands(tmp_path, fake_llm, db_location):
    runner = CliRunner()

    def run(*args, input=None):
        result = runner.invoke(cli, ["--db", db_location, *args], input=input)
        assert result.exit_code == 0, result.output
        return result.output

    run("create", "sam", "--model", "gpt-4o-mini")
    assert "stored passage-" in run(
        "archival", "sam", "insert", "Tulips bloom in April", "--tag", "garden"
    )
    assert "skipped: already stored as passage-" in run(
        "archival", "sam", "insert", "Tulips bloom in April"
    )
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("Roses need sun.\n\nFerns like shade.")
    (folder / "b.txt").write_text("Tulips bloom in April")
    (folder / "skip.bin").write_bytes(b"\x00\x01")
    assert "2 files: 1 passages stored, 1 duplicates skipped" in run(
        "archival", "sam", "load", str(folder)
    )
    listed = run("archival", "sam", "list", "--tag", "garden")
    assert "Tulips bloom in April" in listed and "(1 shown of 1)" in listed
    found = run("archival", "sam", "search", "shade")
    assert "Roses need sun." in found and "file:a.md" in found
    passage_id = re.search(r"(passage-\w+)", listed).group(1)
    assert passage_id in run("archival", "sam", "get", passage_id)
    kept = runner.invoke(
        cli, ["--db", db_location, "archival", "sam", "delete", passage_id], input="n\n"
    )
    assert kept.exit_code == 1 and "Nothing was deleted." in kept.output
    assert passage_id in run("archival", "sam", "get", passage_id)
    assert "deleted" in run("archival", "sam", "delete", passage_id, "--yes")
    missing = runner.invoke(cli, ["--db", db_location, "archival", "sam", "get", passage_id])
    assert missing.exit_code == 1 and "no passage" in missing.output
    no_embedder = runner.invoke(cli, ["--db", db_location, "archival", "sam", "reembed"])
    assert no_embedder.exit_code == 1 and "no embedder" in no_embedder.output
    out = run("archival", "sam", "reembed", "--embedder", "endpoint:text-embedding-3-small")
    assert "re-embedded 1 passages with endpoint:text-embedding-3-small" in out
    assert json.loads(json.dumps(fake_llm.embedding_requests[0]))["model"] == (
        "text-embedding-3-small"
    )
    with open_db(db_location) as store:  # the database named, not a file named like it
        assert [stats.passage_count for _, stats in store.list_agents()] == [1]


def long_text(parts: int) -> str:
    return "\n\n".join(
        f"Part {i}: " + " ".join(f"fact{i}_{j} is notable." for j in range(120))
        for i in range(parts)
    )


def test_an_insert_that_fails_part_way_in_a_step_keeps_none_of_it(fake_llm, tmp_path):
    """The disk fills up in the middle of a long insert by the model: its
    first passages must not stay while the tool reports failure."""
    agent = make_agent(tmp_path)
    text = long_text(12)
    assert len(chunk_text(agent.runner.token_counter, text)) > 20
    fake_llm.enqueue(
        reply(tool_calls=[call("archival_memory_insert", content=text, request_heartbeat=True)]),
        say("I could not save it."),
    )
    pages = agent.store.db.execute("PRAGMA page_count").fetchone()[0]
    agent.store.db.execute(f"PRAGMA max_page_count = {pages + 8}")
    result = agent.step("remember all this")
    assert agent.archival.count() == 0
    outcome = result.tool_results[0]
    assert not outcome.ok and "is full; nothing was changed" in outcome.content
    assert result.replies == ["I could not save it."]


class LateDimensionEmbedder(SynonymEmbedder):
    """Like an endpoint: its dimension is known only from its first answer."""

    def __init__(self, name: str, dimension: int) -> None:
        super().__init__(name, dimension)
        self.answers_with, self.dimension = dimension, None

    def embed(self, texts):
        self.dimension = self.answers_with
        self.dimension, vectors = None, super().embed(texts)
        self.dimension = self.answers_with
        return vectors


def test_an_insert_whose_embedding_is_refused_stores_nothing(db_location):
    make_agent_in(db_location, embedder=SynonymEmbedder("test:late")).archival.insert(
        "rain at noon"
    )
    # The same embedder's name, another dimension: found out only after embedding.
    agent = Agent.load("sam", db=db_location, embedder=LateDimensionEmbedder("test:late", 16))
    with pytest.raises(EmbeddingMismatchError, match="8 dimensions"):
        agent.archival.insert(long_text(3))
    assert agent.archival.count() == 1


def test_a_load_is_all_or_nothing(tmp_path, db_location):
    agent = make_agent_in(db_location, embedder=SynonymEmbedder())
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.txt").write_text("The car is in the garage.")
    (folder / "b.md").write_bytes(b"caf\xe9 latin-1, not UTF-8")
    (folder / "c.txt").write_text("The cat sleeps.")
    with pytest.raises(ConfigError) as caught:
        agent.archival.load_path(folder)
    assert agent.archival.count() == 0
    assert str(caught.value) == f"{folder / 'b.md'} is not UTF-8 text; nothing was loaded"
    Agent.create("bob", "gpt-4o-mini", db=db_location)
    result = CliRunner().invoke(cli, ["--db", db_location, "archival", "bob", "load", str(folder)])
    assert result.exit_code == 1
    assert (
        result.output.strip() == f"Error: {folder / 'b.md'} is not UTF-8 text; nothing was loaded"
    )

    (folder / "b.md").write_text("Storm tonight.")
    assert agent.archival.load_path(folder) == (3, 3, 0)
    # Embedded in the same transaction: the vectors are there.
    assert [p.text for p in agent.archival.search("automobile")[0]][
        0
    ] == "The car is in the garage."
    assert agent.store.vector_counters(agent.state.id) == (3, 0)
