"""Where the request timeout comes from: the argument or flag, then the agent's
own, then $MEMGPT_LITE_TIMEOUT, then config.toml, then the default; bad values
are one line naming their source; old agents lose the old default."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from memgpt_lite import Agent, ConfigError, LLMError
from memgpt_lite.cli.main import cli
from memgpt_lite.models import LLMConfig
from memgpt_lite.settings.resolve import config_path, resolve_timeout
from memgpt_lite.storage.sqlite.store import Store
from memgpt_lite.testing import FakeOpenAIServer, hang, say


def write_config(text: str) -> None:
    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text(text, encoding="utf-8")


def run(*args: str, db, input: str | None = None):  # noqa: A002
    return CliRunner().invoke(cli, ["--db", str(db), *args], input=input, catch_exceptions=False)


def limit_in_force(agent: Agent, server: FakeOpenAIServer) -> str:
    """The limit the agent's next request runs under, read from the error a
    hang ends with (the request really waits that long)."""
    server.enqueue(hang())
    with pytest.raises(LLMError) as caught:
        agent.step("hi")
    message = str(caught.value)
    return message.split(" did not answer within ")[1].split(" s ")[0]


@pytest.mark.alone  # Its last step must be answered within a 0.15 s limit.
def test_argument_then_agent_then_env_then_file_then_default(fake_llm, tmp_path, monkeypatch):
    db = tmp_path / "a.db"
    Agent.create("plain", "gpt-4o-mini", db=db, llm_options={"max_retries": 0})
    assert resolve_timeout(LLMConfig(model="m")) == 300.0  # the default
    write_config("timeout = 0.25\n")
    assert limit_in_force(Agent.load("plain", db=db), fake_llm) == "0.25"
    monkeypatch.setenv("MEMGPT_LITE_TIMEOUT", "0.2")
    assert limit_in_force(Agent.load("plain", db=db), fake_llm) == "0.2"
    own = {"max_retries": 0, "timeout_seconds": 0.15}
    Agent.create("own", "gpt-4o-mini", db=db, llm_options=own, timeout=0.1)
    assert limit_in_force(Agent.load("own", db=db), fake_llm) == "0.15"
    assert limit_in_force(Agent.load("own", db=db, timeout=0.1), fake_llm) == "0.1"
    # The argument is not stored.
    assert Agent.load("own", db=db).state.llm.timeout_seconds == 0.15
    assert Agent.load("plain", db=db).state.llm.timeout_seconds is None
    fake_llm.enqueue(say("fine"))
    assert Agent.load("own", db=db).step("hi").replies == ["fine"]
    assert fake_llm.rejections == []


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "soon", True])
def test_bad_timeout_argument_is_refused_before_anything_is_stored(tmp_path, bad):
    with pytest.raises(ConfigError, match=r"^timeout must be a positive number of seconds, got "):
        Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db", timeout=bad)
    assert Store(tmp_path / "a.db").list_agents() == []
    Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db")
    with pytest.raises(ConfigError, match=r"^timeout must be a positive number of seconds"):
        Agent.load("sam", db=tmp_path / "a.db", timeout=bad)


def test_bad_env_value_fails_the_step_before_anything_is_stored(fake_llm, tmp_path, monkeypatch):
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db")
    monkeypatch.setenv("MEMGPT_LITE_TIMEOUT", "five")
    with pytest.raises(ConfigError, match=r"^\$MEMGPT_LITE_TIMEOUT must be a positive number"):
        agent.step("hi")
    assert agent.context_messages() == [] and fake_llm.requests == []


def test_send_timeout_flag(fake_llm, tmp_path):
    db = tmp_path / "a.db"
    Agent.create("sam", "gpt-4o-mini", db=db, llm_options={"max_retries": 0})
    fake_llm.enqueue(hang())
    result = run("send", "sam", "hi", "--timeout", "0.2", db=db)
    assert result.exit_code == 4  # ExitStatus.ENDPOINT_FAILED
    assert result.stderr == (
        f"Error: the model endpoint {fake_llm.base_url} did not answer within 0.2 s (1 attempt); "
        "a slow model may need a longer limit (--timeout, timeout=, or timeout in config.toml)"
        ' — your message "hi" was not answered: memgpt-lite retry sam sends it again, '
        "memgpt-lite pop sam drops it.\n"
    )
    fake_llm.enqueue(say("on time"))
    assert run("send", "sam", "again", "--timeout", "5", db=db).stdout == "on time\n"
    assert fake_llm.rejections == []
    refused = run("send", "sam", "hi", "--timeout", "0", db=db)
    assert refused.exit_code == 2
    assert "Invalid value for '--timeout': 0 is not a positive number of seconds" in refused.stderr


def test_chat_timeout_flag(fake_llm, tmp_path):
    db = tmp_path / "a.db"
    Agent.create("sam", "gpt-4o-mini", db=db, llm_options={"max_retries": 0})
    fake_llm.enqueue(hang(), say("on time"))
    result = run("chat", "sam", "--timeout", "0.2", db=db, input="hi\nagain\n")
    assert result.exit_code == 0, result.output
    assert "did not answer within 0.2 s (1 attempt)" in result.stdout
    assert "on time" in result.stdout
    assert fake_llm.rejections == []


def test_migration_unsets_only_the_old_default(tmp_path):
    db = tmp_path / "a.db"
    for name, seconds in (("old", 120.0), ("chosen", 60.0)):
        Agent.create(name, "gpt-4o-mini", db=db, llm_options={"timeout_seconds": seconds})
    store = Store(db)
    # As the database was before m007: the old default stored in every agent.
    store.db.execute("DELETE FROM _sqlite_migrations WHERE name = 'm007_timeout_default'")
    store.db.conn.commit()
    store.close()
    reopened = Store(db)
    timeouts = {s.name: s.llm.timeout_seconds for s, _ in reopened.list_agents()}
    assert timeouts == {"old": None, "chosen": 60.0}
    stored = reopened.db.execute("SELECT llm FROM agents WHERE name = 'old'").fetchone()[0]
    assert json.loads(stored)["timeout_seconds"] is None
