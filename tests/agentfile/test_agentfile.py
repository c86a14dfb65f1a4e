"""Agent files: export and import through the real store and the fake server,
which must accept the next step of every imported agent. Letta's .af files are
in test_agentfile_letta.py."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime

import numpy as np
import pytest
from click.testing import CliRunner
from support.backends import execute_sql, is_postgres, open_db
from support.removing_tool import REMOVED, remove

from memgpt_lite import AgentSettings, AlreadyExistsError, Block, tool
from memgpt_lite.agent import Agent
from memgpt_lite.agentfile.history import pair_tool_calls
from memgpt_lite.agentfile.native import (
    FileMessage,
    export_agent,
    import_agent,
    store_agent_file,
    write_agent_file,
)
from memgpt_lite.agentfile.schema import MISSING_RESULT
from memgpt_lite.cli.main import cli
from memgpt_lite.errors import StoreError
from memgpt_lite.memory.recall.window import compile_context
from memgpt_lite.memory.retrieval.search import search_messages
from memgpt_lite.models import ToolCall
from memgpt_lite.storage.sqlite.store import Store
from memgpt_lite.testing import FakeOpenAIServer, call, reply, say
from memgpt_lite.testing.embeddings import fake_embedding
from memgpt_lite.testing.model import ScriptedModel

EMBEDDER = "endpoint:text-embedding-3-small"


@tool
def check_order_status(order_number: int) -> str:
    """Check the status of an order.

    Args:
        order_number: The order number.
    """
    return f"Order {order_number} is processing."


class WordEmbedder:
    """A user-supplied embedder in its own space: one dimension per known word."""

    WORDS = ["tea", "garden", "car", "automobile", "sister"]

    def __init__(self) -> None:
        self.name, self.dimension = "test:words", len(self.WORDS) + 1

    def embed(self, texts):
        rows = np.full((len(texts), self.dimension), 0.1, dtype=np.float32)
        for row, text in zip(rows, texts, strict=True):
            for i, word in enumerate(self.WORDS):
                row[i] += text.lower().count(word)
            if "car" in text.lower():
                row[self.WORDS.index("automobile")] += 1
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def run(*args: str, db=None):
    prefix = ["--db", str(db)] if db else []
    return CliRunner().invoke(cli, [*prefix, *args], catch_exceptions=False)


def counts(db) -> dict[str, int]:
    """How many agents, blocks, messages, passages and vectors are stored."""
    with open_db(db) as store:
        agents = store.list_agents()
        blocks = {b.id for state, _ in agents for b in store.get_blocks(state.id)}
        vectors = [store.vector_counters(state.id) for state, _ in agents]
        return {
            "agents": len(agents),
            "blocks": len(blocks),
            "messages": sum(stats.message_count for _, stats in agents),
            "passages": sum(stats.passage_count for _, stats in agents),
            "vectors": sum(c.inserts - c.deletes for c in vectors),
        }


def make_rich_agent(db: str, fake_llm: FakeOpenAIServer) -> Agent:
    """An agent with something in every part an export must carry."""
    agent = Agent.create(
        "sam",
        "gpt-4o-mini",
        db=db,
        system="You are Sam, a test agent.",
        blocks=[
            Block(label="persona", value="I am Sam.", description="Who you are.", limit=900),
            Block(label="human", value="", description="The user."),
            Block(label="rules", value="Be brief.", read_only=True, limit=50),
        ],
        tools=[check_order_status],
        settings=AgentSettings(context_window=30_000, max_chained_steps=4),
        llm_options={"temperature": 0.3, "max_retries": 1},
        embedder=EMBEDDER,
    )
    fake_llm.enqueue(say("Hello Alice!", content="A new user."))
    agent.step("Hi, I'm Alice and I love tea")
    fake_llm.enqueue(
        reply(
            "Save her name.",
            [
                call(
                    "core_memory_append",
                    label="human",
                    content="Name: Alice",
                    request_heartbeat=True,
                )
            ],
        ),
        say("Noted."),
    )
    agent.step("Remember my name")
    fake_llm.enqueue(
        reply(
            content="",
            tool_calls=[call("check_order_status", order_number=7, request_heartbeat=True)],
        ),
        say("Order 7 is processing."),
    )
    agent.step("Where is order 7?")
    fake_llm.enqueue(reply(content="Alice talked about tea, her name and order 7."))
    report = agent.runner.summarize()
    assert report.evicted > 0 and report.summarized and fake_llm.pending() == 0
    agent.archival.insert("Alice's sister Beth gardens.", tags=["family"])
    agent.archival.insert(
        "Tea: Alice likes oolong.",
        tags=["food", "tea"],
        created_at=datetime(2025, 3, 1, 9, 30, tzinfo=UTC),
    )
    agent.archival.insert(" ".join(f"Long note sentence {i}." for i in range(200)))
    search_messages(agent.runner, "tea", 5)  # embeds the messages too
    return Agent.load("sam", db=db, tools=[check_order_status])


def vectors_by_text(agent: Agent, owner: str) -> dict[str, np.ndarray]:
    store, state = agent.store, agent.state
    stored = store.load_vectors(state.id, owner, 0, state.embedding_dimension)
    seqs, matrix = stored.seqs, stored.matrix
    if owner == "passage":
        items = store.passages_by_seq(state.id, [int(s) for s in seqs])
        text = {seq: p.text for seq, p in items.items()}
    else:
        text = {
            seq: m.search_text()
            for seq, m in store.messages_by_seq(state.id, [int(s) for s in seqs]).items()
        }
    return {text[int(seq)]: row for seq, row in zip(seqs, matrix, strict=True)}


def message_fields(agent: Agent) -> list[dict]:
    return [
        m.model_dump(exclude={"id", "agent_id", "seq"})
        for m in agent.store.messages_from(agent.state.id, 0)
    ]


def passage_fields(agent: Agent) -> list[dict]:
    passages, _ = agent.archival.list(limit=100)
    return [p.model_dump(include={"text", "tags", "context", "created_at"}) for p in passages]


def block_fields(agent: Agent) -> list[dict]:
    return [b.model_dump(exclude={"id"}) for b in agent.blocks]


def test_round_trip_into_another_database(fake_llm, tmp_path, db_location, another_db_location):
    agent = make_rich_agent(db_location, fake_llm)
    window_before = compile_context(agent.runner).request_messages[1:]
    assert 0 < len(window_before) < len(message_fields(agent))  # compacted: a real window
    path = tmp_path / "sam.json"
    write_agent_file(agent.store, "sam", path)
    embeddings_before = fake_llm.embedding_inputs_seen

    other_db = another_db_location
    with open_db(other_db) as other:
        report = import_agent(other, path)
    assert report.source == "memgpt_lite" and report.notes == []
    assert fake_llm.embedding_inputs_seen == embeddings_before  # the file's vectors were used
    copy = Agent.load("sam", db=other_db, tools=[check_order_status])

    assert copy.state.id != agent.state.id
    assert block_fields(copy) == block_fields(agent)
    assert message_fields(copy) == message_fields(agent)
    assert passage_fields(copy) == passage_fields(agent)
    assert report.passages == report.vectors == len(passage_fields(agent)) > 3  # chunked
    for field in ("system", "llm", "settings", "tool_names", "summary", "pressure_warned"):
        assert getattr(copy.state, field) == getattr(agent.state, field), field
    assert copy.state.summary == "Alice talked about tea, her name and order 7."
    assert copy.state.tool_names == ["check_order_status"]
    assert (copy.state.embedding_model, copy.state.embedding_dimension) == (EMBEDDER, 64)
    for owner in ("passage", "message"):
        before, after = vectors_by_text(agent, owner), vectors_by_text(copy, owner)
        assert before.keys() == after.keys() and len(before) >= 3
        assert all(np.array_equal(before[text], after[text]) for text in before)
    assert np.allclose(
        vectors_by_text(copy, "passage")["Alice's sister Beth gardens."],
        fake_embedding("Alice's sister Beth gardens."),
    )
    assert copy.archival.search("oolong")[0][0].text == "Tea: Alice likes oolong."

    # The next step sends the same window as before the export, and it is accepted.
    fake_llm.enqueue(say("Still here."))
    assert copy.step("Are you there?").replies == ["Still here."]
    request = fake_llm.chat_requests[-1]["messages"]
    assert request[1:-1] == window_before
    assert request[-1] == {"role": "user", "content": "Are you there?"}
    assert "Alice talked about tea" in request[0]["content"]
    assert "Be brief." in request[0]["content"]
    assert fake_llm.rejections == []


def test_the_api_key_is_never_written(tmp_path, monkeypatch):
    secret = "sk-test-DO-NOT-EXPORT-1234567890"
    with FakeOpenAIServer(api_key=secret) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", secret)
        db = tmp_path / "a.db"
        agent = Agent.create("sam", "gpt-4o-mini", db=db, base_url=server.base_url)
        server.enqueue(say("hi"))
        agent.step("hello")
        assert server.rejections == [] and len(server.chat_requests) == 1  # the key was used
        base_url = server.base_url
    result = run("export", "sam", "-o", str(tmp_path / "sam.json"), db=db)
    assert result.exit_code == 0, result.output
    text = (tmp_path / "sam.json").read_text()
    assert secret not in text and "api_key" not in text
    assert json.loads(text)["llm"]["base_url"] == base_url


def test_import_twice_gives_independent_agents(fake_llm, db_location):
    db = db_location
    sam = Agent.create("sam", "gpt-4o-mini", db=db)
    shared = Block(label="team", value="We ship on Fridays.")
    sam.attach_block(shared)
    Agent.create("max", "gpt-4o-mini", store=sam.store).attach_block(shared)
    fake_llm.enqueue(say("Hi!"))
    sam.step("hello")
    sam.archival.insert("A fact worth keeping.")
    data = export_agent(sam.store, "sam")

    first = store_agent_file(sam.store, data, name="sam1")
    second = store_agent_file(sam.store, data, name="sam2")
    copies = [Agent.load(r.name, store=sam.store) for r in (first, second)]
    agents = [sam, *copies]
    ids = [
        {a.state.id}
        | {b.id for b in a.blocks}
        | {m.id for m in a.context_messages()}
        | {p.id for p in a.archival.list()[0]}
        for a in agents
    ]
    assert all(len(ids[i] & ids[j]) == 0 for i in range(3) for j in range(i + 1, 3))
    assert [len(a.context_messages()) for a in agents] == [3, 3, 3]
    # The shared block was copied: edits no longer reach the copies, nor each other.
    copies[0].set_block("team", "We ship on Mondays.")
    assert sam.block("team").value == "We ship on Fridays." == copies[1].block("team").value
    assert Agent.load("max", store=sam.store).block("team").value == "We ship on Fridays."
    fake_llm.enqueue(say("Hello again."))
    copies[1].step("again")
    assert len(sam.context_messages()) == 3 and fake_llm.rejections == []


def test_import_under_an_existing_name_stores_nothing(fake_llm, tmp_path, db_location):
    db = db_location
    Agent.create("sam", "gpt-4o-mini", db=db)
    path = tmp_path / "sam.json"
    assert run("export", "sam", "-o", str(path), db=db).exit_code == 0
    before = counts(db)
    with pytest.raises(AlreadyExistsError, match="--name"):
        import_agent(open_db(db), path)
    result = run("import", str(path), db=db)
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: an agent named 'sam' already exists; import under another name with --name NEW\n"
    )
    assert counts(db) == before
    renamed = run("import", str(path), "--name", "sam2", db=db)
    assert renamed.exit_code == 0 and "Imported agent 'sam2'" in renamed.stdout


def _corrupt(raw: dict, case: str) -> str:
    if case == "truncated":
        return json.dumps(raw)[:200]
    changed = json.loads(json.dumps(raw))
    if case == "marker":
        changed["format"] = "someone.else"
    elif case == "version":
        changed["version"] = 3  # the version after the newest this memgpt_lite reads
    elif case == "version_zero":
        changed["version"] = 0
    elif case == "conversations_in_version_1":
        changed["conversations"] = [{"messages": [{"role": "user", "content": "hi"}]}]
    elif case == "conversation_window":
        changed["version"] = 2
        changed["conversations"] = [{"messages": [], "context_start": 1}]
    elif case == "version_text":
        changed["version"] = "1"
    elif case == "bad_role":
        changed["messages"][0]["role"] = "narrator"
    elif case == "orphan_window":
        changed["context_start"] = len(changed["messages"]) + 1
    elif case == "vector":
        changed["passages"][0]["vector"] = "AAAA"
    elif case == "not_an_object":
        changed = [changed]
    elif case == "unrelated":
        changed = {"hello": "world"}
    return json.dumps(changed)


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("truncated", "is not an agent file: not valid JSON"),
        ("marker", "unknown format 'someone.else'; expected 'memgpt_lite.agent'"),
        (
            "version",
            "version 3 of the memgpt_lite.agent format is not supported; this memgpt_lite "
            "reads versions 1 to 2 (written by a newer memgpt_lite: upgrade to read it)",
        ),
        ("version_zero", "version 0 of the memgpt_lite.agent format is not supported"),
        ("conversations_in_version_1", "conversations need version 2 of the format, not 1"),
        (
            "conversation_window",
            "not a valid agent file: conversations.0: context_start 1 is past the last of 0 "
            "messages",
        ),
        ("version_text", "the format version must be a number, not '1'"),
        ("bad_role", "is not a valid agent file: messages.0.role: Input should be"),
        ("orphan_window", "context_start 7 is past the last of 6 messages"),
        ("vector", "passage 0: the vector holds 3 bytes, not 64 float32 values"),
        ("not_an_object", "is not an agent file: it holds no JSON object"),
        ("unrelated", 'no "format": "memgpt_lite.agent" marker, and not a Letta .af file'),
    ],
)
def test_corrupt_files_store_nothing(fake_llm, tmp_path, case, expected):
    db = tmp_path / "a.db"
    agent = Agent.create("sam", "gpt-4o-mini", db=db, embedder=EMBEDDER)
    fake_llm.enqueue(say("Hi!"), say("Bye!"))
    agent.step("hello")
    agent.step("bye")
    agent.archival.insert("Something to keep.")
    raw = export_agent(agent.store, "sam").model_dump(mode="json")
    path = tmp_path / "bad.json"
    path.write_text(_corrupt(raw, case))
    before = counts(db)
    result = run("import", str(path), "--name", "copy", db=db)
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ") and len(result.stderr.splitlines()) == 1
    assert expected in result.stderr
    assert counts(db) == before


def test_binary_and_missing_files(tmp_path):
    db = tmp_path / "a.db"
    binary = tmp_path / "photo.af"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    result = run("import", str(binary), db=db)
    assert result.exit_code == 1
    assert result.stderr == f"Error: {binary} is not an agent file: it is not UTF-8 text\n"
    missing = run("import", str(tmp_path / "nope.json"), db=db)
    assert missing.exit_code == 1 and "cannot read" in missing.stderr
    assert counts(db)["agents"] == 0


def refuse_passage(db: str, text: str) -> tuple[type[Exception], ...]:
    """Make the database itself refuse to store a passage of `text` (one
    without quotes), failing with 'simulated failure'; the errors that may
    come of it: the driver's own, or the store's StoreError wrapping it."""
    if is_postgres(db):
        import psycopg

        execute_sql(
            db,
            "CREATE FUNCTION fail_poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            f"IF NEW.text = '{text}' THEN RAISE EXCEPTION 'simulated failure'; END IF; "
            "RETURN NEW; END $$",
        )
        execute_sql(
            db,
            "CREATE TRIGGER fail_poison BEFORE INSERT ON passages "
            "FOR EACH ROW EXECUTE FUNCTION fail_poison()",
        )
        return (psycopg.Error, StoreError)
    execute_sql(
        db,
        f"CREATE TRIGGER fail_poison BEFORE INSERT ON passages WHEN NEW.text = '{text}' "
        "BEGIN SELECT RAISE(ABORT, 'simulated failure'); END",
    )
    return (sqlite3.DatabaseError,)


def test_a_failure_inside_the_transaction_rolls_everything_back(fake_llm, db_location):
    db = db_location
    agent = Agent.create("sam", "gpt-4o-mini", db=db)
    fake_llm.enqueue(say("Hi!"))
    agent.step("hello")
    agent.archival.insert("first passage")
    agent.archival.insert("poison passage")
    data = export_agent(agent.store, "sam")
    # The database itself fails half-way through the import (after the agent,
    # its blocks and messages are written), as a full disk would.
    failure = refuse_passage(db, "poison passage")
    before = counts(db)
    with pytest.raises(failure, match="simulated failure"):
        store_agent_file(agent.store, data, name="copy")
    assert counts(db) == before
    assert [s.name for s, _ in agent.store.list_agents()] == ["sam"]


def test_reembed_on_import_with_another_embedder(fake_llm, tmp_path, db_location):
    db = db_location
    agent = Agent.create("sam", "gpt-4o-mini", db=db, embedder=EMBEDDER)
    agent.archival.insert("My car is red.")
    agent.archival.insert("Tea in the garden.")
    data = export_agent(agent.store, "sam")
    assert data.embedding_model == EMBEDDER and all(p.vector for p in data.passages)

    report = store_agent_file(agent.store, data, name="words", embedder=WordEmbedder())
    copy = Agent.load("words", store=agent.store, embedder=WordEmbedder())
    assert report.vectors == 2
    assert (copy.state.embedding_model, copy.state.embedding_dimension) == ("test:words", 6)
    assert copy.state.settings.embedder == "test:words"
    assert copy.archival.search("automobile")[0][0].text == "My car is red."

    # A file without vectors, imported with an embedder: embedded during the import.
    plain = Agent.create("plain", "gpt-4o-mini", store=agent.store)
    plain.archival.insert("Tea in the garden.")
    seen = fake_llm.embedding_inputs_seen
    result = run("export", "plain", "-o", "-", db=db)
    (tmp_path / "plain.json").write_text(result.stdout)
    imported = run(
        "import", str(tmp_path / "plain.json"), "--name", "plain2", "--embedder", EMBEDDER, db=db
    )
    assert imported.exit_code == 0, imported.output
    assert "1 passages (1 with vectors)" in imported.stdout
    assert fake_llm.embedding_inputs_seen == seen + 1
    assert Agent.load("plain2", store=agent.store).state.embedding_model == EMBEDDER


def test_cli_export_output_choices(fake_llm, tmp_path, monkeypatch):
    db = tmp_path / "a.db"
    Agent.create("sam", "gpt-4o-mini", db=db, tools=[check_order_status])
    monkeypatch.chdir(tmp_path)
    result = run("export", "sam", db=db)
    assert result.exit_code == 0
    assert result.stdout.startswith("Exported agent 'sam' to sam.json: 2 blocks, 0 messages")
    assert "custom tools (check_order_status) are exported by name only" in result.stderr
    again = run("export", "sam", db=db)
    assert again.exit_code == 1
    assert again.stderr == "Error: sam.json already exists; use --force to replace it\n"
    assert run("export", "sam", "--force", db=db).exit_code == 0
    assert json.loads(run("export", "sam", "-o", "-", db=db).stdout)["name"] == "sam"
    ghost = run("export", "ghost", db=db)
    assert ghost.exit_code == 1 and ghost.stderr == "Error: no agent named 'ghost'\n"
    assert not (tmp_path / "ghost.json").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_pairing_repairs_what_the_api_would_refuse():
    when = datetime(2025, 1, 1, tzinfo=UTC)

    def msg(role, content=None, calls=(), call_id=None):
        tool_calls = [ToolCall(id=c, name="lookup") for c in calls]
        return FileMessage(
            role=role, content=content, tool_calls=tool_calls, tool_call_id=call_id, created_at=when
        )

    messages = [
        msg("tool", "orphan result", call_id="x"),
        msg("user", "hi"),
        msg("assistant", calls=["a", "b", "a"]),
        msg("tool", "answer b", call_id="b"),
        msg("tool", "stray", call_id="z"),
        msg("user", "next"),
    ]
    # The window started at the tool result: it takes in its call.
    fixed, start, notes = pair_tool_calls(messages, start=3)
    assert [(m.role, m.content, m.tool_call_id) for m in fixed] == [
        ("user", "hi", None),
        ("assistant", None, None),
        ("tool", MISSING_RESULT, "a"),
        ("tool", "answer b", "b"),
        ("user", "next", None),
    ]
    assert [c.id for c in fixed[1].tool_calls] == ["a", "b"]
    assert fixed[2].name == "lookup" and start == 1
    assert notes == [
        "1 tool calls had no result; each was given an error result",
        "3 tool results or repeated calls without a matching call dropped",
    ]
    assert pair_tool_calls(fixed, start=1) == (fixed, 1, [])
    assert pair_tool_calls(fixed, start=len(fixed))[1] == len(fixed)


def test_only_the_last_answer_with_no_results_keeps_waiting():
    def msg(role, content=None, calls=(), call_id=None):
        return FileMessage(
            role=role,
            content=content,
            tool_calls=[ToolCall(id=c, name="lookup") for c in calls],
            tool_call_id=call_id,
        )

    messages = [
        msg("user", "hi"),
        msg("assistant", calls=["early"]),  # unanswered, then more conversation
        msg("user", "next"),
        msg("assistant", "Look it up.", calls=["last", "last"]),
    ]
    fixed, start, notes = pair_tool_calls(messages, start=len(messages))
    assert [(m.role, m.content, m.tool_call_id) for m in fixed] == [
        ("user", "hi", None),
        ("assistant", None, None),
        ("tool", MISSING_RESULT, "early"),
        ("user", "next", None),
        ("assistant", "Look it up.", None),
    ]
    assert [c.id for c in fixed[-1].tool_calls] == ["last"]  # the repeat is dropped
    assert start == 4  # the answer the user's approval will add results to is in the window
    assert notes == [
        "1 tool calls had no result; each was given an error result",
        "1 tool results or repeated calls without a matching call dropped",
        "1 tool call waiting for approval: approve or deny it",
    ]
    # A last answer with some of its results is not waiting: the rest are made up.
    partial = [msg("assistant", calls=["a", "b"]), msg("tool", "answer a", call_id="a")]
    fixed, _, notes = pair_tool_calls(partial, start=0)
    assert [m.content for m in fixed[1:]] == ["answer a", MISSING_RESULT]
    assert not any("waiting" in note for note in notes)


def test_a_waiting_answer_keeps_waiting_across_export_and_import(tmp_path):
    REMOVED.clear()
    model = ScriptedModel(
        say("Hello."),
        reply("Tidy up.", [call("remove", path="/tmp/a", request_heartbeat=True)]),
    )
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db", llm=model, tools=[remove])
    agent.step("hi")
    waiting = agent.step("remove /tmp/a").pending_approvals
    path = tmp_path / "sam.json"
    write_agent_file(agent.store, "sam", path)
    report = import_agent(Store(tmp_path / "b.db"), path)
    assert "1 tool call waiting for approval: approve or deny it" in report.notes
    assert not any("no result" in note for note in report.notes)
    model = ScriptedModel(say("Removed."))
    again = Agent.load("sam", db=tmp_path / "b.db", llm=model, tools=[remove])
    assert again.pending_approvals() == waiting and REMOVED == []
    result = again.approve()
    assert REMOVED == ["/tmp/a"] and result.replies == ["Removed."]
    assert again.pending_approvals() == []


def test_the_old_default_timeout_in_a_file_is_not_kept(fake_llm, tmp_path):
    db = tmp_path / "a.db"
    Agent.create("sam", "gpt-4o-mini", db=db, llm_options={"timeout_seconds": 45.0})
    chosen = json.loads(export_agent(Store(db), "sam").model_dump_json())
    old = json.loads(json.dumps(chosen))
    old["llm"]["timeout_seconds"] = 120.0  # what every agent held before it was a setting
    for name, data in (("chosen", chosen), ("old", old)):
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
        import_agent(Store(db), tmp_path / f"{name}.json", name=name)
    assert Agent.load("chosen", db=db).state.llm.timeout_seconds == 45.0
    assert Agent.load("old", db=db).state.llm.timeout_seconds is None
