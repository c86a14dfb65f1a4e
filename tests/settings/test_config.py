"""config.toml and the precedence of settings: flag, then environment, then the
file, then the default; a bad file is a clear error naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from memgpt_lite import Agent, ConfigError
from memgpt_lite.cli.main import cli
from memgpt_lite.settings.resolve import (
    config_path,
    default_db_path,
    effective_config,
    load_file_config,
)
from memgpt_lite.storage.sqlite.store import Store
from memgpt_lite.testing import say

UNREACHABLE = "http://127.0.0.1:9/v1"


def run(*args: str, db: Path | None = None):
    prefix = ["--db", str(db)] if db else []
    return CliRunner().invoke(cli, [*prefix, *args], catch_exceptions=False)


def write_config(text: str) -> Path:
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_missing_file_means_defaults():
    assert not config_path().exists()
    config = effective_config()
    assert {k: (v.value, v.source) for k, v in config.settings().items()} == {
        "model": (None, "default"),
        "base_url": ("http://127.0.0.1:9/v1", "$OPENAI_BASE_URL"),  # set by conftest
        "embedder": (None, "default"),
        "context_window": (None, "default"),
        "timeout": (300.0, "default"),
        "db": (str(default_db_path()), "default"),
    }


def test_file_values_are_read():
    write_config(
        'model = "llama3.2"\nbase_url = "http://localhost:11434/v1"\n'
        'embedder = "local"\ncontext_window = 8192\n'
    )
    loaded = load_file_config()
    assert (loaded.model, loaded.base_url, loaded.embedder, loaded.context_window) == (
        "llama3.2",
        "http://localhost:11434/v1",
        "local",
        8192,
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('model = "gpt-4o', "is not valid TOML"),
        ('modle = "gpt-4o"\n', "unknown key 'modle' (the keys are: model, base_url"),
        ('api_key = "sk-123"\n', "unknown key 'api_key'"),
        ('context_window = "8192"\n', "context_window: Input should be a valid integer"),
        ("context_window = 0\n", "context_window: Input should be greater than 0"),
        ("model = 4\n", "model: Input should be a valid string"),
        ('model = ""\n', "model: String should have at least 1 character"),
        ("[model]\nname = 'x'\n", "model: Input should be a valid string"),
    ],
)
def test_bad_file_is_a_clear_error_naming_it(text, problem):
    path = write_config(text)
    with pytest.raises(ConfigError) as caught:
        load_file_config()
    message = str(caught.value)
    assert message.startswith(str(path)) and problem in message
    assert "\n" not in message.strip()


def test_file_that_is_not_utf8_or_not_a_file():
    path = config_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b'model = "caf\xe9"\n')
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        load_file_config()
    path.unlink()
    path.mkdir()
    with pytest.raises(ConfigError, match=f"cannot read {path}"):
        load_file_config()


def test_precedence_flag_then_env_then_file(monkeypatch):
    path = write_config('model = "from-file"\nembedder = "local"\ncontext_window = 1000\n')
    monkeypatch.delenv("OPENAI_BASE_URL")
    config = effective_config()
    assert (config.model.value, config.model.source) == ("from-file", str(path))
    assert (config.context_window.value, config.context_window.source) == (1000, str(path))
    assert (config.base_url.value, config.base_url.source) == (None, "default")

    monkeypatch.setenv("MEMGPT_LITE_MODEL", "from-env")
    monkeypatch.setenv("MEMGPT_LITE_CONTEXT_WINDOW", "2000")
    monkeypatch.setenv("MEMGPT_LITE_EMBEDDER", "endpoint:nomic-embed-text")
    config = effective_config()
    assert (config.model.value, config.model.source) == ("from-env", "$MEMGPT_LITE_MODEL")
    assert config.context_window.value == 2000
    assert config.embedder.value == "endpoint:nomic-embed-text"

    config = effective_config({"model": "from-flag", "context_window": 3000, "embedder": None})
    assert (config.model.value, config.model.source) == ("from-flag", "--model")
    assert (config.context_window.value, config.context_window.source) == (
        3000,
        "--context-window",
    )
    assert config.embedder.source == "$MEMGPT_LITE_EMBEDDER"  # no flag given


@pytest.mark.parametrize("raw", ["lots", "-5", "0", "8k"])
def test_bad_context_window_variable(monkeypatch, raw):
    monkeypatch.setenv("MEMGPT_LITE_CONTEXT_WINDOW", raw)
    with pytest.raises(ConfigError, match="MEMGPT_LITE_CONTEXT_WINDOW must be a positive whole"):
        effective_config()
    # A flag wins, so the variable is not even read.
    assert effective_config({"context_window": 4096}).context_window.value == 4096


def test_config_command_shows_values_and_sources(monkeypatch):
    path = write_config('model = "llama3.2"\ncontext_window = 8192\n')
    monkeypatch.setenv("MEMGPT_LITE_EMBEDDER", "local")
    result = run("config", "--context-window", "4096")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        f"model\tllama3.2\t{path}",
        f"base_url\t{UNREACHABLE}\t$OPENAI_BASE_URL",
        "embedder\tlocal\t$MEMGPT_LITE_EMBEDDER",
        "context_window\t4096\t--context-window",
        "timeout\t300.0\tdefault",
        f"db\t{default_db_path()}\tdefault",
    ]
    assert f"Config file: {path}" in result.stderr


def test_config_command_with_a_bad_file_is_one_line():
    path = write_config("context_window = 'big'\n")
    result = run("config")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {path}: context_window: ")
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_create_takes_its_defaults_from_the_file_then_env_then_flags(tmp_path, monkeypatch):
    db = tmp_path / "a.db"
    path = write_config('model = "file-model"\ncontext_window = 16000\nembedder = "local"\n')
    result = run("create", "a", db=db)
    assert result.exit_code == 0, result.output
    assert f"(file-model, model from {path})" in result.stdout
    monkeypatch.setenv("MEMGPT_LITE_MODEL", "env-model")
    monkeypatch.setenv("MEMGPT_LITE_CONTEXT_WINDOW", "32000")
    assert run("create", "b", db=db).exit_code == 0
    result = run("create", "c", "--model", "flag-model", "--context-window", "64000", db=db)
    assert result.stdout == "Created agent 'c' (flag-model).\n"
    agents = {state.name: state for state, _ in Store(db).list_agents()}
    got = {
        n: (s.llm.model, s.settings.context_window, s.settings.embedder) for n, s in agents.items()
    }
    assert got == {
        "a": ("file-model", 16000, "local"),
        "b": ("env-model", 32000, "local"),
        "c": ("flag-model", 64000, "local"),
    }
    # The base URL is looked up at run time unless --base-url pins it.
    assert all(state.llm.base_url is None for state in agents.values())


def test_create_without_a_model_anywhere_is_a_clear_error(tmp_path):
    db = tmp_path / "a.db"
    result = run("create", "sam", db=db)
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: no model: pass --model, set $MEMGPT_LITE_MODEL, or put "
        f'model = "..." in {config_path()}\n'
    )
    assert Store(db).list_agents() == []


def test_create_with_a_bad_file_stores_nothing(tmp_path):
    db = tmp_path / "a.db"
    write_config("temperature = 0.2\n")
    result = run("create", "sam", "--model", "gpt-4o-mini", db=db)
    assert result.exit_code == 1 and "unknown key 'temperature'" in result.stderr
    assert Store(db).list_agents() == []


def test_base_url_in_the_file_is_the_last_fallback(fake_llm, tmp_path, monkeypatch):
    db = tmp_path / "a.db"
    agent = Agent.create("sam", "gpt-4o-mini", db=db)
    agent.store.close()
    # Only the file names an endpoint: it is used.
    monkeypatch.delenv("OPENAI_BASE_URL")
    write_config(f'base_url = "{fake_llm.base_url}"\n')
    fake_llm.enqueue(say("from the file's endpoint"))
    assert Agent.load("sam", db=db).step("hi").replies == ["from the file's endpoint"]
    # The environment wins over the file.
    write_config(f'base_url = "{UNREACHABLE}"\n')
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.base_url)
    fake_llm.enqueue(say("from the env's endpoint"))
    assert Agent.load("sam", db=db).step("hi").replies == ["from the env's endpoint"]
    assert fake_llm.rejections == []


def test_agents_own_base_url_wins_over_env_and_file(fake_llm, tmp_path, monkeypatch):
    db = tmp_path / "a.db"
    write_config(f'base_url = "{UNREACHABLE}"\n')
    monkeypatch.setenv("OPENAI_BASE_URL", UNREACHABLE)
    created = run("create", "sam", "-m", "gpt-4o-mini", "--base-url", fake_llm.base_url, db=db)
    assert created.exit_code == 0
    fake_llm.enqueue(say("pinned"))
    result = run("send", "sam", "hi", db=db)
    assert result.stdout == "pinned\n"
    show = run("show", "sam", db=db)
    assert f"endpoint: {fake_llm.base_url} (stored with the agent)" in show.stdout


def test_show_names_where_the_endpoint_comes_from(tmp_path, monkeypatch):
    db = tmp_path / "a.db"
    run("create", "sam", "-m", "gpt-4o-mini", db=db)
    assert f"endpoint: {UNREACHABLE} ($OPENAI_BASE_URL)" in run("show", "sam", db=db).stdout
    monkeypatch.delenv("OPENAI_BASE_URL")
    write_config('base_url = "http://localhost:11434/v1"\n')
    shown = run("show", "sam", db=db).stdout
    assert "endpoint: http://localhost:11434/v1 (config.toml)" in shown


def test_a_broken_file_fails_the_call_before_anything_is_stored(fake_llm, tmp_path, monkeypatch):
    db = tmp_path / "a.db"
    run("create", "sam", "-m", "gpt-4o-mini", db=db)
    monkeypatch.delenv("OPENAI_BASE_URL")
    path = write_config("base_url = \n")
    result = run("send", "sam", "hello", db=db)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {path} is not valid TOML")
    with Store(db) as store:
        assert [stats.message_count for _, stats in store.list_agents()] == [0]
    assert fake_llm.requests == []


def test_timeout_from_the_file_then_the_env_then_a_flag(monkeypatch):
    assert (effective_config().timeout.value, effective_config().timeout.source) == (
        300.0,
        "default",
    )
    path = write_config("timeout = 90\n")
    assert (effective_config().timeout.value, effective_config().timeout.source) == (
        90.0,
        str(path),
    )
    monkeypatch.setenv("MEMGPT_LITE_TIMEOUT", " 45.5 ")
    timeout = effective_config().timeout
    assert (timeout.value, timeout.source) == (45.5, "$MEMGPT_LITE_TIMEOUT")
    timeout = effective_config({"timeout": 10.0}).timeout
    assert (timeout.value, timeout.source) == (10.0, "--timeout")
    shown = run("config").stdout.splitlines()
    assert "timeout\t45.5\t$MEMGPT_LITE_TIMEOUT" in shown


@pytest.mark.parametrize("raw", ["soon", "0", "-5", "nan", "inf", "1e999"])
def test_bad_timeout_variable_is_one_line_naming_it(monkeypatch, raw):
    monkeypatch.setenv("MEMGPT_LITE_TIMEOUT", raw)
    with pytest.raises(ConfigError) as caught:
        effective_config()
    assert str(caught.value) == (
        f"$MEMGPT_LITE_TIMEOUT must be a positive number of seconds, got {raw!r}"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("timeout = 0\n", "timeout: Input should be greater than 0"),
        ("timeout = -1.5\n", "timeout: Input should be greater than 0"),
        ('timeout = "300"\n', "timeout: Input should be a valid number"),
        ("timeout = true\n", "timeout: Input should be a valid number"),
        ("timeout = nan\n", "timeout: Input should be a finite number"),
        ("timeout = inf\n", "timeout: Input should be a finite number"),
    ],
)
def test_bad_timeout_in_the_file_is_one_line_naming_it(text, problem):
    path = write_config(text)
    with pytest.raises(ConfigError) as caught:
        effective_config()
    assert str(caught.value) == f"{path}: {problem}"
