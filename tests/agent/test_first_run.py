"""What a new user meets first: the documented commands as written, creating an
agent again from Python, the default persona, and the errors bad input gives."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from support.docs_text import section, section_commands

from memgpt_lite import Agent, Block, default_blocks
from memgpt_lite.cli.main import cli
from memgpt_lite.errors import AlreadyExistsError, ConfigError
from memgpt_lite.models import AgentSettings, AgentState, AgentStats
from memgpt_lite.settings.resolve import default_db_path
from memgpt_lite.storage.sqlite.store import Store
from memgpt_lite.testing import FakeOpenAIServer, say


def run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def _agents() -> list[tuple[AgentState, AgentStats]]:
    with Store(default_db_path()) as store:
        return store.list_agents()


# docs "Managing agents" (cli/agents.md)


def test_managing_agents_commands_run_as_written(
    fake_llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, text in [("sam.md", "I am Sam."), ("notes.md", "Due: May"), ("me.md", "Alice")]:
        (tmp_path / name).write_text(text + "\n")
    monkeypatch.setenv("VISUAL", "true")  # an editor that leaves the text as it is
    fake_llm.responder = lambda body: say("Noted.")
    create, *rest = section_commands("cli/agents.md", "Managing agents")
    assert create[0] == "create"
    created = run(*create)
    assert created.exit_code == 0, created.output
    # `retry` and `pop` act on a conversation: have two exchanges first.
    for text in ("Hi, I'm Alice", "I keep bees"):
        assert run("send", "sam", text).exit_code == 0
    for command in rest:
        result = run(*command, input="y\n")
        assert result.exit_code == 0, f"memgpt-lite {shlex.join(command)}: {result.output}"


# pydantic's "Value error, " never reaches a user


@pytest.mark.parametrize(
    "args",
    [
        ["create", "two words", "--model", "m"],
        ["create", "sam", "--model", "m", "--block", "bad label=x"],
        ["rename", "sam", "a/b"],
    ],
)
def test_validation_messages_lose_pydantics_prefix(args: list[str]) -> None:
    assert run("create", "sam", "--model", "m").exit_code == 0
    result = run(*args)
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and result.output.startswith("Error: ")
    assert "letters, digits" in result.output and "Value error" not in result.output
    assert [row[0].name for row in _agents()] == ["sam"]  # nothing stored, nothing lost


def test_validation_messages_from_python_lose_pydantics_prefix() -> None:
    with pytest.raises(ConfigError) as raised:
        Agent.create("two words", "m")
    assert str(raised.value).startswith("cannot create agent 'two words': an agent name is")


# The default persona


def _persona_of(name: str) -> str:
    with Store(default_db_path()) as store:
        blocks = store.get_blocks(store.get_agent(name).id)
    return next(b.value for b in blocks if b.label == "persona")


def test_default_persona_uses_the_agents_own_name() -> None:
    assert run("create", "ada", "--model", "m").exit_code == 0
    Agent.create("bob", "m")
    assert _persona_of("ada").startswith("My name is ada.")
    assert _persona_of("bob").startswith("My name is bob.")
    assert "Sam" not in _persona_of("ada") + _persona_of("bob")


def test_default_blocks_without_a_name_leave_the_name_out() -> None:
    persona = default_blocks()[0].value
    assert persona.startswith("I am a friendly") and "{name}" not in persona


# --embedder is checked at create


@pytest.mark.parametrize("spec", ["bogus", "endpoint:", "local:other-model"])
def test_create_refuses_an_unknown_embedder_storing_nothing(spec: str) -> None:
    result = run("create", "sam", "--model", "m", "--embedder", spec)
    assert result.exit_code == 1
    assert result.output == (
        f"Error: unknown embedder {spec!r} (from --embedder): use 'local' (offline) or "
        "'endpoint:MODEL', e.g. 'endpoint:text-embedding-3-small' or "
        "'endpoint:nomic-embed-text'\n"
    )
    assert _agents() == []


def test_create_names_where_an_unknown_embedder_came_from(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMGPT_LITE_EMBEDDER", "bogus")
    result = run("create", "sam", "--model", "m")
    assert result.exit_code == 1
    assert "unknown embedder 'bogus' (from $MEMGPT_LITE_EMBEDDER)" in result.output
    assert _agents() == []


def test_agent_create_refuses_an_unknown_embedder_storing_nothing() -> None:
    with pytest.raises(ConfigError, match=r"^unknown embedder 'bogus': use 'local'"):
        Agent.create("sam", "m", embedder="bogus")
    assert _agents() == []
    assert Agent.create("sam", "m", embedder="endpoint:nomic-embed-text").state.settings.embedder


# Agent.create(..., exist_ok=True): get or create


def _blocks() -> list[Block]:
    return [Block(label="persona", value="I am Sam."), Block(label="human", value="")]


def test_create_with_exist_ok_opens_the_stored_agent_unchanged() -> None:
    first = Agent.create("sam", "gpt-4o-mini", blocks=_blocks(), exist_ok=True)
    first.set_block("human", "Name: Alice")  # what the agent learned since
    again = Agent.create("sam", "gpt-4o-mini", blocks=_blocks(), exist_ok=True)
    assert again.state.id == first.state.id
    assert again.block("human").value == "Name: Alice"  # the given text only starts a new agent
    assert [state.name for state, _ in _agents()] == ["sam"]
    with pytest.raises(AlreadyExistsError):
        Agent.create("sam", "gpt-4o-mini", blocks=_blocks())  # without exist_ok, as before


@pytest.mark.parametrize(
    ("changed", "message"),
    [
        ({"model": "llama3.2"}, "with model 'gpt-4o-mini', not 'llama3.2'"),
        ({"system": "Be terse."}, "with another system prompt"),
        ({"base_url": "http://127.0.0.1:1/v1"}, "with base_url None, not 'http://127.0.0.1:1/v1'"),
        ({"llm_options": {"temperature": 0.5}}, "with temperature None, not 0.5"),
        ({"settings": AgentSettings(context_window=4096)}, "with context_window None, not 4096"),
        ({"embedder": "local"}, "with embedder None, not 'local'"),
        (
            {"blocks": [*_blocks(), Block(label="project", value="")]},
            "without block 'project'",
        ),
    ],
)
def test_create_with_exist_ok_refuses_arguments_the_stored_agent_differs_from(
    changed: dict[str, Any], message: str
) -> None:
    Agent.create("sam", "gpt-4o-mini", blocks=_blocks())
    wanted: dict[str, Any] = {"model": "gpt-4o-mini", "blocks": _blocks(), **changed}
    with pytest.raises(ConfigError) as raised:
        Agent.create("sam", exist_ok=True, **wanted)
    text = str(raised.value)
    assert text.startswith(f"agent 'sam' already exists {message}; nothing was changed")
    assert "\n" not in text
    stored = Agent.load("sam")
    assert stored.state.llm.model == "gpt-4o-mini" and stored.state.settings == AgentSettings()
    assert [b.label for b in stored.blocks] == ["persona", "human"]


# Where the agents are stored: --db and $MEMGPT_LITE_DB


def test_database_choice_is_documented_and_works_as_documented(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configuration = section("getting-started/configuration.md", "Configuration")
    assert "`MEMGPT_LITE_DB`" in configuration and "`--db FILE`" in configuration
    from_env, from_flag = tmp_path / "env.db", tmp_path / "flag.db"
    monkeypatch.setenv("MEMGPT_LITE_DB", str(from_env))
    assert run("create", "ada", "--model", "m").exit_code == 0
    assert run("--db", str(from_flag), "create", "bob", "--model", "m").exit_code == 0
    with Store(from_env) as store:
        assert [state.name for state, _ in store.list_agents()] == ["ada"]
    with Store(from_flag) as store:
        assert [state.name for state, _ in store.list_agents()] == ["bob"]
    assert not default_db_path().exists()
