"""Facts that change: an archival passage can replace older ones, which are
kept and marked; the insert tool shows close passages that may now be out of
date; search puts current facts first. Through the real Agent, its tools and
the store, on both backends (`db_location`), with a fake model."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from memgpt_lite import Agent
from memgpt_lite.agentfile.native import import_agent, store_agent_file, write_agent_file
from memgpt_lite.agentfile.schema import AgentFileError
from memgpt_lite.cli.main import cli
from memgpt_lite.errors import NotFoundError
from memgpt_lite.storage.copy import copy_database
from memgpt_lite.testing import call, reply, say
from memgpt_lite.testing.embeddings import fake_embedding
from memgpt_lite.testing.model import FunctionModel, ScriptedModel

SCRIPTED: dict[int, ScriptedModel] = {}


def make_agent(db: str, model: Any = None) -> Agent:
    if model is None:
        model = ScriptedModel()
    agent = Agent.create("sam", "gpt-4o-mini", db=db, llm=model)
    if isinstance(model, ScriptedModel):
        SCRIPTED[id(agent)] = model
    return agent


def tool_result(agent: Agent, name: str, **arguments: Any) -> str:
    """One step in which the model calls tool `name`, reads its result and
    answers; returns the result, as the model read it."""
    SCRIPTED[id(agent)].enqueue(
        reply(tool_calls=[call(name, **arguments, request_heartbeat=True)]), say("Noted.")
    )
    result = agent.step("note this")
    assert result.replies == ["Noted."]
    return result.tool_results[0].content


def test_an_insert_replaces_what_it_names_and_keeps_it(db_location):
    agent = make_agent(db_location)
    leeds = agent.archival.insert("Alice lives in Leeds, on Park Road.").ids[0]
    text = tool_result(
        agent, "archival_memory_insert", content="Alice moved to Berlin in March.", replaces=[leeds]
    )
    [berlin] = re.findall(r"passage-[\w-]+", text.split("Marked")[0])
    assert f"Marked out of date, replaced by {berlin}: {leeds}." in text
    old = agent.archival.get(leeds)
    assert old.superseded_by == berlin and old.superseded_at is not None
    assert old.text == "Alice lives in Leeds, on Park Road."  # kept as it was
    assert [p.id for p in agent.archival.history(leeds)] == [leeds, berlin]
    assert [p.id for p in agent.archival.history(berlin)] == [leeds, berlin]


def test_a_bad_replaces_saves_nothing_and_tells_the_model(db_location):
    agent = make_agent(db_location)
    leeds = agent.archival.insert("Alice lives in Leeds.").ids[0]
    text = tool_result(
        agent,
        "archival_memory_insert",
        content="Alice lives in Berlin.",
        replaces=[leeds, "passage-nope"],
    )
    assert "passage-nope" in text and "Nothing was saved." in text
    assert agent.archival.count() == 1
    assert agent.archival.get(leeds).superseded_by is None


def test_the_model_is_shown_a_likely_contradiction_and_can_retire_it(db_location):
    """The insert's result names the close passage still current; the model
    (reading that result, as a real one would) inserts the same text again
    with replaces: nothing is stored twice, the old fact is retired."""
    new_fact = "Alice lives in Berlin now."
    shown: list[str] = []

    def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        last = messages[-1]
        if last["role"] == "user":
            first = call("archival_memory_insert", content=new_fact, request_heartbeat=True)
            return reply(tool_calls=[first])
        if last["role"] == "tool" and "Close passages" in last["content"]:
            shown.append(last["content"])
            ids = re.findall(r"\((passage-[\w-]+)\)", last["content"].split("Close")[1])
            return reply(
                tool_calls=[call("archival_memory_insert", content=new_fact, replaces=ids)]
            )
        return say("Noted.")

    agent = make_agent(db_location, FunctionModel(model))
    leeds = agent.archival.insert("Alice lives in Leeds, on Park Road.").ids[0]
    agent.archival.insert("Bob collects stamps.")
    agent.step("Alice moved to Berlin.")
    assert len(shown) == 1
    assert f"({leeds}) Alice lives in Leeds, on Park Road." in shown[0]
    assert "stamps" not in shown[0]  # nothing in common: not shown
    assert "replaces=[its id]" in shown[0]
    assert agent.archival.count() == 3  # the second insert stored nothing new
    [berlin] = agent.archival.list(include_superseded=False, tags=None)[0][:1]
    assert berlin.text == new_fact
    assert agent.archival.get(leeds).superseded_by == berlin.id


def test_search_puts_current_facts_first_and_marks_the_old(db_location):
    agent = make_agent(db_location)
    march = datetime(2024, 3, 2, 9, 0, tzinfo=UTC)
    old = agent.archival.insert("Alice works at Acme as a baker. Alice Alice.").ids[0]
    new = agent.archival.insert("Alice works at Initech.", created_at=march, replaces=[old]).ids[0]
    other = agent.archival.insert("Alice works out on Sundays.").ids[0]
    found, total = agent.archival.search("Alice works Acme baker")
    assert total == 3
    assert [p.id for p in found][-1] == old  # the best match by words, but out of date
    assert set(p.id for p in found[:2]) == {new, other}
    assert agent.archival.search("Alice works", include_superseded=False)[1] == 2
    # Pages continue from the current ones into the replaced ones.
    first, _ = agent.archival.search("Alice works Acme baker", limit=2)
    second, _ = agent.archival.search("Alice works Acme baker", limit=2, offset=2)
    assert [p.id for p in first + second] == [p.id for p in found]
    text = tool_result(agent, "archival_memory_search", query="Alice works Acme")
    assert f"({old}) [superseded 2024-03-02 by {new}]" in text
    assert text.index(f"({new})") < text.index(f"({old})")
    assert f"({new}) [superseded" not in text


def test_a_replaced_fact_with_no_current_match_is_still_found(db_location):
    agent = make_agent(db_location)
    old = agent.archival.insert("The wifi password is hunter2.").ids[0]
    agent.archival.insert("Network key changed last week.", replaces=[old])
    found, total = agent.archival.search("wifi password")
    assert [p.id for p in found] == [old] and total == 1
    assert agent.archival.search("wifi password", include_superseded=False) == ([], 0)


def test_history_follows_a_fact_through_several_changes(db_location):
    agent = make_agent(db_location)
    leeds = agent.archival.insert("Alice lives in Leeds.").ids[0]
    york = agent.archival.insert("Alice lives in York.", replaces=[leeds]).ids[0]
    oslo = agent.archival.insert("Alice lives in Oslo.", replaces=[york]).ids[0]
    chain = [leeds, york, oslo]
    for passage_id in chain:
        assert [p.id for p in agent.archival.history(passage_id)] == chain
    with pytest.raises(NotFoundError):
        agent.archival.history("passage-nope")
    agent.archival.delete(york)  # the middle goes: the chain closes over it
    assert [p.id for p in agent.archival.history(leeds)] == [leeds, oslo]


def test_copying_a_database_carries_the_history_of_facts(db_location, tmp_path):
    source = str(tmp_path / "source.db")
    agent = make_agent(source)
    leeds = agent.archival.insert("Alice lives in Leeds.").ids[0]
    oslo = agent.archival.insert("Alice lives in Oslo.", replaces=[leeds]).ids[0]
    agent.store.close()
    copy_database(source, db_location)
    copied = Agent.load("sam", db=db_location, llm=ScriptedModel())
    assert copied.archival.get(leeds) == Agent.load("sam", db=source).archival.get(leeds)
    assert copied.archival.get(leeds).superseded_by == oslo
    assert [p.id for p in copied.archival.history(oslo)] == [leeds, oslo]
    assert copied.archival.search("Alice lives", include_superseded=False)[1] == 1


def test_the_command_line_replaces_searches_and_shows_history(db_location):
    runner = CliRunner()

    def run(*args: str, code: int = 0) -> str:
        result = runner.invoke(cli, ["--db", db_location, *args])
        assert result.exit_code == code, result.output
        return result.output

    run("create", "sam", "--model", "gpt-4o-mini")
    [leeds] = re.findall(r"stored (passage-\w+)", run("archival", "sam", "insert", "Ann: Leeds"))
    moved = run("archival", "sam", "insert", "Ann lives in Oslo", "--replaces", leeds)
    [oslo] = re.findall(r"stored (passage-\w+)", moved)
    assert f"superseded {leeds} by {oslo}" in moved
    current = run("archival", "sam", "search", "Ann Leeds")
    assert oslo in current and leeds not in current and "(1 shown of 1)" in current
    every = run("archival", "sam", "search", "Ann Leeds", "--include-superseded")
    assert every.index(oslo) < every.index(leeds) and "(2 shown of 2)" in every
    mark = re.compile(rf"{leeds}  [\d-]+ [\d:]+  superseded \d{{4}}-\d\d-\d\d by {oslo}\n")
    assert mark.search(every)
    listed = run("archival", "sam", "list")
    assert mark.search(listed) and listed.count("superseded") == 1
    history = run("archival", "sam", "history", oslo)
    assert history.index(leeds) < history.index(oslo) and "Ann: Leeds" in history
    [bob] = re.findall(r"stored (passage-\w+)", run("archival", "sam", "insert", "Bob: cats"))
    assert "replaced nothing" in run("archival", "sam", "history", bob)
    refused = run("archival", "sam", "insert", "Ann: Rome", "--replaces", "passage-nope", code=1)
    assert "passage-nope" in refused
    assert "(3 shown of 3)" in run("archival", "sam", "list")


def test_an_agent_file_carries_the_history_of_facts(db_location, tmp_path):
    agent = make_agent(db_location)
    leeds = agent.archival.insert("Alice lives in Leeds.").ids[0]
    agent.archival.insert("Bob collects stamps.")
    oslo = agent.archival.insert("Alice lives in Oslo.", replaces=[leeds]).ids[0]
    path = tmp_path / "sam.json"
    data = write_agent_file(agent.store, "sam", path)
    assert [p.superseded_by for p in data.passages] == [2, None, None]
    report = import_agent(agent.store, path, name="sam2")
    copy = Agent.load("sam2", db=db_location, llm=ScriptedModel())
    [old] = copy.archival.search("Leeds")[0]
    assert old.id != leeds and old.superseded_at == agent.archival.get(leeds).superseded_at
    new = copy.archival.get(old.superseded_by or "")
    assert new.text == "Alice lives in Oslo." and new.id != oslo
    assert [p.text for p in copy.archival.history(new.id)] == [old.text, new.text]
    assert report.agent_id == copy.state.id
    broken = data.model_copy(deep=True)
    broken.passages[0].superseded_by = 0
    with pytest.raises(AgentFileError, match=r"passages\[0\].superseded_by"):
        store_agent_file(agent.store, broken, name="sam3")


class BagOfWords:
    """A user-supplied embedder: the fake server's hashed bags of words, in
    process, so hybrid search (words and vectors) runs."""

    name, dimension = "test:bag-of-words", 64

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.array([fake_embedding(t, self.dimension) for t in texts], dtype=np.float32)


def test_hybrid_search_also_ranks_replaced_facts_last(db_location):
    agent = Agent.create(
        "sam", "gpt-4o-mini", db=db_location, llm=ScriptedModel(), embedder=BagOfWords()
    )
    old = agent.archival.insert("Alice works at Acme bakery, Acme Acme.").ids[0]
    agent.archival.insert("Unrelated note about gardening.")
    new = agent.archival.insert("Alice works at Initech.", replaces=[old]).ids[0]
    found, _ = agent.archival.search("Alice Acme bakery")
    assert [p.id for p in found][:1] == [new] and found[-1].id == old
    assert agent.archival.search("Alice Acme bakery", include_superseded=False)[0][0].id == new
    # The nearest vectors of a small memory include the unrelated note: not shown.
    report = agent.archival.insert("Alice bakes bread on Sundays.")
    assert [p.id for p in agent.archival.related(report)] == [new]
