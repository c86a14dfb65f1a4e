"""`memgpt-lite conversations`, and `send` and `chat` with --conversation:
each conversation of an agent its own history over the agent's one memory.
In-process (click's runner), against the fake endpoint."""

from __future__ import annotations

from click.testing import CliRunner

from memgpt_lite import Agent
from memgpt_lite.cli.main import cli
from memgpt_lite.testing import say


def run(db: str, *args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, ["--db", db, *args], input=stdin, catch_exceptions=False)


def test_send_and_chat_talk_in_the_conversation_given(fake_llm, tmp_path):
    db = str(tmp_path / "a.db")
    Agent.create("sam", "gpt-4o-mini", db=db)
    made = run(db, "conversations", "sam", "--new", "--summary", "the trip")
    assert made.exit_code == 0
    trip = made.output.strip()
    assert trip.startswith("conv-")
    listed = run(db, "conversations", "sam")
    assert listed.output.startswith(trip) and listed.output.rstrip().endswith("the trip")
    fake_llm.enqueue(say("Oslo it is."), say("Hello."))
    sent = run(db, "send", "sam", "Let us go to Oslo.", "--conversation", trip, "-q")
    assert (sent.exit_code, sent.output) == (0, "Oslo it is.\n")
    assert run(db, "send", "sam", "Hi.", "-q").output == "Hello.\n"
    sam = Agent.load("sam", db=db)
    in_trip = sam.conversations.open(trip)
    assert [m.content for m in in_trip.context_messages() if m.role == "user"] == [
        "Let us go to Oslo."
    ]
    assert [m.content for m in sam.context_messages() if m.role == "user"] == ["Hi."]
    fake_llm.enqueue(say("Still Oslo."))
    chatted = run(db, "chat", "sam", "--conversation", trip, stdin="Where to?\n")
    assert chatted.exit_code == 0 and "Still Oslo." in chatted.output
    sent_to_model = [m.get("content") for m in fake_llm.chat_requests[-1]["messages"]]
    assert "Let us go to Oslo." in sent_to_model and "Hi." not in sent_to_model


def test_an_unknown_conversation_is_one_line_and_sends_nothing(fake_llm, tmp_path):
    db = str(tmp_path / "a.db")
    Agent.create("sam", "gpt-4o-mini", db=db)
    sent = CliRunner().invoke(cli, ["--db", db, "send", "sam", "Hi.", "--conversation", "conv-x"])
    assert sent.exit_code != 0
    assert "no conversation 'conv-x'" in sent.output and "Traceback" not in sent.output
    assert fake_llm.chat_requests == []
    deleted = run(db, "conversations", "sam", "--new")
    gone = deleted.output.strip()
    assert run(db, "conversations", "sam", "--delete", gone).exit_code == 0
    assert run(db, "conversations", "sam").output == ""
