"""`memgpt-lite copy-db SRC DST`: every agent, whole, from one database to
another, through the Storage protocol only.

Each test takes `src` and `dst` locations from the `locations` fixture, once
per pair in PAIRS: SQLite to SQLite, and SQLite to and from PostgreSQL (a
fresh database on the test server). Agents are made with the real agent
against the fake OpenAI server: steps (with usage), a compaction (a window
that starts after the first message), archival passages with tags and dates,
and vectors of both kinds from the fake endpoint embedder.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from click.testing import CliRunner
from pydantic import SecretStr
from support.contract import sealing

from memgpt_lite import Agent, Block
from memgpt_lite.agent.archives import Archives
from memgpt_lite.cli.main import cli
from memgpt_lite.conversations import Conversation
from memgpt_lite.errors import AlreadyExistsError, NotFoundError
from memgpt_lite.memory.recall.window import compile_context
from memgpt_lite.memory.retrieval.search import search_messages
from memgpt_lite.models import AgentState, LLMConfig, MCPServer, Message, ToolDefinition
from memgpt_lite.storage.copy import AgentCopy, copy_database
from memgpt_lite.storage.open import open_storage
from memgpt_lite.storage.protocol import Owner, Storage
from memgpt_lite.storage.protocols.groups import AgentGroup
from memgpt_lite.storage.protocols.identities import Identity
from memgpt_lite.storage.protocols.providers import Provider
from memgpt_lite.testing import FakeOpenAIServer, reply, say

EMBEDDER = "endpoint:text-embedding-3-small"

PAIRS = [("sqlite", "sqlite"), ("sqlite", "postgres"), ("postgres", "sqlite")]


@pytest.fixture(params=PAIRS, ids=lambda pair: "-to-".join(pair))
def locations(request, tmp_path) -> tuple[str, str]:
    """A source and a destination: SQLite files, or fresh PostgreSQL databases."""

    def location(kind: str, name: str) -> str:
        if kind == "sqlite":
            return str(tmp_path / f"{name}.db")
        server = request.getfixturevalue("pg_server")
        url = server.new_database()
        request.addfinalizer(lambda: server.drop(url))
        return url

    src_kind, dst_kind = request.param
    return location(src_kind, "src"), location(dst_kind, "dst")


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def make_agents(src: str, fake_llm: FakeOpenAIServer) -> None:
    """sam and ada in `src`, sharing the block "team", with something in
    every part a copy must carry."""
    team = Block(label="team", value="We build memgpt_lite.", description="Shared.")
    sam = Agent.create(
        "sam",
        "gpt-4o-mini",
        db=src,
        blocks=[Block(label="persona", value="I am Sam."), Block(label="human"), team],
        embedder=EMBEDDER,
    )
    # A second version of the shared block (before the passages: the copy's
    # "memory last modified" comes from them).
    sam.set_block("team", "We build memgpt_lite, and keep its history.")
    for text in ("Hi, I'm Alice and I love tea", "My sister Beth gardens", "Bye for now"):
        fake_llm.enqueue(say(f"Noted: {text}"))
        sam.step(text)
    fake_llm.enqueue(reply(content="Alice loves tea; her sister Beth gardens."))
    assert sam.runner.summarize().evicted > 0  # the window now starts after the first message
    sam.archival.insert("Alice's sister Beth gardens.", tags=["family"])
    sam.archival.insert(
        "Tea: Alice likes oolong.",
        tags=["food", "tea"],
        created_at=datetime(2025, 3, 1, 9, 30, tzinfo=UTC),
    )
    search_messages(sam.runner, "tea", 5)  # embeds the messages too
    ada = Agent.create("ada", "gpt-4o", db=src, blocks=[Block(label="persona"), team])
    fake_llm.enqueue(say("Hello."))
    ada.step("Hello Ada")
    ada.archival.insert("Ada keeps notes.")
    first = sam.store.list_steps(sam.state.owner, sam.state.id)[-1]
    sam.store.set_step_feedback(sam.state.id, first.step_id, "negative", ["too-short"])
    sam.store.close()
    ada.store.close()


def vectors_by_item(store: Storage, agent_id: str, owner: Owner) -> dict[str, list[float]]:
    """The agent's vectors of one kind by the id of their message or passage."""
    state = store.get_agent(agent_id)
    if not state.embedding_dimension:
        return {}
    stored = store.load_vectors(agent_id, owner, 0, state.embedding_dimension)
    seqs = [int(seq) for seq in stored.seqs]
    if owner == "message":
        items = store.messages_by_seq(agent_id, seqs)
    else:
        items = store.passages_by_seq(agent_id, seqs)
    return {items[s].id: row.tolist() for s, row in zip(seqs, stored.matrix, strict=True)}


def everything(store: Storage, name: str) -> dict[str, object]:
    """All of agent `name` that does not depend on the database's seqs."""
    state = store.get_agent(name)
    passages, _ = store.list_passages(state.id, 100)
    return {
        "state": state.model_dump(exclude={"context_start", "updated_at"}),
        "blocks": [b.model_dump() for b in store.get_blocks(state.id)],
        "block history": [
            [v.model_dump(exclude={"seq"}) for v in store.block_history(block_id)]
            for block_id in state.block_ids
        ],
        "messages": [m.model_dump(exclude={"seq"}) for m in store.messages_from(state.id, 0)],
        "window": [m.id for m in store.messages_from(state.id, state.context_start)],
        "passages": [p.model_dump(exclude={"seq"}) for p in passages],
        "message vectors": vectors_by_item(store, state.id, "message"),
        "passage vectors": vectors_by_item(store, state.id, "passage"),
        "usage": store.agent_usage(state.id),
        "steps": store.list_steps(state.owner, state.id, limit=1000),
        "totals": store.usage_by_model(state.id),
    }


def agent_names(location: str) -> list[str]:
    with open_storage(location) as store:
        return [state.name for state, _ in store.list_agents()]


def test_copy_db_copies_every_agent_whole(locations, fake_llm):
    src, dst = locations
    make_agents(src, fake_llm)
    result = run("copy-db", src, dst)
    assert result.exit_code == 0, result.output
    # Piped: one tab-separated row per agent, by name.
    assert result.stdout.splitlines() == ["ada\t2\t3\t1\t0\t0\t1", "sam\t3\t9\t2\t6\t2\t4"]
    assert "Copied 2 agent(s)" in result.stderr
    with open_storage(src) as before, open_storage(dst) as after:
        for name in ("sam", "ada"):
            original, copy = everything(before, name), everything(after, name)
            for part in original:
                assert copy[part] == original[part], (name, part)
            assert original["message vectors"] or name == "ada"
        assert [len(h) for h in everything(after, "sam")["block history"]] == [1, 1, 2]
        team = after.get_agent("sam").block_ids[2]
        assert after.block_owners(team) == ["ada", "sam"]  # created once, linked to both
        assert after.get_agent("sam").context_start > 0
        assert [s.feedback for s in everything(after, "sam")["steps"]][-1] == "negative"
    # The copy carries on: the same request as from the source, accepted.
    expected = compile_context(Agent.load("sam", db=src).runner).request_messages
    copied = Agent.load("sam", db=dst)
    assert compile_context(copied.runner).request_messages == expected
    assert copied.archival.search("oolong")[0][0].text == "Tea: Alice likes oolong."
    fake_llm.enqueue(say("Still here."))
    assert copied.step("Are you there?").replies == ["Still here."]
    assert fake_llm.rejections == []


def test_small_batches_keep_the_order(locations, fake_llm):
    src, dst = locations
    make_agents(src, fake_llm)
    copied = copy_database(src, dst, batch=2)
    assert [c.name for c in copied] == ["ada", "sam"]
    assert copied[1] == AgentCopy("sam", 3, 9, 2, 6, 2, 4, 4)
    with open_storage(src) as before, open_storage(dst) as after:
        assert everything(after, "sam") == everything(before, "sam")


def test_a_destination_with_the_agent_is_refused_and_unchanged(locations, fake_llm):
    src, dst = locations
    make_agents(src, fake_llm)
    Agent.create("sam", "other-model", db=dst).store.close()  # same name, another id
    result = CliRunner().invoke(cli, ["copy-db", src, dst])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "Error: the destination already has these agents (same name or id): sam; nothing was copied"
    ]
    assert agent_names(dst) == ["sam"]


def test_copying_twice_is_refused(locations, fake_llm):
    src, dst = locations
    make_agents(src, fake_llm)
    assert run("copy-db", src, dst).exit_code == 0
    with open_storage(dst) as store:
        store.rename_agent(store.get_agent("sam").id, "sam2")  # same id, another name
    again = CliRunner().invoke(cli, ["copy-db", src, dst])
    assert again.exit_code == 1 and "(same name or id): ada, sam2;" in again.output
    assert agent_names(dst) == ["ada", "sam2"]


def test_a_missing_source_file_is_an_error_not_an_empty_database(tmp_path):
    missing, dst = tmp_path / "missing.db", tmp_path / "dst.db"
    result = CliRunner().invoke(cli, ["copy-db", str(missing), str(dst)])
    assert result.exit_code == 1
    assert result.output == f"Error: no database file at {missing}\n"
    assert not missing.exists() and not dst.exists()


def test_one_database_twice_is_refused(tmp_path, monkeypatch, fake_llm):
    monkeypatch.chdir(tmp_path)
    make_agents("a.db", fake_llm)
    for dst in ("a.db", str(tmp_path / "a.db"), "./a.db"):
        result = CliRunner().invoke(cli, ["copy-db", "a.db", dst])
        assert result.exit_code == 1
        assert "the source and the destination are one database" in result.output
    assert agent_names("a.db") == ["ada", "sam"]


def test_a_password_never_appears_in_the_output():
    url = "postgresql://sam:s3cret@db.example.com:5432/mem"
    result = CliRunner().invoke(cli, ["copy-db", url, url])
    assert result.exit_code == 1
    assert "postgresql://sam:***@db.example.com:5432/mem" in result.output
    assert "s3cret" not in result.output


def test_a_failure_mid_way_leaves_the_destination_as_it_was(locations, fake_llm):
    src, dst = locations
    make_agents(src, fake_llm)
    Agent.create("zoe", "m", db=dst).store.close()

    def fail_after_the_first(copied: AgentCopy) -> None:
        if copied.name == "ada":
            raise KeyboardInterrupt  # Ctrl-C after one agent was written

    with pytest.raises(KeyboardInterrupt):
        copy_database(src, dst, on_copied=fail_after_the_first)
    assert agent_names(dst) == ["zoe"]
    with open_storage(dst) as store:
        zoe = store.get_agent("zoe").id
        assert store.vector_counters(zoe) == (0, 0)
        with pytest.raises(NotFoundError):
            store.get_block(Agent.load("ada", db=src).state.block_ids[1])
    # Nothing was left behind to trip over: the next copy goes through.
    assert [c.name for c in copy_database(src, dst)] == ["ada", "sam"]
    assert agent_names(dst) == ["ada", "sam", "zoe"]


def test_an_empty_source_copies_nothing(tmp_path):
    src = tmp_path / "empty.db"
    open_storage(src).close()
    result = run("copy-db", str(src), str(tmp_path / "dst.db"))
    assert result.exit_code == 0
    assert result.output == f"{src} holds no agents; nothing was copied.\n"


def test_a_taken_block_is_refused(locations, fake_llm):
    src, dst = locations
    make_agents(src, fake_llm)
    with open_storage(src) as store:
        team = store.get_blocks(store.get_agent("ada").id)[1]
    Agent.create("zoe", "m", db=dst, blocks=[team]).store.close()
    with pytest.raises(AlreadyExistsError, match=r"these blocks: team \(block-\w+\) of ada;"):
        copy_database(src, dst)
    assert agent_names(dst) == ["zoe"]


def test_the_tool_registry_comes_along_and_a_taken_tool_is_refused(locations):
    src, dst = locations
    with open_storage(src) as store:
        store.add_mcp_server(
            MCPServer(name="time", owner="alice", transport="stdio", command="mcp-server-time")
        )
        store.add_tool(
            ToolDefinition(
                name="get_time", owner="alice", kind="mcp", mcp_server="time", json_schema={}
            )
        )
        source = "def weather(city: str) -> str:\n    return 'sun'\n"
        weather = ToolDefinition(
            name="weather", kind="python", source_code=source, json_schema={}, trusted=True
        )
        store.add_tool(weather)
        tools, servers = store.list_tools(), store.list_mcp_servers()
    copy_database(src, dst)
    with open_storage(dst) as store:
        assert (store.list_tools(), store.list_mcp_servers()) == (tools, servers)
    taken = "MCP server time of alice, tool get_time of alice, tool weather of local"
    with pytest.raises(AlreadyExistsError, match=f"these: {taken}; nothing was copied"):
        copy_database(src, dst)


def test_an_agents_conversations_come_along_with_their_windows(tmp_path):
    src, dst = str(tmp_path / "src.db"), str(tmp_path / "dst.db")
    with open_storage(src) as store:
        sam = AgentState(name="sam", llm=LLMConfig(model="gpt-4o-mini"), system="s")
        store.create_agent(sam, [])
        trip = store.create_conversation(Conversation(agent_id=sam.id, summary="the trip")).id
        texts = [("home", None), ("away 1", trip), ("away 2", trip)]
        store.add_messages(
            [Message(agent_id=sam.id, role="user", content=t, conversation_id=c) for t, c in texts]
        )
        second = store.last_messages(sam.id, 1, trip)[0].seq or 0

        def compacted(state: AgentState) -> None:
            state.context_start, state.summary = second, "they set off"

        store.update_agent(sam.id, compacted, trip)
    copy_database(src, dst)
    with open_storage(dst) as store:
        [copied] = store.list_conversations(sam.id)
        assert (copied.id, copied.summary) == (trip, "the trip")
        assert copied.window_summary == "they set off"
        state = store.get_agent(sam.id, conversation=trip)
        assert [m.content for m in store.window(sam.id, state.context_start, trip)] == ["away 2"]
        assert [m.content for m in store.messages_from(sam.id, 0)] == ["home"]


def test_groups_come_along_with_what_they_read_renumbered(locations):
    src, dst = locations
    with open_storage(src) as store:
        main, helper = (
            AgentState(name=name, llm=LLMConfig(model="gpt-4o-mini"), system="s")
            for name in ("main", "helper")
        )
        for state in (main, helper):
            store.create_agent(state, [])
        said = [Message(agent_id=main.id, role="user", content=t) for t in ("one", "two", "three")]
        store.add_messages(said)
        group = AgentGroup(
            owner="local", manager_agent_id=main.id, agent_ids=[helper.id], frequency=2
        )
        group.processed_seq = said[1].seq or 0
        store.save_group(group)
        # A group that talks: no main agent, each agent's conversation of it.
        talk = store.create_conversation(Conversation(agent_id=helper.id, summary="group")).id
        talking = AgentGroup(
            owner="local",
            manager_type="round_robin",
            agent_ids=[helper.id, main.id],
            max_turns=3,
            conversations={helper.id: talk},
        )
        store.save_group(talking)
    with open_storage(dst) as store:  # so that the copied messages get other seqs
        other = AgentState(name="other", llm=LLMConfig(model="gpt-4o-mini"), system="s")
        store.create_agent(other, [])
        store.add_messages([Message(agent_id=other.id, role="user", content="hi") for _ in "12345"])
    copy_database(src, dst)
    with open_storage(dst) as store:
        copied, copied_talk = store.list_groups()
        read = store.first_messages(main.id, 0, 10)
    assert (copied.id, copied.agent_ids, copied.frequency) == (group.id, [helper.id], 2)
    assert (copied_talk.manager_agent_id, copied_talk.agent_ids, copied_talk.max_turns) == (
        None,
        [helper.id, main.id],
        3,
    )
    assert copied_talk.conversations == {helper.id: talk}
    assert copied.processed_seq == read[1].seq != said[1].seq and read[1].id == said[1].id


def test_identities_come_along_with_their_agents_and_blocks(locations):
    src, dst = locations
    with open_storage(src) as store:
        sam = AgentState(name="sam", llm=LLMConfig(model="gpt-4o-mini"), system="s", owner="alice")
        store.create_agent(sam, [Block(label="persona", value="p")])
        ann = Identity(
            owner="alice",
            identifier_key="ann",
            name="Ann",
            identity_type="user",
            properties=[{"key": "plan", "value": "pro", "type": "string"}],
            agent_ids=[sam.id],
            block_ids=sam.block_ids,
        )
        store.save_identity(ann)
    copy_database(src, dst)
    with open_storage(dst) as store:
        [copied] = store.list_identities()
    assert copied.model_dump(exclude={"updated_at"}) == ann.model_dump(exclude={"updated_at"})


def test_providers_come_along_sealed_and_the_same_secret_opens_them(locations, tmp_path):
    src, dst = locations
    secret = sealing(tmp_path)
    mine = Provider(
        owner="alice",
        name="lc-openai",
        provider_type="openai",
        base_url="http://127.0.0.1:9/v1",
        api_key=SecretStr("sk-alice"),
    )
    with open_storage(src, settings=secret) as store:
        store.save_provider(mine)
    copy_database(src, dst)  # with no secret: the sealed key is copied as it is
    with open_storage(dst, settings=secret) as store:
        [copied] = store.list_providers()
    assert copied.model_dump(exclude={"updated_at"}) == mine.model_dump(exclude={"updated_at"})
    assert copied.api_key is not None and copied.api_key.get_secret_value() == "sk-alice"


def test_archives_come_along_with_their_passages_vectors_and_agents(locations, fake_llm):
    src, dst = locations
    with open_storage(src) as store:
        sam = Agent.create("sam", "gpt-4o-mini", store=store, owner="alice")
        kb = Archives(store).create("alice", "kb", "facts", EMBEDDER)
        Agent(kb.store, store).archival.insert("The vault code is 7421.", tags=["vault"])
        Archives(store).attach(sam.state, kb.id)
    copy_database(src, dst)
    with open_storage(dst) as store:
        [copied] = store.list_archives()
        state = store.get_agent(sam.state.id)
        found, _ = Agent(state, store).archival.search("vault code")
        space = store.archive_store(kb.id).embedding_dimension
        vectors = store.load_vectors(kb.id, "passage", 0, space)
    assert (copied.id, copied.owner, copied.name, copied.description) == (
        kb.id,
        "alice",
        "kb",
        "facts",
    )
    assert state.attached_archive == kb.id
    assert [(p.text, p.tags, p.agent_id) for p in found] == [
        ("The vault code is 7421.", ["vault"], kb.id)
    ]
    assert list(vectors.seqs) == [found[0].seq]
