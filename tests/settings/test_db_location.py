"""Choosing the database: a path means SQLite, a postgresql:// URL PostgreSQL;
--db, then $MEMGPT_LITE_DB, then db in config.toml, then the default file;
and a URL's password is never shown."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from click.testing import CliRunner

from memgpt_lite import Agent
from memgpt_lite.cli.main import cli
from memgpt_lite.errors import ConfigError
from memgpt_lite.settings.resolve import config_path, default_db_path, effective_config, resolve_db
from memgpt_lite.storage.location import (
    describe,
    is_postgres,
    is_url,
    redacted,
    same_database,
    sqlite_path,
)
from memgpt_lite.storage.open import MISSING_DRIVER, open_storage
from memgpt_lite.storage.sqlite.store import Store


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def write_config(text: str) -> Path:
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def agent_names(path: Path) -> list[str]:
    with Store(path) as store:
        return [state.name for state, _ in store.list_agents()]


# Parsing and redaction


@pytest.mark.parametrize(
    ("text", "url"),
    [
        ("postgresql://sam@db.example.com:5432/mem", True),
        ("postgres://localhost/mem", True),
        ("sqlite:///agents.db", True),
        ("agents.db", False),
        ("~/agents.db", False),
        ("/srv/memgpt/agents.db", False),
        ("C:\\agents\\mem.db", False),  # a Windows drive is no scheme
        ("odd:name.db", False),
    ],
)
def test_a_url_has_a_scheme_and_a_path_does_not(text, url):
    assert is_url(text) is url
    assert (sqlite_path(text) is None) is (url and not text.startswith("sqlite:"))


@pytest.mark.parametrize(
    ("location", "shown"),
    [
        (
            "postgresql://sam:s3cret@db.example.com:5432/mem",
            "postgresql://sam:***@db.example.com:5432/mem",
        ),
        # A password holding the characters that end the user part.
        ("postgres://sam:a@b/c:d@db.example.com/mem", "postgres://sam:***@db.example.com/mem"),
        (
            "postgresql://sam@db.example.com/mem?sslmode=require&password=s3cret",
            "postgresql://sam@db.example.com/mem?sslmode=require&password=***",
        ),
        ("postgresql://sam:s3cret@[::1]:5433/mem", "postgresql://sam:***@[::1]:5433/mem"),
        (
            "postgresql:///mem?host=/tmp/x&PassWord=s3cret",
            "postgresql:///mem?host=/tmp/x&PassWord=***",
        ),
        ("postgresql://sam@db.example.com/mem", "postgresql://sam@db.example.com/mem"),
        ("postgresql://:s3cret@/mem#part", "postgresql://:***@/mem#part"),
        ("/srv/a:b@c.db", "/srv/a:b@c.db"),  # a path is shown as it is
    ],
)
def test_redacted_masks_every_password(location, shown):
    assert redacted(location) == shown
    assert "s3cret" not in describe(location)


@pytest.mark.parametrize(
    ("location", "described"),
    [
        (
            "postgresql://sam:s3cret@db.example.com:5432/mem",
            'database "mem" on host db.example.com:5432',
        ),
        ("postgres://sam@[::1]:5433/my%20mem", 'database "my mem" on host [::1]:5433'),
        ("postgresql:///mem?host=/tmp/x", 'database "mem" on the socket in /tmp/x'),
        ("postgresql://%2Fvar%2Frun%2Fpg/mem", 'database "mem" on the socket in /var/run/pg'),
        ("postgresql://sam@db.example.com", 'database "sam" on host db.example.com'),
        ("postgresql://", "the default database on the local socket"),
        ("postgresql://sam:s3cret@[::1/mem", "postgresql://sam:***@[::1/mem"),  # malformed
        ("/srv/agents.db", "/srv/agents.db"),
    ],
)
def test_describe_names_the_database_and_its_host(location, described):
    assert describe(location) == described


def test_one_file_written_two_ways_is_one_database(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert same_database("a.db", str(tmp_path / "a.db"))
    assert same_database("a.db", f"sqlite:///{tmp_path / 'a.db'}")
    assert not same_database("a.db", "b.db")
    assert same_database("postgresql://h/mem", "postgresql://h/mem/")
    assert not same_database("postgresql://h/mem", "postgresql://h/other")
    assert is_postgres("POSTGRESQL://h/mem") and not is_postgres("sqlite:///a.db")


def test_a_postgres_url_without_its_driver_says_what_to_install(monkeypatch):
    real_find_spec = importlib.util.find_spec

    def without_psycopg(name, *args):
        return None if name.startswith("psycopg") else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_psycopg)
    for url in ("postgresql://sam:s3cret@db.example.com/mem", "postgres://db.example.com/mem"):
        with pytest.raises(ConfigError) as caught:
            open_storage(url)
        assert str(caught.value) == MISSING_DRIVER
        assert 'pip install "memgpt-lite[postgres]"' in MISSING_DRIVER


# Precedence: --db, then $MEMGPT_LITE_DB, then db in config.toml, then the default


def test_resolve_db_follows_flag_then_env_then_file_then_default(tmp_path, monkeypatch):
    assert (resolve_db().value, resolve_db().source) == (str(default_db_path()), "default")
    path = write_config('db = "agents.db"\n')
    # Relative in the file: relative to the file's folder, not to where one runs.
    assert (resolve_db().value, resolve_db().source) == (str(path.parent / "agents.db"), str(path))
    monkeypatch.setenv("MEMGPT_LITE_DB", "postgresql://sam:s3cret@db.example.com/mem")
    chosen = resolve_db()
    assert (chosen.value, chosen.source) == (
        "postgresql://sam:s3cret@db.example.com/mem",
        "$MEMGPT_LITE_DB",
    )
    monkeypatch.setenv("HOME", str(tmp_path))
    chosen = resolve_db("~/flag.db")
    assert (chosen.value, chosen.source) == (str(tmp_path / "flag.db"), "--db")
    assert effective_config().db.value == "postgresql://sam:s3cret@db.example.com/mem"


def test_the_command_line_uses_the_database_of_config_toml(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write_config('db = "from_file.db"\n')
    assert run("create", "ada", "--model", "m").exit_code == 0
    assert agent_names(path.parent / "from_file.db") == ["ada"]
    monkeypatch.setenv("MEMGPT_LITE_DB", str(tmp_path / "env.db"))
    assert run("create", "bob", "--model", "m").exit_code == 0
    assert run("--db", "flag.db", "create", "cy", "--model", "m").exit_code == 0
    assert agent_names(tmp_path / "env.db") == ["bob"]
    assert agent_names(tmp_path / "flag.db") == ["cy"]
    assert not default_db_path().exists()


def test_python_without_db_resolves_as_the_command_line_does(tmp_path, monkeypatch):
    path = write_config(f'db = "{tmp_path / "file.db"}"\n')
    Agent.create("ada", "m").store.close()
    monkeypatch.setenv("MEMGPT_LITE_DB", str(tmp_path / "env.db"))
    Agent.create("bob", "m").store.close()
    Agent.create("cy", "m", db=f"sqlite:///{tmp_path / 'given.db'}").store.close()
    assert Agent.load("bob").state.name == "bob"
    assert agent_names(tmp_path / "file.db") == ["ada"] and path.exists()
    assert agent_names(tmp_path / "env.db") == ["bob"]
    assert agent_names(tmp_path / "given.db") == ["cy"]


def test_config_shows_the_database_with_its_password_masked(monkeypatch):
    path = write_config('db = "postgresql://sam:s3cret@db.example.com:5432/mem"\n')
    shown = run("config")
    assert shown.exit_code == 0
    assert "db\tpostgresql://sam:***@db.example.com:5432/mem\t" + str(path) in shown.stdout
    monkeypatch.setenv("MEMGPT_LITE_DB", "postgresql://ada@h/mem?password=0th3r")
    shown = run("config")
    assert "db\tpostgresql://ada@h/mem?password=***\t$MEMGPT_LITE_DB" in shown.stdout
    flagged = run("--db", "postgres://u:fl4g@h/x", "config")
    assert "db\tpostgres://u:***@h/x\t--db" in flagged.stdout
    for result in (shown, flagged):
        assert all(secret not in result.output for secret in ("s3cret", "0th3r", "fl4g"))


def test_a_bad_db_in_config_toml_is_an_error_naming_the_file():
    path = write_config("db = 5\n")
    result = CliRunner().invoke(cli, ["agents"])
    assert result.exit_code == 1
    assert str(path) in result.output and "db" in result.output
    assert "Traceback" not in result.output


def test_show_names_the_database(tmp_path, monkeypatch):
    location = f"sqlite:///{tmp_path / 'env.db'}"
    monkeypatch.setenv("MEMGPT_LITE_DB", location)
    assert run("create", "ada", "--model", "m").exit_code == 0
    assert f"database: {location}\n" in run("show", "ada").stdout
