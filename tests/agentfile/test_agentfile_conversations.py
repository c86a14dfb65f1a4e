"""Agent files carry an agent's other conversations (agent/conversations.py):
each one's messages in order, its window, its recursive summary and its
title, imported with fresh ids and repaired as the agent's own history is.
From each backend into the other; a file without conversations (version 1)
imports as before."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner
from support.backends import open_db, without_notices
from support.removing_tool import REMOVED, remove

from memgpt_lite import Agent
from memgpt_lite.agentfile.native import export_agent, import_agent
from memgpt_lite.agentfile.schema import MISSING_RESULT
from memgpt_lite.cli.main import cli
from memgpt_lite.memory.recall.window import compile_context
from memgpt_lite.memory.retrieval.search import search_messages
from memgpt_lite.storage.protocol import Storage
from memgpt_lite.testing import FakeOpenAIServer, reply, say

EMBEDDER = "endpoint:text-embedding-3-small"
# Each backend writes the file once and reads it once, into the other.
PAIRS = [("sqlite", "postgres"), ("postgres", "sqlite")]
NOT_COMPARED = {"id", "agent_id", "seq", "conversation_id"}  # ids of one database


@pytest.fixture(params=PAIRS, ids=lambda pair: "-to-".join(pair))
def locations(request: pytest.FixtureRequest, tmp_path) -> tuple[str, str]:
    """Where the agent is exported from and imported into."""

    def location(kind: str, name: str) -> str:
        if kind == "sqlite":
            return str(tmp_path / f"{name}.db")
        return request.getfixturevalue("pg_url")

    src_kind, dst_kind = request.param
    return location(src_kind, "src"), location(dst_kind, "dst")


def run(*args: str, db: str):
    return CliRunner().invoke(cli, ["--db", db, *args], catch_exceptions=False)


def make_agent_with_conversations(db: str, fake_llm: FakeOpenAIServer) -> Agent:
    """sam, with its own history and two more conversations: "Trip to Oslo",
    compacted (its window starts after its first messages, under a summary),
    and one with no title whose memory-pressure alert was given."""
    sam = Agent.create("sam", "gpt-4o-mini", db=db, embedder=EMBEDDER)
    fake_llm.enqueue(say("Hello Alice!"))
    sam.step("Hi, I'm Alice.")
    trip = sam.conversations.open(sam.conversations.create(summary="Trip to Oslo").id)
    fake_llm.enqueue(say("Oslo is lovely in June."), say("Take the airport train."))
    trip.step("I'm going to Oslo in June.")
    trip.step("How do I get to town?")
    fake_llm.enqueue(reply(content="Alice plans a June trip to Oslo."))
    assert trip.runner.summarize().evicted > 0
    work = sam.conversations.open(sam.conversations.create().id)
    fake_llm.enqueue(say("Noted: the report is due Monday."))
    work.step("The report is due Monday.")
    sam.store.update_agent(
        sam.state.id,
        lambda state: setattr(state, "pressure_warned", True),
        conversation=work.state.conversation_id,
    )
    search_messages(sam.runner, "Oslo", 5)  # embeds the messages, of every conversation
    return sam


def conversations_of(store: Storage, agent_id: str) -> list[dict[str, Any]]:
    """Each conversation of the agent as stored, without ids or seqs: its
    fields, every message, and the messages of its window."""
    return [
        {
            **found.model_dump(include={"summary", "window_summary", "pressure_warned"}),
            "times": (found.created_at, found.updated_at),
            "messages": [
                m.model_dump(exclude=NOT_COMPARED)
                for m in store.messages_from(agent_id, 0, found.id)
            ],
            "window": [
                m.model_dump(exclude=NOT_COMPARED)
                for m in store.messages_from(agent_id, found.context_start, found.id)
            ],
        }
        for found in store.list_conversations(agent_id)
    ]


def message_vectors(store: Storage, agent_id: str) -> dict[str, bytes]:
    """The agent's message vectors, by the text each was embedded from."""
    state = store.get_agent(agent_id)
    stored = store.load_vectors(agent_id, "message", 0, state.embedding_dimension or 0)
    by_seq = store.messages_by_seq(agent_id, [int(s) for s in stored.seqs])
    return {
        by_seq[int(seq)].search_text() or "": row.tobytes()
        for seq, row in zip(stored.seqs, stored.matrix, strict=True)
    }


def test_conversations_round_trip_into_the_other_backend(fake_llm, tmp_path, locations):
    src, dst = locations
    sam = make_agent_with_conversations(src, fake_llm)
    trip_id, work_id = (c.id for c in sam.conversations.list())
    trip = sam.conversations.open(trip_id)
    trip_window = compile_context(trip.runner).request_messages[1:]
    before = conversations_of(sam.store, sam.state.id)
    assert [(c["summary"], c["pressure_warned"]) for c in before] == [
        ("Trip to Oslo", False),
        (None, True),
    ]
    assert before[0]["window_summary"] == "Alice plans a June trip to Oslo."
    assert 0 < len(before[0]["window"]) < len(before[0]["messages"])  # compacted
    path = tmp_path / "sam.json"

    exported = run("export", "sam", "-o", str(path), db=src)
    assert exported.exit_code == 0, exported.output
    assert "2 more conversations (" in exported.stdout
    text = path.read_text()
    raw = json.loads(text)
    assert raw["version"] == 2 and len(raw["conversations"]) == 2
    assert trip_id not in text and work_id not in text  # ids belong to one database
    assert any(m["vector"] for m in raw["conversations"][0]["messages"])

    # Letta's agent file has no place for them: said, not silently dropped.
    letta = run("export", "sam", "--format", "letta", "-o", str(tmp_path / "sam.af"), db=src)
    assert letta.exit_code == 0, letta.output
    assert "only its default one is written, not the 2 others" in letta.stderr

    imported = run("import", str(path), db=dst)
    assert imported.exit_code == 0, imported.output
    assert without_notices(imported.stderr) == ""  # nothing repaired
    messages = sum(len(c["messages"]) for c in before)
    assert f"2 more conversations ({messages} messages)" in imported.stdout
    copy = Agent.load("sam", db=dst)
    assert conversations_of(copy.store, copy.state.id) == before
    assert [c.id for c in copy.conversations.list()] != [trip_id, work_id]  # fresh ids
    own = [m.model_dump(exclude=NOT_COMPARED) for m in copy.store.messages_from(copy.state.id, 0)]
    assert own == [
        m.model_dump(exclude=NOT_COMPARED) for m in sam.store.messages_from(sam.state.id, 0)
    ]
    assert message_vectors(copy.store, copy.state.id) == message_vectors(sam.store, sam.state.id)
    assert len(message_vectors(copy.store, copy.state.id)) > len(own)  # conversations' too

    # The imported conversation's next step sends the window it had, under its summary.
    copy_trip = copy.conversations.open(copy.conversations.list()[0].id)
    fake_llm.enqueue(say("Still here."))
    assert copy_trip.step("Are you there?").replies == ["Still here."]
    request = fake_llm.chat_requests[-1]["messages"]
    assert request[1:-1] == trip_window
    assert "Alice plans a June trip to Oslo." in request[0]["content"]
    assert fake_llm.rejections == []


def test_a_file_without_conversations_imports_as_before(fake_llm, tmp_path, db_location):
    sam = Agent.create("sam", "gpt-4o-mini", db=db_location)
    fake_llm.enqueue(say("Hi!"))
    sam.step("hello")
    data = export_agent(sam.store, "sam")
    # Written at version 1, which a memgpt_lite from before conversations reads.
    assert data.version == 1 and data.conversations == []
    old = data.model_dump(mode="json")
    del old["conversations"]  # as version 1 was written
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    with open_db(db_location) as store:
        report = import_agent(store, path, name="sam2")
    assert (report.conversations, report.conversation_messages, report.notes) == (0, 0, [])
    copy = Agent.load("sam2", db=db_location)
    assert copy.conversations.list() == []
    assert [m.content for m in copy.context_messages()] == [
        m.content for m in sam.context_messages()
    ]


def broken_conversation() -> dict[str, Any]:
    """A conversation as another program might have written it: an answer
    whose call got no result though the talk went on, a result with no
    call, and a last answer whose call has no result yet (it waits for the
    user's approval). Its window starts at the stray result."""

    def asked(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
        call = {"id": call_id, "name": name, "arguments": json.dumps(arguments)}
        return {"role": "assistant", "content": None, "tool_calls": [call]}

    return {
        "summary": "cleanup",
        "messages": [
            {"role": "user", "content": "Find my notes."},
            asked("early", "conversation_search", query="notes"),
            {"role": "tool", "content": "stray", "tool_call_id": "nobody", "name": "x"},
            {"role": "user", "content": "Then remove /tmp/a."},
            asked("last", "remove", path="/tmp/a", request_heartbeat=True),
        ],
        "context_start": 2,
    }


def test_a_conversation_is_repaired_as_the_agents_own_history(fake_llm, tmp_path, db_location):
    REMOVED.clear()
    sam = Agent.create("sam", "gpt-4o-mini", db=db_location, tools=[remove])
    data = export_agent(sam.store, "sam").model_dump(mode="json")
    data["version"] = 2
    data["conversations"] = [broken_conversation()]
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(data))
    with open_db(db_location) as store:
        report = import_agent(store, path, name="sam2")
    where = "conversation 1 of 1 ('cleanup'): "
    assert report.notes == [
        f"{where}1 tool calls had no result; each was given an error result",
        f"{where}1 tool results or repeated calls without a matching call dropped",
        f"{where}1 tool call waiting for approval: approve or deny it",
    ]
    copy = Agent.load("sam2", db=db_location, tools=[remove])
    [found] = copy.conversations.list()
    stored = copy.store.messages_from(copy.state.id, 0, found.id)
    assert [(m.role, m.content, m.tool_call_id) for m in stored] == [
        ("user", "Find my notes.", None),
        ("assistant", None, None),
        ("tool", MISSING_RESULT, "early"),
        ("user", "Then remove /tmp/a.", None),
        ("assistant", None, None),
    ]
    # The window took in the call of the result it started at, now made up.
    window = copy.store.messages_from(copy.state.id, found.context_start, found.id)
    assert [m.id for m in window] == [m.id for m in stored[1:]]
    cleanup = copy.conversations.open(found.id)
    assert [c.id for c in cleanup.pending_approvals()] == ["last"]
    assert copy.pending_approvals() == []  # the agent's own history waits for nothing
    fake_llm.enqueue(say("Removed."))
    assert cleanup.approve().replies == ["Removed."]
    assert REMOVED == ["/tmp/a"] and fake_llm.rejections == []
    assert cleanup.pending_approvals() == []
