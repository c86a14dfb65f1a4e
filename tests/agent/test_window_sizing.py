"""A working window that fits the agent: `create` and `import` give an agent
whose core memory and tools would fill the default working window one of
twice their size, within its model's window; an agent that could not take a
step is refused with one line and not stored; `memgpt-lite window` and the
server's agent update change the window under the same rule."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from support.serving import new_key

from memgpt_lite import Agent, AgentSettings, Block, ConfigError
from memgpt_lite.agent.sizing import fits_as_is, measure
from memgpt_lite.agentfile.native import import_agent, write_agent_file
from memgpt_lite.cli.main import cli
from memgpt_lite.memory.recall.window import DEFAULT_WORKING_WINDOW, budget_for
from memgpt_lite.server.app import create_app
from memgpt_lite.storage.sqlite.store import Store
from memgpt_lite.testing import FakeOpenAIServer, say

# About 31,000 tokens of core memory, as the Letta agent of issue 29 had.
BIG = [Block(label=f"notes{i}", value="word " * 1_000, limit=10_000) for i in range(31)]


def run(db: Path, *args: str):
    return CliRunner().invoke(cli, ["--db", str(db), *args])


def names(db: Path) -> list[str]:
    with Store(db) as store:
        return [state.name for state, _ in store.list_agents()]


def test_a_big_core_memory_gets_a_window_twice_its_fixed_part(fake_llm: FakeOpenAIServer, tmp_path):
    agent = Agent.create(
        "big",
        "gpt-4o-mini",
        db=tmp_path / "a.db",
        blocks=BIG,
        settings=AgentSettings(context_window=190_000),
    )
    fit = measure(agent.runner)
    assert fit.fixed_tokens > DEFAULT_WORKING_WINDOW
    assert fit.budget.window >= 2 * fit.fixed_tokens
    assert (
        fit.budget.window == Agent.load("big", db=tmp_path / "a.db").state.settings.working_window
    )
    fake_llm.enqueue(say("Hello."))
    assert agent.step("hi").replies == ["Hello."]


def test_a_small_agent_keeps_the_default_window(tmp_path):
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db")
    assert agent.state.settings.working_window is None
    assert budget_for(agent.runner).window == DEFAULT_WORKING_WINDOW


def test_only_an_agent_that_surely_fits_skips_the_exact_count(tmp_path):
    # A new agent is first sized with an upper bound of its tokens; the bound
    # must settle the small agent and never the one that needs a bigger window.
    small = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db")
    assert fits_as_is(small.runner)
    fit = measure(small.runner)
    assert fit.can_step and fit.budget.window >= fit.wanted
    settings = AgentSettings(context_window=190_000)
    big = Agent.create("big", "gpt-4o-mini", db=tmp_path / "a.db", blocks=BIG, settings=settings)
    assert not fits_as_is(big.runner)  # the bound says nothing: it was measured (above)


def test_a_model_window_too_small_is_refused_and_nothing_stored(tmp_path):
    db = tmp_path / "a.db"
    with pytest.raises(ConfigError) as caught:
        Agent.create(
            "big", "gpt-4o-mini", db=db, blocks=BIG, settings=AgentSettings(context_window=30_000)
        )
    message = str(caught.value)
    assert "\n" not in message
    assert "cannot work in its model's 30,000-token window" in message
    assert "nothing was stored" in message and "--context-window" in message
    assert names(db) == []


def test_a_working_window_given_too_small_is_refused_naming_the_fix(tmp_path):
    db = tmp_path / "a.db"
    settings = AgentSettings(working_window=20_000)
    with pytest.raises(ConfigError, match="working window of 67,000 tokens or more"):
        Agent.create("big", "gpt-4o-mini", db=db, blocks=BIG, settings=settings)
    assert names(db) == []


def test_cli_create_refuses_in_one_line(tmp_path):
    db = tmp_path / "a.db"
    persona = tmp_path / "persona.md"
    persona.write_text("a " * 2400)  # within its 5,000 characters
    result = run(
        db,
        "create",
        "sam",
        "-m",
        "llama3.2",
        "--context-window",
        "2500",
        "--persona",
        f"@{persona}",
    )
    assert result.exit_code == 1
    [line] = result.output.strip().splitlines()
    assert line.startswith("Error: agent 'sam' cannot work in its model's 2,500-token window")
    assert "Traceback" not in result.output
    assert names(db) == []


def exported_big(tmp_path: Path, **settings) -> Path:
    """A file of an agent with a big core memory, its settings changed."""
    db, path = tmp_path / "from.db", tmp_path / "big.json"
    agent = Agent.create("big", "gpt-4o-mini", db=db, blocks=BIG)
    write_agent_file(agent.store, "big", path)
    data = json.loads(path.read_text())
    data["settings"].update(settings)
    path.write_text(json.dumps(data))
    return path


def test_an_import_gets_a_window_that_fits_and_says_so(tmp_path):
    path = exported_big(tmp_path, working_window=None)
    report = import_agent(Store(tmp_path / "to.db"), path)
    [note] = [n for n in report.notes if n.startswith("working window")]
    assert note.startswith("working window set to 67,000 tokens (of its model's 128,000)")
    agent = Agent.load("big", db=tmp_path / "to.db")
    assert measure(agent.runner).budget.window == 67_000


def test_an_import_too_big_for_its_model_is_refused_and_nothing_stored(tmp_path):
    path = exported_big(tmp_path, working_window=None, context_window=16_000)
    db = tmp_path / "to.db"
    result = run(db, "import", str(path))
    assert result.exit_code == 1
    assert "cannot work in its model's 16,000-token window" in result.output
    assert "Traceback" not in result.output
    assert names(db) == []


def test_the_window_command_shows_sets_and_refuses(tmp_path):
    db = tmp_path / "a.db"
    assert run(db, "create", "sam", "-m", "gpt-4o-mini").exit_code == 0
    shown = run(db, "window", "sam")
    assert shown.exit_code == 0
    assert "Agent 'sam' works in 32,000 tokens (of its model's 128,000)" in shown.output
    assert run(db, "window", "sam", "64,000").exit_code == 0
    assert Agent.load("sam", db=db).state.settings.working_window == 64_000
    assert run(db, "window", "sam", "0").exit_code == 0
    assert "its model's whole window" in run(db, "window", "sam").output
    refused = run(db, "window", "sam", "1000")
    assert refused.exit_code == 1 and "cannot work in a 1,000-token window" in refused.output
    named = re.search(r"memgpt-lite window sam (\d+)", refused.output)
    assert named is not None and int(named[1]) > 1000
    assert Agent.load("sam", db=db).state.settings.working_window == 0
    assert run(db, "window", "sam", named[1]).exit_code == 0  # the fix it names works
    assert run(db, "window", "sam", "auto").exit_code == 0
    assert Agent.load("sam", db=db).state.settings.working_window is None
    bad = run(db, "window", "sam", "lots")
    assert bad.exit_code == 2 and "TOKENS must be a number" in bad.output


def test_the_server_refuses_a_window_the_agent_cannot_step_in(tmp_path):
    db = str(tmp_path / "server.db")
    key = new_key(db, "alice")
    with TestClient(create_app(db), headers={"Authorization": f"Bearer {key}"}) as client:
        created = client.post("/api/agents", json={"name": "sam", "model": "gpt-4o-mini"})
        assert created.status_code == 201
        refused = client.patch("/api/agents/sam", json={"settings": {"working_window": 1000}})
        assert refused.status_code == 422
        assert "cannot work in a 1,000-token window" in refused.json()["detail"]
        assert client.get("/api/agents/sam").json()["settings"]["working_window"] is None
        ok = client.patch("/api/agents/sam", json={"settings": {"working_window": 16_000}})
        assert ok.status_code == 200 and ok.json()["settings"]["working_window"] == 16_000
