"""Reflection ("sleep time"): one model call reads the messages no reflection
has read and records what they teach: dated archival passages, block
rewrites. Driven by the in-process fake model and the validating fake server;
a bad answer changes nothing and leaves the messages to read again."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from memgpt_lite import Agent, AgentSettings, LLMError, Message
from memgpt_lite.loop import reflection
from memgpt_lite.testing import call, reply, say
from memgpt_lite.testing.model import ScriptedModel


def make_agent(db, model, **settings) -> Agent:
    return Agent.create("sam", "gpt-4o-mini", db=db, llm=model, settings=AgentSettings(**settings))


def record(**arguments) -> object:
    return reply(tool_calls=[call("record_reflection", **arguments)])


def reflection_request(model: ScriptedModel) -> dict:
    """The newest request whose tools are the reflection's."""
    for request in reversed(model.requests):
        if [t["function"]["name"] for t in request.tools] == ["record_reflection"]:
            return {"messages": request.messages, "tools": request.tools}
    raise AssertionError("no reflection request")


def test_reflect_saves_facts_as_dated_passages_and_rewrites_the_human_block(tmp_path):
    model = ScriptedModel(say("Congratulations on the move!"))
    agent = make_agent(tmp_path / "a.db", model)
    agent.step("I moved to Lisbon yesterday, and I now work at a bakery.")
    model.enqueue(
        record(
            facts=[{"text": "The user moved to Lisbon."}, {"text": "The user works at a bakery."}],
            blocks=[{"label": "human", "value": "Lives in Lisbon. Works at a bakery."}],
        )
    )
    report = agent.runner.reflect()
    assert report.messages_read == 3  # the user, the answer, its send_message result
    assert report.facts_added == 2 and report.blocks_changed == ["human"]
    assert agent.block("human").value == "Lives in Lisbon. Works at a bakery."
    assert agent.block_history("human")[-1].author == "reflection"
    found, _ = agent.archival.search("Lisbon")
    assert found[0].text == "The user moved to Lisbon." and found[0].tags == ["reflection"]
    user_message = agent.context_messages()[0]
    assert found[0].created_at == agent.context_messages()[-1].created_at
    assert user_message.role == "user"
    request = reflection_request(model)
    shown = request["messages"][1]["content"]
    assert "I moved to Lisbon yesterday" in shown and '<block label="human"' in shown
    # Everything was read: a second reflection has nothing to do and asks nothing.
    asked = len(model.requests)
    assert agent.runner.reflect().messages_read == 0 and len(model.requests) == asked


def test_a_reflection_reads_only_what_is_new(tmp_path):
    model = ScriptedModel(say("Hi."))
    agent = make_agent(tmp_path / "a.db", model)
    agent.step("first message")
    model.enqueue(record())
    agent.runner.reflect()
    model.enqueue(say("Noted."), record())
    agent.step("second message")
    agent.runner.reflect()
    shown = reflection_request(model)["messages"][1]["content"]
    assert "second message" in shown and "first message" not in shown


def test_a_long_history_is_read_a_page_at_a_time(tmp_path, monkeypatch):
    # More system rows than a page, then more messages than one call reads:
    # the first call reads the first MAX_MESSAGES, the next call the rest.
    monkeypatch.setattr(reflection, "MAX_MESSAGES", 4)
    model = ScriptedModel()
    agent = make_agent(tmp_path / "a.db", model)
    agent_id = agent.state.id
    notes = [Message(agent_id=agent_id, role="system", content=f"note {i}") for i in range(9)]
    said = [Message(agent_id=agent_id, role="user", content=f"said {i}") for i in range(6)]
    agent.store.add_messages(notes + said)
    model.enqueue(record(), record())
    assert agent.runner.reflect().messages_read == 6
    first, second = [request.messages[1]["content"] for request in model.requests]
    assert "said 0" in first and "said 3" in first and "said 4" not in first
    assert "said 4" in second and "said 5" in second and "said 3" not in second
    assert agent.store.get_agent("sam").reflected_seq == said[-1].seq


@pytest.mark.parametrize(
    "answer",
    [
        say("I would rather chat."),  # no record_reflection call
        reply(tool_calls=[call("record_reflection", facts="not a list")]),
    ],
)
def test_an_unusable_answer_changes_nothing_and_the_messages_stay_unread(tmp_path, answer):
    model = ScriptedModel(say("Hi."))
    agent = make_agent(tmp_path / "a.db", model)
    agent.step("I moved to Lisbon.")
    model.enqueue(answer)
    with pytest.raises(LLMError, match="record_reflection"):
        agent.runner.reflect()
    assert agent.archival.count() == 0
    assert agent.store.get_agent("sam").reflected_seq == 0
    model.enqueue(record(facts=[{"text": "The user moved to Lisbon."}]))
    assert agent.runner.reflect().facts_added == 1


def test_block_changes_the_reflection_may_not_make_are_noted_not_made(tmp_path):
    model = ScriptedModel(say("Hi."))
    agent = make_agent(tmp_path / "a.db", model)
    agent.step("hello")
    before = agent.block("human").value
    model.enqueue(
        record(
            blocks=[
                {"label": "human", "value": "x" * 10_000},
                {"label": "nope", "value": "y"},
            ]
        )
    )
    report = agent.runner.reflect()
    assert report.blocks_changed == []
    assert [n.split(":")[0] for n in report.notes] == ["block 'human'", "block 'nope'"]
    assert "over its limit" in report.notes[0]
    assert agent.block("human").value == before


def test_reflect_every_runs_in_the_background_after_enough_turns(tmp_path):
    model = ScriptedModel(say("One."))
    agent = make_agent(tmp_path / "a.db", model, reflect_every=2)
    agent.step("first")
    assert reflection.wait_for_background(agent.state.id, 30)
    assert agent.store.get_agent("sam").reflected_seq == 0  # one turn: not yet
    model.enqueue(say("Two."), record(facts=[{"text": "The user said two things."}]))
    agent.step("second")
    assert reflection.wait_for_background(agent.state.id, 30)
    assert agent.archival.count() == 1
    assert agent.store.get_agent("sam").reflected_seq == agent.context_messages()[-1].seq


def test_reflection_through_the_fake_server(fake_llm, tmp_path):
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db")
    fake_llm.enqueue(
        say("Nice!"), record(facts=[{"text": "The user adopted a cat on 2024-03-01."}])
    )
    agent.step("I adopted a cat today.")
    report = agent.runner.reflect()  # the server validated the request and the tool schema
    assert report.facts_added == 1
    body = fake_llm.chat_requests[-1]
    assert body["tools"][0]["function"]["name"] == "record_reflection"
    assert json.dumps(body)  # sent as JSON
    assert datetime.now(UTC).strftime("%Y-%m-%d") in body["messages"][1]["content"]


def test_the_reflect_command_reflects_and_sets_the_interval(chat_env, fake_llm, tmp_path):
    from click.testing import CliRunner

    from memgpt_lite.cli.main import cli

    runner = CliRunner()
    db = str(tmp_path / "cli.db")
    assert (
        runner.invoke(cli, ["--db", db, "create", "sam", "--model", "gpt-4o-mini"]).exit_code == 0
    )
    fake_llm.enqueue(say("Hi."), record(facts=[{"text": "The user likes tea."}]))
    assert runner.invoke(cli, ["--db", db, "send", "sam", "I like tea"]).exit_code == 0
    done = runner.invoke(cli, ["--db", db, "reflect", "sam"])
    assert done.exit_code == 0, done.output
    assert done.output.startswith("Read 3 messages: 1 facts saved")
    every = runner.invoke(cli, ["--db", db, "reflect", "sam", "--every", "5"])
    assert every.output == "Agent 'sam' reflects after every 5 turns.\n"
    assert Agent.load("sam", db=db).state.settings.reflect_every == 5
    nothing = runner.invoke(cli, ["--db", db, "reflect", "sam"])
    assert nothing.output.startswith("Nothing to reflect on")
    fake_llm.enqueue(say("Sure."), say("not a reflection"))
    assert runner.invoke(cli, ["--db", db, "send", "sam", "I like coffee too"]).exit_code == 0
    failed = runner.invoke(cli, ["--db", db, "reflect", "sam"])
    assert failed.exit_code == 1
    assert failed.output.strip().splitlines() == [
        "Error: the model did not call record_reflection; nothing was recorded"
    ]


def test_copy_db_keeps_what_was_read_in_the_new_numbering(tmp_path):
    from memgpt_lite.storage.copy import copy_database

    model = ScriptedModel(say("Hi."), record(), say("Again."))
    agent = make_agent(tmp_path / "a.db", model)
    agent.step("first")
    agent.runner.reflect()
    agent.step("second")  # unread
    # The destination numbers messages after its own: the seqs all change.
    other = Agent.create("other", "gpt-4o-mini", db=tmp_path / "b.db", llm=ScriptedModel())
    other.runner.llm.enqueue(*[say("Fine.")] * 3)
    for n in range(3):
        other.step(f"filler {n}")
    other.store.close()
    copy_database(str(tmp_path / "a.db"), str(tmp_path / "b.db"))
    copied = Agent.load("sam", db=tmp_path / "b.db", llm=ScriptedModel(record()))
    read = copied.state.reflected_seq
    messages = copied.context_messages()
    assert [m.content for m in messages if m.seq > read and m.role == "user"] == ["second"]
    assert [m.content for m in messages if m.seq <= read and m.role == "user"] == ["first"]


def test_a_fact_supersedes_what_it_makes_out_of_date_and_duplicates_merge(tmp_path):
    model = ScriptedModel(say("Noted."))
    agent = make_agent(tmp_path / "a.db", model)
    old = agent.archival.insert("The user lives in Porto.").ids[0]
    same = agent.archival.insert("The user has a dog named Rex.").ids[0]
    again = agent.archival.insert("The user's dog is called Rex.").ids[0]
    agent.step("I moved from Porto to Lisbon; Rex came too.")
    model.enqueue(
        record(
            facts=[
                {"text": "The user moved to Lisbon.", "replaces": [old]},
                {"text": "The user likes trams.", "replaces": ["passage-nope"]},
            ],
            duplicates=[{"keep": same, "drop": [again]}],
        )
    )
    report = agent.runner.reflect()
    shown = reflection_request(model)["messages"][1]["content"]
    assert f"[{old}]" in shown  # the model was shown the passage it replaced
    assert report.facts_added == 1 and report.passages_superseded == 2
    assert len(report.notes) == 1 and report.notes[0].startswith("fact 'The user likes trams.'")
    current, _ = agent.archival.search("Porto Lisbon Rex", 10, include_superseded=False)
    assert {p.text for p in current} == {
        "The user moved to Lisbon.",
        "The user has a dog named Rex.",
    }
    assert agent.archival.get(old).superseded_by is not None
    assert agent.archival.get(again).superseded_by == same


def test_the_chat_reflects_on_request(fake_llm, chat_env, tmp_path):
    import subprocess
    import sys

    Agent.create("sam", "gpt-4o-mini", db=tmp_path / "chat.db")
    fake_llm.enqueue(say("Tea it is."), record(facts=[{"text": "The user likes tea."}]))
    finished = subprocess.run(
        [sys.executable, "-m", "memgpt_lite", "--db", str(tmp_path / "chat.db"), "chat", "sam"],
        input="I like tea\n/reflect\n",
        capture_output=True,
        text=True,
        env=chat_env,
        timeout=60,
    )
    assert finished.returncode == 0, finished.stderr
    assert "Read 3 messages: 1 facts saved" in finished.stdout
    found, _ = Agent.load("sam", db=tmp_path / "chat.db").archival.search("tea")
    assert [p.text for p in found] == ["The user likes tea."]
