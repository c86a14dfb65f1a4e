"""The memory tool sets: Letta's V1 memory tools and Anthropic's memory tool
over our blocks, with read-only flags, limits and paths enforced; and the
choice of set at create time."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

from memgpt_lite import Agent, AgentSettings, Block
from memgpt_lite.agentfile.native import import_agent, write_agent_file
from memgpt_lite.cli.main import cli
from memgpt_lite.errors import ConfigError
from memgpt_lite.memory.core.blocks import load_prompt, memory_prompt
from memgpt_lite.storage.sqlite.store import Store
from memgpt_lite.testing import call, reply, say
from memgpt_lite.testing.hostile import hostile_arguments
from memgpt_lite.tools.schema import ToolContext, ToolOutcome, tool
from memgpt_lite.tools.sets import TOOL_SETS, agent_tools

COMMON = {
    "send_message",
    "conversation_search",
    "conversation_search_date",
    "archival_memory_insert",
    "archival_memory_search",
}


@pytest.fixture
def agent(tmp_path) -> Agent:
    blocks = [
        Block(label="human", value="Name: Alice\nLikes: tea", limit=100),
        Block(label="rules", value="Be kind.", read_only=True),
        Block(label="notes", value="a\nb\nc"),
    ]
    return Agent.create(
        "sam",
        "gpt-4o-mini",
        blocks=blocks,
        db=tmp_path / "agents.db",
        settings=AgentSettings(tool_set="letta-v1"),
    )


def run(agent: Agent, name: str, **arguments) -> ToolOutcome:
    context = ToolContext(deps=agent.runner, step_id="step-test")
    return agent.tools[name].run(context, json.dumps(arguments), 6000)


def value(agent: Agent, label: str) -> str:
    return agent.block(label).value


def labels(agent: Agent) -> list[str]:
    return [b.label for b in agent.blocks]


def test_each_set_keeps_the_common_tools_and_has_its_memory_tools():
    assert set(TOOL_SETS["memgpt"]) == COMMON | {"core_memory_append", "core_memory_replace"}
    assert set(TOOL_SETS["letta-v1"]) == COMMON | {
        "memory_insert",
        "memory_replace",
        "memory_rethink",
        "memory",
    }


def test_letta_tool_parameters_are_letta_s():
    def params(name: str) -> set[str]:
        schema = TOOL_SETS["letta-v1"][name].schema()["function"]["parameters"]
        return set(schema["properties"]) - {"request_heartbeat"}

    assert params("memory_insert") == {"label", "new_str", "insert_line"}
    assert params("memory_replace") == {"label", "old_str", "new_str"}
    assert params("memory_rethink") == {"label", "new_memory"}
    assert params("memory") == {
        "command",
        "path",
        "file_text",
        "description",
        "old_string",
        "new_string",
        "insert_line",
        "insert_text",
        "old_path",
        "new_path",
    }
    command = TOOL_SETS["letta-v1"]["memory"].schema()["function"]["parameters"]
    assert command["properties"]["command"]["enum"] == [
        "create",
        "str_replace",
        "insert",
        "delete",
        "rename",
    ]


def test_custom_tool_cannot_take_a_set_tool_s_name():
    @tool
    def memory_rethink(label: str) -> str:
        """Mine."""
        return label

    with pytest.raises(ConfigError, match="memory_rethink"):
        agent_tools("letta-v1", {"memory_rethink": memory_rethink})


def test_memory_insert_at_a_line_at_the_start_and_at_the_end(agent):
    assert run(agent, "memory_insert", label="notes", new_str="x", insert_line=1).ok
    assert value(agent, "notes") == "a\nx\nb\nc"
    assert run(agent, "memory_insert", label="notes", new_str="first", insert_line=0).ok
    outcome = run(agent, "memory_insert", label="notes", new_str="last")
    assert outcome.ok and "notes" in outcome.content
    assert value(agent, "notes") == "first\na\nx\nb\nc\nlast"


def test_memory_insert_refuses_a_line_outside_the_block(agent):
    outcome = run(agent, "memory_insert", label="notes", new_str="x", insert_line=9)
    assert not outcome.ok and "0" in outcome.content and "3" in outcome.content
    assert value(agent, "notes") == "a\nb\nc"


def test_memory_replace_needs_one_exact_occurrence(agent):
    assert run(agent, "memory_replace", label="human", old_str="tea", new_str="coffee").ok
    assert value(agent, "human") == "Name: Alice\nLikes: coffee"
    missing = run(agent, "memory_replace", label="human", old_str="tea", new_str="x")
    assert not missing.ok and "not found" in missing.content
    run(agent, "memory_rethink", label="notes", new_memory="dog\ndog")
    twice = run(agent, "memory_replace", label="notes", old_str="dog", new_str="cat")
    assert not twice.ok and "2 times" in twice.content and "lines 1, 2" in twice.content
    assert value(agent, "notes") == "dog\ndog"


def test_memory_rethink_rewrites_a_block_or_makes_a_new_one(agent):
    assert run(agent, "memory_rethink", label="human", new_memory="Name: Alice Smith").ok
    assert value(agent, "human") == "Name: Alice Smith"
    assert run(agent, "memory_rethink", label="plans", new_memory="Trip in May").ok
    assert value(agent, "plans") == "Trip in May"


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("memory_insert", {"label": "rules", "new_str": "x"}),
        ("memory_replace", {"label": "rules", "old_str": "kind", "new_str": "rude"}),
        ("memory_rethink", {"label": "rules", "new_memory": "x"}),
        (
            "memory",
            {
                "command": "str_replace",
                "path": "/memories/rules",
                "old_string": "kind",
                "new_string": "rude",
            },
        ),
        ("memory", {"command": "insert", "path": "rules", "insert_text": "x"}),
        ("memory", {"command": "delete", "path": "/memories/rules"}),
        ("memory", {"command": "rename", "old_path": "/memories/rules", "new_path": "laws"}),
    ],
)
def test_read_only_blocks_refuse_every_letta_write(agent, name, arguments):
    outcome = run(agent, name, **arguments)
    assert not outcome.ok and "read-only" in outcome.content
    assert value(agent, "rules") == "Be kind." and "rules" in labels(agent)


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("memory_insert", {"label": "human", "new_str": "x" * 90}),
        ("memory_replace", {"label": "human", "old_str": "tea", "new_str": "x" * 90}),
        ("memory_rethink", {"label": "human", "new_memory": "x" * 101}),
        ("memory", {"command": "insert", "path": "/memories/human", "insert_text": "x" * 90}),
    ],
)
def test_over_the_limit_is_refused_and_names_memory_rethink(agent, name, arguments):
    outcome = run(agent, name, **arguments)
    assert not outcome.ok and "over its limit of 100" in outcome.content
    assert "memory_rethink" in outcome.content and "core_memory_replace" not in outcome.content
    assert value(agent, "human") == "Name: Alice\nLikes: tea"


def test_unknown_label_names_the_blocks(agent):
    outcome = run(agent, "memory_replace", label="pets", old_str="a", new_str="b")
    assert (
        not outcome.ok and "'pets'" in outcome.content and "human, rules, notes" in outcome.content
    )


def test_memory_command_create_edit_rename_delete(agent):
    created = run(
        agent,
        "memory",
        command="create",
        path="/memories/prefs",
        file_text="dark theme",
        description="What the user likes.",
    )
    assert created.ok, created.content
    assert agent.block("prefs").description == "What the user likes."
    again = run(agent, "memory", command="create", path="/memories/prefs")
    assert not again.ok and "already exists" in again.content
    assert run(
        agent,
        "memory",
        command="str_replace",
        path="/memories/prefs",
        old_string="dark",
        new_string="light",
    ).ok
    assert run(
        agent, "memory", command="insert", path="prefs", insert_line=0, insert_text="Themes:"
    ).ok
    assert value(agent, "prefs") == "Themes:\nlight theme"
    assert run(
        agent, "memory", command="rename", old_path="/memories/prefs", new_path="/memories/likes"
    ).ok
    assert run(agent, "memory", command="rename", path="likes", description="Likes.").ok
    assert agent.block("likes").description == "Likes."
    clash = run(agent, "memory", command="rename", old_path="likes", new_path="human")
    assert not clash.ok and "already exists" in clash.content
    assert run(agent, "memory", command="delete", path="/memories/likes").ok
    assert labels(agent) == ["human", "rules", "notes"]


def test_memory_command_refuses_missing_arguments_and_bad_paths(agent):
    lacking = run(agent, "memory", command="str_replace", path="human", old_string="tea")
    assert not lacking.ok and "new_string" in lacking.content
    for path in ("../human", "/memories/../human", "/etc/passwd", "/memories/%2e%2e/human"):
        outcome = run(agent, "memory", command="create", path=path, file_text="x")
        assert not outcome.ok, path
    assert labels(agent) == ["human", "rules", "notes"]


def test_a_new_block_that_would_not_fit_the_window_is_not_kept(tmp_path):
    agent = Agent.create(
        "tiny",
        "gpt-4o-mini",
        db=tmp_path / "a.db",
        settings=AgentSettings(tool_set="letta-v1", context_window=8192),
    )
    # Created where it fits (a smaller window is refused at create when the
    # tools take most of it), then its window shrinks, which nothing refuses.
    agent.state.settings.context_window = 3000
    agent.save()
    outcome = run(agent, "memory", command="create", path="big", file_text="word " * 999)
    assert not outcome.ok and "context window" in outcome.content
    assert "big" not in labels(agent)


def test_a_step_calls_a_letta_tool_through_the_fake_server(fake_llm, tmp_path):
    agent = Agent.create(
        "sam", "gpt-4o-mini", db=tmp_path / "a.db", settings=AgentSettings(tool_set="letta-v1")
    )
    insert = call(
        "memory_insert", label="human", new_str="Name: Bob", insert_line=0, request_heartbeat=True
    )
    fake_llm.enqueue(reply(tool_calls=[insert]), say("Hi Bob."))
    result = agent.step("I'm Bob")
    assert result.replies == ["Hi Bob."]
    first, second = fake_llm.chat_requests
    assert {t["function"]["name"] for t in first["tools"]} == set(TOOL_SETS["letta-v1"])
    assert second["messages"][0]["content"].count("Name: Bob") == 1
    assert agent.block("human").value.startswith("Name: Bob\n")
    assert Agent.load("sam", db=tmp_path / "a.db").state.settings.tool_set == "letta-v1"


def test_cli_create_picks_the_tool_set(tmp_path):
    db = tmp_path / "cli.db"

    def create(*args: str):
        command = ["--db", str(db), "create", *args, "--model", "gpt-4o-mini"]
        return CliRunner().invoke(cli, command, catch_exceptions=False)

    assert create("lea", "--tools", "letta-v1").exit_code == 0
    assert create("cla", "--tools", "anthropic-memory").exit_code == 0
    assert create("max").exit_code == 0
    wrong = create("bad", "--tools", "langchain")
    assert wrong.exit_code == 2 and "letta-v1" in wrong.output
    lea, classic = Agent.load("lea", db=db), Agent.load("max", db=db)
    assert lea.state.settings.tool_set == "letta-v1" and "memory_rethink" in lea.tools
    assert classic.state.settings.tool_set == "memgpt" and "core_memory_append" in classic.tools
    assert set(Agent.load("cla", db=db).tools) == set(TOOL_SETS["anthropic-memory"])


@pytest.fixture
def claude(tmp_path) -> Agent:
    blocks = [
        Block(label="human", value="Name: Alice\nLikes: tea", limit=100),
        Block(label="rules", value="Be kind.", read_only=True, description="House rules."),
    ]
    return Agent.create(
        "claude",
        "gpt-4o-mini",
        blocks=blocks,
        db=tmp_path / "claude.db",
        settings=AgentSettings(tool_set="anthropic-memory"),
    )


def memory(agent: Agent, command: str, **arguments) -> ToolOutcome:
    return run(agent, "memory", command=command, **arguments)


def test_anthropic_set_is_one_memory_tool_with_six_commands():
    assert set(TOOL_SETS["anthropic-memory"]) == COMMON | {"memory"}
    params = TOOL_SETS["anthropic-memory"]["memory"].schema()["function"]["parameters"]
    assert params["properties"]["command"]["enum"] == [
        "view",
        "create",
        "str_replace",
        "insert",
        "delete",
        "rename",
    ]
    assert {"path", "view_range", "file_text", "old_str", "new_str", "insert_line"} < set(
        params["properties"]
    )


def test_view_lists_the_directory_and_numbers_a_file_s_lines(claude):
    listing = memory(claude, "view", path="/memories")
    assert listing.ok
    assert listing.content.splitlines() == [
        "Files in /memories:",
        "/memories/human (22/100 chars)",
        "/memories/rules (8/5000 chars, read-only): House rules.",
    ]
    file = memory(claude, "view", path="/memories/human")
    assert file.content.endswith("lines 1-2:\n     1\tName: Alice\n     2\tLikes: tea")
    part = memory(claude, "view", path="/memories/human", view_range=[2, -1])
    assert part.content.endswith("lines 2-2:\n     2\tLikes: tea")
    bad = memory(claude, "view", path="/memories/human", view_range=[5, 6])
    assert not bad.ok and "1-2" in bad.content


def test_create_edit_insert_rename_delete_a_file(claude):
    assert memory(claude, "create", path="/memories/todo", file_text="buy milk").ok
    assert claude.block("todo").limit == 5000
    assert memory(claude, "str_replace", path="/memories/todo", old_str="milk", new_str="tea").ok
    assert memory(claude, "insert", path="/memories/todo", insert_line=0, insert_text="# To do").ok
    assert claude.block("todo").value == "# To do\nbuy tea"
    assert memory(claude, "create", path="/memories/todo", file_text="nothing").ok  # overwrites
    assert claude.block("todo").value == "nothing"
    assert memory(claude, "rename", old_path="/memories/todo", new_path="/memories/done").ok
    assert memory(claude, "delete", path="/memories/done").ok
    assert labels(claude) == ["human", "rules"]
    gone = memory(claude, "view", path="/memories/done")
    assert not gone.ok and "/memories/human, /memories/rules" in gone.content


@pytest.mark.parametrize(
    "arguments",
    [
        {"command": "create", "path": "/memories/rules", "file_text": "x"},
        {"command": "str_replace", "path": "/memories/rules", "old_str": "kind", "new_str": "x"},
        {"command": "insert", "path": "/memories/rules", "insert_line": 0, "insert_text": "x"},
        {"command": "delete", "path": "/memories/rules"},
        {"command": "rename", "old_path": "/memories/rules", "new_path": "/memories/laws"},
    ],
)
def test_read_only_files_refuse_every_write(claude, arguments):
    outcome = run(claude, "memory", **arguments)
    assert not outcome.ok and "read-only" in outcome.content
    assert claude.block("rules").value == "Be kind."


def test_over_the_limit_is_refused(claude):
    outcome = memory(claude, "create", path="/memories/human", file_text="x" * 101)
    assert not outcome.ok and "over its limit of 100" in outcome.content
    assert "core_memory_replace" not in outcome.content
    assert claude.block("human").value == "Name: Alice\nLikes: tea"


@pytest.mark.parametrize(
    "path",
    [
        "/memories/../etc/passwd",
        "/memories/./human",
        "/memories/a//b",
        "../memories/human",
        "/etc/passwd",
        "/memoriesX/human",
        "memories/human",
        "human",
        "/memories/%2e%2e/secret",
        "/memories/..%2fsecret",
        "/memories/%252e%252e/secret",
        "/memories/..\\secret",
        "/memories/a\x00b",
        "/memories/bad name",
    ],
)
def test_paths_that_leave_memories_or_hide_their_name_are_refused(claude, path):
    outcome = memory(claude, "create", path=path, file_text="x")
    assert not outcome.ok
    assert (
        "refused" in outcome.content or "outside" in outcome.content or "cannot" in outcome.content
    )
    assert labels(claude) == ["human", "rules"]


def test_the_directory_itself_cannot_be_written_or_deleted(claude):
    for arguments in (
        {"command": "delete", "path": "/memories"},
        {"command": "create", "path": "/memories/", "file_text": "x"},
    ):
        outcome = run(claude, "memory", **arguments)
        assert not outcome.ok and "directory" in outcome.content
    assert labels(claude) == ["human", "rules"]


def test_a_step_views_memories_through_the_fake_server(fake_llm, tmp_path):
    Agent.create(
        "claude",
        "gpt-4o-mini",
        db=tmp_path / "a.db",
        settings=AgentSettings(tool_set="anthropic-memory"),
    )
    agent = Agent.load("claude", db=tmp_path / "a.db")
    view = call("memory", command="view", path="/memories", request_heartbeat=True)
    fake_llm.enqueue(reply(tool_calls=[view]), say("I remember."))
    assert agent.step("What do you remember?").replies == ["I remember."]
    first, second = fake_llm.chat_requests
    assert [t["function"]["name"] for t in first["tools"]].count("memory") == 1
    assert "core_memory_append" not in {t["function"]["name"] for t in first["tools"]}
    result = [m for m in second["messages"] if m["role"] == "tool"][-1]["content"]
    assert result.startswith("Files in /memories:\n/memories/persona (")


@pytest.mark.parametrize("name", ["system", "memory_pressure"])
def test_prompts_name_the_memory_tools_of_the_agent_s_set(name):
    classic = memory_prompt(name, "memgpt")
    assert classic == load_prompt(name) and "core_memory_append" in classic
    for tool_set, needed in (("letta-v1", "memory_rethink"), ("anthropic-memory", "/memories")):
        text = memory_prompt(name, tool_set)
        assert "core_memory_" not in text and needed in text


def test_a_new_agent_s_system_prompt_matches_its_tool_set(agent, claude):
    assert "memory_insert" in agent.state.system and "core_memory_" not in agent.state.system
    assert "/memories/human" in claude.state.system and "core_memory_" not in claude.state.system


HOSTILE_BASES = {
    ("letta-v1", "memory_insert"): {"label": "human", "new_str": "x", "insert_line": 0},
    ("letta-v1", "memory_replace"): {"label": "human", "old_str": "tea", "new_str": "coffee"},
    ("letta-v1", "memory_rethink"): {"label": "notes", "new_memory": "x"},
    ("letta-v1", "memory"): {
        "command": "insert",
        "path": "/memories/human",
        "insert_line": 0,
        "insert_text": "x",
    },
    ("anthropic-memory", "memory"): {
        "command": "view",
        "path": "/memories/human",
        "view_range": [1, 2],
    },
}


@pytest.mark.parametrize(("tool_set", "name"), list(HOSTILE_BASES))
def test_hostile_arguments_get_a_readable_refusal_never_a_tool_failure(tmp_path, tool_set, name):
    """Whatever the model sends, the tool answers or refuses in words: no
    exception of the tool's own ("NAME failed: ...") reaches the model."""
    blocks = [Block(label="human", value="Likes tea"), Block(label="notes", value="n")]
    agent = Agent.create(
        "fuzz",
        "gpt-4o-mini",
        blocks=blocks,
        db=tmp_path / "f.db",
        settings=AgentSettings(tool_set=tool_set),
    )
    context = ToolContext(deps=agent.runner, step_id="step-fuzz")
    base = HOSTILE_BASES[(tool_set, name)]
    for seed in range(2):
        for arguments in hostile_arguments(base, random.Random(f"{seed}:{name}")):
            outcome = agent.tools[name].run(context, arguments, 2000)
            assert f"{name} failed:" not in outcome.content, (arguments[:200], outcome.content)


def test_create_refuses_a_custom_tool_named_like_its_set_s_before_storing(tmp_path):
    @tool
    def memory(query: str) -> str:
        """Mine."""
        return query

    db = tmp_path / "clash.db"
    with pytest.raises(ConfigError, match="'memory'"):
        Agent.create(
            "clash",
            "gpt-4o-mini",
            db=db,
            tools=[memory],
            settings=AgentSettings(tool_set="anthropic-memory"),
        )
    assert "memory" in Agent.create("clash", "gpt-4o-mini", db=db, tools=[memory]).tools


def test_the_tool_set_travels_in_an_exported_agent_file(tmp_path):
    Agent.create(
        "lea",
        "gpt-4o-mini",
        db=tmp_path / "one.db",
        settings=AgentSettings(tool_set="letta-v1"),
    )
    path = tmp_path / "lea.json"
    with Store(tmp_path / "one.db") as one:
        write_agent_file(one, "lea", path)
    assert json.loads(path.read_text())["settings"]["tool_set"] == "letta-v1"
    with Store(tmp_path / "two.db") as two:
        import_agent(two, path)
    copy = Agent.load("lea", db=tmp_path / "two.db")
    assert copy.state.settings.tool_set == "letta-v1" and "memory_rethink" in copy.tools


def test_a_shared_block_is_not_renamed_and_deleting_it_only_detaches_it(claude):
    bob = Agent.create("bob", "gpt-4o-mini", store=claude.store)
    team = Block(label="team", value="Standup at 9.")
    claude.attach_block(team)
    bob.attach_block(claude.block("team"))
    renamed = memory(claude, "rename", old_path="/memories/team", new_path="/memories/crew")
    assert not renamed.ok and "shared with bob" in renamed.content
    assert memory(claude, "delete", path="/memories/team").ok
    assert "team" not in labels(claude)
    assert bob.block("team").value == "Standup at 9."


def test_files_with_dots_and_folders_are_blocks_with_path_labels(claude):
    assert memory(claude, "create", path="/memories/notes.md", file_text="Buy tea.").ok
    assert memory(claude, "create", path="/memories/projects/plan.md", file_text="Step 1.").ok
    assert value(claude, "notes.md") == "Buy tea."
    assert value(claude, "projects/plan.md") == "Step 1."
    folder = memory(claude, "view", path="/memories/projects")
    assert folder.ok and "/memories/projects/plan.md" in folder.content
    assert "notes.md" not in folder.content
    assert not memory(claude, "create", path="/memories/../notes.md", file_text="x").ok
