"""The working window: agents on large models work in a smaller window by
default, so long conversations do not send the model's whole window every turn."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from memgpt_lite import Agent, AgentSettings, Block
from memgpt_lite.cli.main import cli
from memgpt_lite.errors import ContextBudgetError
from memgpt_lite.memory.recall.window import DEFAULT_WORKING_WINDOW, budget_for
from memgpt_lite.storage.sqlite.store import Store
from memgpt_lite.testing import FakeOpenAIServer, reply, say


def agent_on(db: Path, model: str = "gpt-4o-mini", **settings: int | None) -> Agent:
    return Agent.create("sam", model, db=db, settings=AgentSettings(**settings))


def run(db: Path, *args: str):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


@pytest.mark.parametrize(
    ("model", "settings", "window", "model_window"),
    [
        ("gpt-4o-mini", {}, DEFAULT_WORKING_WINDOW, 128_000),
        ("gpt-4.1", {}, DEFAULT_WORKING_WINDOW, 1_047_576),
        ("gpt-4o-mini", {"working_window": 0}, 128_000, 128_000),
        ("gpt-4o-mini", {"working_window": 200_000}, 128_000, 128_000),
        ("gpt-4o-mini", {"working_window": 16_000}, 16_000, 128_000),
        ("llama3.2", {}, 8_192, 8_192),  # smaller than the working window: its own
        ("llama3.2", {"context_window": 65_536, "working_window": 20_000}, 20_000, 65_536),
    ],
)
def test_the_working_window_is_the_window_when_the_model_s_is_larger(
    tmp_path, model, settings, window, model_window
):
    budget = budget_for(agent_on(tmp_path / "a.db", model, **settings).runner)
    assert (budget.window, budget.model_window) == (window, model_window)
    assert budget.compact_at <= window


def test_requests_stay_within_the_working_window(fake_llm: FakeOpenAIServer, tmp_path):
    # The endpoint refuses anything over 3,000 tokens; the agent believes its
    # model has 128k, so only the working window keeps it under.
    fake_llm.context_window = 3_000

    def respond(body: dict):
        if "tools" not in body:  # the summarizer
            return reply("They talked about many things.")
        return say("Noted.")

    fake_llm.responder = respond
    agent = agent_on(tmp_path / "a.db", working_window=3_000)
    budget = budget_for(agent.runner)
    compactions = 0
    for turn in range(25):
        result = agent.step(f"Turn {turn}: " + "tell me more about the garden " * 20)
        compactions += result.compactions
        assert result.prompt_tokens_estimate <= budget.compact_at
    assert compactions > 0
    assert fake_llm.rejections == []
    assert budget_for(agent.runner).model_window == 128_000


def test_create_takes_a_working_window_and_show_names_it(tmp_path):
    db = tmp_path / "a.db"
    assert run(db, "create", "sam", "-m", "gpt-4o-mini", "--working-window", "16000").exit_code == 0
    assert run(db, "create", "whole", "-m", "gpt-4o-mini", "--working-window", "0").exit_code == 0
    assert run(db, "create", "plain", "-m", "gpt-4o-mini").exit_code == 0
    with Store(db) as store:
        assert store.get_agent("sam").settings.working_window == 16_000
        assert store.get_agent("whole").settings.working_window == 0
        assert store.get_agent("plain").settings.working_window is None
    assert (
        "context window: 16,000 tokens (working window; the model has 128,000 "
        "(from the model's name))" in run(db, "show", "sam").stdout
    )
    assert "context window: 32,000 tokens (working window" in run(db, "show", "plain").stdout
    assert "context window: 128,000 tokens (from" in run(db, "show", "whole").stdout


def test_a_negative_working_window_is_refused_storing_nothing(tmp_path):
    db = tmp_path / "a.db"
    result = run(db, "create", "sam", "-m", "gpt-4o-mini", "--working-window", "-5")
    assert result.exit_code == 2
    assert "Error: Invalid value for '--working-window': -5 is not in the range x>=0" in (
        result.output
    )
    assert "Traceback" not in result.output
    assert "No agents yet" in run(db, "agents").stdout


def test_agents_from_before_keep_the_model_s_whole_window(tmp_path):
    """The migration gives existing agents `working_window: 0`, so one whose
    core memory was sized for the model's window goes on working."""
    db = tmp_path / "old.db"
    big = Block(label="notes", value="word " * 7_000, limit=40_000)  # ~7k tokens
    Agent.create("old", "gpt-4o-mini", db=db, blocks=[big]).store.close()
    conn = sqlite3.connect(db)
    with conn:  # as the version before working windows wrote it
        conn.execute("DROP TABLE token_usage")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm010_token_usage'")
        [settings] = conn.execute("SELECT settings FROM agents").fetchone()
        values = json.loads(settings)
        del values["working_window"]
        conn.execute("UPDATE agents SET settings = ?", [json.dumps(values)])
    conn.close()
    agent = Agent.load("old", db=db)
    assert agent.state.settings.working_window == 0
    assert budget_for(agent.runner).window == 128_000
    agent.context_overview()  # its core memory fits


def test_a_core_memory_too_big_for_the_working_window_names_the_setting(
    fake_llm: FakeOpenAIServer, tmp_path
):
    big = Block(label="notes", value="word " * 30_000, limit=200_000)
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db", blocks=[big])
    # Created with a working window that fits (agent/sizing.py), then given
    # the default one, which nothing refuses in Python.
    agent.state.settings.working_window = 32_000
    agent.save()
    with pytest.raises(ContextBudgetError, match="AgentSettings.working_window; 0 for all of it"):
        agent.step("hi")
    assert fake_llm.requests == []
    agent.state = agent.store.get_agent("sam")
    agent.state.settings.working_window = 0
    agent.save()
    fake_llm.enqueue(say("Hello."))
    assert agent.step("hi").replies == ["Hello."]
