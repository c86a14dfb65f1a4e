"""Block history: every change of a core memory block, by the agent's tools,
the user or an import, kept with its time and author, shown as diffs and
undone by a revert. Through the real Agent and tools with the scripted
model, on both backends (`db_location`)."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime

import pytest
from click.testing import CliRunner, Result
from support.backends import execute_sql, is_postgres

from memgpt_lite import Agent, AgentSettings, Block
from memgpt_lite.agentfile.native import import_agent, write_agent_file
from memgpt_lite.cli.main import cli
from memgpt_lite.errors import ConfigError
from memgpt_lite.memory.core.block_history import history_diffs
from memgpt_lite.storage.open import open_storage
from memgpt_lite.testing import call, reply, say
from memgpt_lite.testing.model import ScriptedModel


def _as_before_history(location: str) -> None:
    """Put the database back as the version before block history left it."""
    execute_sql(location, "DROP TABLE block_history")
    if is_postgres(location):
        execute_sql(
            location, "DELETE FROM memgpt_lite_migrations WHERE name = 'm006_block_history'"
        )
        from memgpt_lite.storage.postgres import store as store_module
        from memgpt_lite.storage.postgres.connect import close_pool

        store_module._prepared.pop(location, None)  # this process opened it: open anew
        close_pool(location)
        return
    execute_sql(location, "DELETE FROM _sqlite_migrations WHERE name = 'm013_block_history'")


def test_the_migration_gives_existing_blocks_their_current_value_as_history(db_location):
    sam = Agent.create("sam", "gpt-4o-mini", db=db_location, blocks=[Block(label="notes")])
    sam.set_block("notes", "kept from before")
    block = sam.block("notes")
    sam.store.close()
    _as_before_history(db_location)
    with open_storage(db_location) as store:
        [version] = store.block_history(block.id)
    assert (version.label, version.value, version.author) == (
        "notes",
        "kept from before",
        "unknown",
    )
    assert version.created_at == block.updated_at


# Through the agent: who made each change, diffs, reverts


def make_agent(location: str, model: ScriptedModel, tool_set: str = "memgpt") -> Agent:
    blocks = [
        Block(label="human", value="Name: Alice", limit=200),
        Block(label="rules", value="Be kind.", read_only=True),
    ]
    return Agent.create(
        "sam",
        "gpt-4o-mini",
        db=location,
        blocks=blocks,
        llm=model,
        settings=AgentSettings(tool_set=tool_set),
    )


def authors(agent: Agent, label: str) -> list[tuple[str, str]]:
    return [(v.value, v.author) for v in agent.block_history(label)]


def test_the_agents_tools_and_the_user_each_leave_a_version(db_location):
    append = reply(
        tool_calls=[
            call("core_memory_append", label="human", content="Likes: tea", request_heartbeat=True)
        ]
    )
    model = ScriptedModel(append, append, say("Noted."))
    sam = make_agent(db_location, model)
    assert sam.step("I like tea").replies == ["Noted."]  # the second append changed nothing
    sam.set_block("human", "Name: Alice\nLikes: coffee")
    assert authors(sam, "human") == [
        ("Name: Alice", "create"),
        ("Name: Alice\nLikes: tea", "agent:sam"),
        ("Name: Alice\nLikes: coffee", "user"),
    ]
    assert [v.value for v in sam.block_history("rules")] == ["Be kind."]


def test_the_letta_tools_leave_versions_by_the_agent_too(db_location):
    model = ScriptedModel(
        reply(
            tool_calls=[
                call(
                    "memory_rethink",
                    label="human",
                    new_memory="Alice, a gardener",
                    request_heartbeat=True,
                )
            ]
        ),
        reply(
            tool_calls=[
                call(
                    "memory_rethink", label="plans", new_memory="Visit Kew", request_heartbeat=True
                )
            ]
        ),
        say("Done."),
    )
    sam = make_agent(db_location, model, tool_set="letta-v1")
    sam.step("I garden; I plan to visit Kew")
    assert authors(sam, "human")[-1] == ("Alice, a gardener", "agent:sam")
    # A block the agent made: its empty start, then its text, both the agent's.
    assert authors(sam, "plans") == [("", "agent:sam"), ("Visit Kew", "agent:sam")]


def test_the_anthropic_memory_tool_leaves_versions_by_the_agent_too(db_location):
    edit = {"old_str": "Alice", "new_str": "Alice Liddell", "request_heartbeat": True}
    model = ScriptedModel(
        reply(tool_calls=[call("memory", command="str_replace", path="/memories/human", **edit)]),
        say("Done."),
    )
    sam = make_agent(db_location, model, tool_set="anthropic-memory")
    sam.step("My surname is Liddell")
    assert authors(sam, "human") == [
        ("Name: Alice", "create"),
        ("Name: Alice Liddell", "agent:sam"),
    ]


def test_revert_sets_an_old_value_as_a_new_version_by_the_user(db_location):
    sam = make_agent(db_location, ScriptedModel())
    sam.set_block("human", "Name: Alice\nLikes: tea")
    sam.set_block("human", "Name: Bob")
    block = sam.revert_block("human", 1)
    assert block.value == sam.block("human").value == "Name: Alice\nLikes: tea"
    assert [a for _, a in authors(sam, "human")] == ["create", "user", "user", "user"]
    sam.revert_block("human", -4)  # from the end, as a list is indexed
    assert sam.block("human").value == "Name: Alice"
    # "As of" a time: the value the block held then.
    second = sam.block_history("human")[1]
    assert sam.revert_block("human", second.created_at).value == "Name: Alice\nLikes: tea"
    assert len(sam.block_history("human")) == 6


def test_a_revert_follows_the_rules_of_an_edit(db_location):
    sam = make_agent(db_location, ScriptedModel())
    with pytest.raises(ConfigError, match=r"^block 'human' has versions 0 to 0 .*no version 3$"):
        sam.revert_block("human", 3)
    with pytest.raises(ConfigError, match="had no value yet at 2001-01-01 00:00:00 UTC"):
        sam.revert_block("human", datetime(2001, 1, 1))
    with pytest.raises(ConfigError, match="read-only"):
        sam.revert_block("rules", 0)
    long = "x" * 150
    sam.set_block("human", long)
    sam.store.save_block(sam.block("human").model_copy(update={"value": "", "limit": 100}))
    with pytest.raises(ConfigError, match="over its limit of 100; nothing was changed"):
        sam.revert_block("human", -2)
    assert sam.block("human").value == ""


def test_an_imported_agent_starts_its_blocks_history_as_an_import(tmp_path):
    sam = make_agent(str(tmp_path / "a.db"), ScriptedModel())
    write_agent_file(sam.store, "sam", tmp_path / "sam.af")
    with open_storage(tmp_path / "b.db") as other:
        import_agent(other, tmp_path / "sam.af")
        state = other.get_agent("sam")
        history = other.block_history(state.block_ids[0])
    assert [(v.value, v.author) for v in history] == [("Name: Alice", "import")]


def test_diffs_show_each_change_with_its_time_and_author(tmp_path):
    sam = make_agent(str(tmp_path / "a.db"), ScriptedModel())
    sam.set_block("human", "Name: Alice\nLikes: tea")
    history = sam.block_history("human")
    text = history_diffs(history)
    first, second = text.split("\n\n")
    assert first.splitlines()[0].startswith("version 0  ")
    assert first.splitlines()[0].endswith("  by create")
    assert "+Name: Alice" in first.splitlines()
    when = history[1].created_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    assert second.splitlines() == [
        f"version 1  {when}  by user",
        "--- human (version 0)",
        "+++ human (version 1)",
        "@@ -1 +1,2 @@",
        " Name: Alice",
        "+Likes: tea",
    ]


def test_a_server_users_edit_is_theirs(tmp_path):
    from fastapi.testclient import TestClient
    from support.serving import new_key

    from memgpt_lite.server.app import create_app

    db = str(tmp_path / "server.db")
    key = new_key(db, "alice")
    with TestClient(create_app(db), headers={"Authorization": f"Bearer {key}"}) as client:
        body = {"name": "sam", "model": "fake-model", "blocks": [{"label": "human"}]}
        assert client.post("/api/agents", json=body).status_code == 201
        edited = client.put("/api/agents/sam/blocks/human", json={"value": "Alice, 30"})
        assert edited.status_code == 200
    assert authors(Agent.load("sam", db=db), "human") == [
        ("", "create"),
        ("Alice, 30", "user:alice"),
    ]


# The command line and the chat


def run_cli(db: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", db, *args], catch_exceptions=False)


def test_the_blocks_command_shows_the_history_and_reverts(db_location):
    sam = make_agent(db_location, ScriptedModel())
    sam.set_block("human", "Name: Alice\nLikes: tea")
    shown = run_cli(db_location, "blocks", "sam", "human", "--history")
    assert shown.exit_code == 0
    assert shown.stdout == history_diffs(sam.block_history("human")) + "\n"
    assert "+Likes: tea" in shown.stdout.splitlines()
    reverted = run_cli(db_location, "blocks", "sam", "human", "--revert", "0")
    assert reverted.stdout == (
        "Reverted block 'human' to version 0 (11/200 chars); that is version 2 now.\n"
    )
    assert sam.block("human").value == "Name: Alice"
    again = run_cli(db_location, "blocks", "sam", "human", "--revert", "-1")
    assert again.stdout == "Block 'human' already holds version 2; nothing was changed.\n"
    assert [a for _, a in authors(sam, "human")] == ["create", "user", "user"]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["human", "--revert", "5"], "block 'human' has versions 0 to 0 (-1 is the last); "),
        (["rules", "--revert", "0"], "block 'rules' is read-only: it cannot be edited."),
        (["--history"], "name the block: memgpt-lite blocks NAME LABEL --history"),
        (["human", "--history", "--revert", "0"], "give one of --set, --edit, --history or "),
        (["human", "--set", "x", "--revert", "0"], "give one of --set, --edit, --history or "),
    ],
)
def test_bad_history_input_is_one_line_and_changes_nothing(tmp_path, args, error):
    db = str(tmp_path / "a.db")
    sam = make_agent(db, ScriptedModel())
    result = run_cli(db, "blocks", "sam", *args)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {error}") and result.stderr.count("\n") == 1
    assert authors(sam, "human") == [("Name: Alice", "create")]


def test_the_chat_shows_a_blocks_history(fake_llm, chat_env, tmp_path):
    make_agent(str(tmp_path / "chat.db"), ScriptedModel())
    entries = ["/block human Name: Bob", "/history human", "/history ghost", "/history"]
    finished = subprocess.run(
        [sys.executable, "-m", "memgpt_lite", "--db", str(tmp_path / "chat.db"), "chat", "sam"],
        input="\n".join(entries) + "\n",
        capture_output=True,
        text=True,
        env=chat_env,
        timeout=60,
    )
    assert finished.returncode == 0, finished.stderr
    lines = finished.stdout.splitlines()
    assert lines[lines.index("+++ human (version 1)") + 1 :][:3] == [
        "@@ -1 +1 @@",
        "-Name: Alice",
        "+Name: Bob",
    ]
    assert any(line.startswith("version 1  ") and line.endswith("  by user") for line in lines)
    assert "Error: agent 'sam' has no block labelled 'ghost'" in lines
    assert "Usage: /history LABEL" in finished.stdout
