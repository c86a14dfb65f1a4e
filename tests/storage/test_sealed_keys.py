"""Agents' own API keys sealed at rest (storage/core/sealed_keys.py), on
both backends: the row holds a token, never the key; a process with the
secret reads the key; one without it (or with another) still reads and
writes the agent, keeps the token as it was, and fails in one line only
when the key is used."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest
from pydantic import SecretStr

from memgpt_lite.errors import ConfigError
from memgpt_lite.models import AgentState, Block, LLMConfig
from memgpt_lite.settings.endpoint import SEALED_PREFIX
from memgpt_lite.settings.resolve import resolve_endpoint, resolve_settings
from memgpt_lite.settings.values import SecretSource, StorageSettings
from memgpt_lite.storage.open import open_storage
from memgpt_lite.storage.protocol import Storage

KEY = "sk-their-own-0123456789"


def stored_llm(location: str, agent_id: str) -> str:
    """The `llm` column of the agent's row, read past the store."""
    if location.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(location) as conn:
            return conn.execute("SELECT llm FROM agents WHERE id = %s", [agent_id]).fetchone()[0]
    conn = sqlite3.connect(location)
    try:
        return conn.execute("SELECT llm FROM agents WHERE id = ?", [agent_id]).fetchone()[0]
    finally:
        conn.close()


def secret_in(folder: Path, value: str | None = None) -> StorageSettings:
    return StorageSettings(secret=SecretSource(file=folder / "secret.key", value=value))


def keyed_agent(store: Storage) -> AgentState:
    state = AgentState(name="sam", llm=LLMConfig(model="m", api_key=SecretStr(KEY)), system="s")
    store.create_agent(state, [Block(label="persona", value="p")])
    return state


def test_the_row_holds_a_sealed_token_and_the_secret_file_is_the_owners(
    db_location: str, tmp_path: Path
) -> None:
    with open_storage(db_location, settings=secret_in(tmp_path)) as store:
        agent_id = keyed_agent(store).id
    row = stored_llm(db_location, agent_id)
    assert KEY not in row and SEALED_PREFIX in row
    assert stat.S_IMODE((tmp_path / "secret.key").stat().st_mode) == 0o600
    with open_storage(db_location, settings=secret_in(tmp_path)) as store:
        assert store.get_agent("sam").llm.api_key.get_secret_value() == KEY
        # Written again unchanged, the row keeps its token.
        store.update_agent(agent_id, lambda s: setattr(s, "summary", "again"))
    assert stored_llm(db_location, agent_id) == row


def test_without_the_secret_nothing_is_lost_and_the_key_fails_in_one_line(
    db_location: str, tmp_path: Path
) -> None:
    with open_storage(db_location, settings=secret_in(tmp_path / "server")) as store:
        agent_id = keyed_agent(store).id
    row = stored_llm(db_location, agent_id)
    for settings in (secret_in(tmp_path / "elsewhere"), secret_in(tmp_path, "another"), None):
        with open_storage(db_location, settings=settings) as store:
            state = store.get_agent("sam")
            assert state.llm.api_key.get_secret_value() == stored_token(row)
            with pytest.raises(ConfigError, match="sealed with a secret this process") as caught:
                resolve_endpoint(state.llm)
            assert "\n" not in str(caught.value) and KEY not in str(caught.value)
            store.update_agent(agent_id, lambda s: setattr(s, "summary", "changed"))
        assert stored_llm(db_location, agent_id) == row
    assert not (tmp_path / "elsewhere" / "secret.key").exists()  # reading made no secret
    with open_storage(db_location, settings=secret_in(tmp_path / "server")) as store:
        assert store.get_agent("sam").llm.api_key.get_secret_value() == KEY


def stored_token(row: str) -> str:
    return LLMConfig.model_validate_json(row).api_key.get_secret_value()


def test_a_store_without_a_secret_cannot_store_a_new_key(tmp_path: Path) -> None:
    with open_storage(tmp_path / "a.db") as store:
        with pytest.raises(ConfigError, match="no secret to seal"):
            keyed_agent(store)
        assert store.list_agents() == []


def test_the_secret_from_the_environment_is_shared_and_makes_no_file(
    db_location: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Several servers on one PostgreSQL, each with its own home: the same
    $MEMGPT_LITE_SECRET opens the keys any of them sealed."""
    monkeypatch.setenv("MEMGPT_LITE_SECRET", "one secret for every server")
    monkeypatch.setenv("MEMGPT_LITE_HOME", str(tmp_path / "first"))
    with open_storage(db_location, settings=resolve_settings().storage) as store:
        keyed_agent(store)
    monkeypatch.setenv("MEMGPT_LITE_HOME", str(tmp_path / "second"))
    with open_storage(db_location, settings=resolve_settings().storage) as store:
        assert store.get_agent("sam").llm.api_key.get_secret_value() == KEY
    assert not any(p.name == "secret.key" for p in tmp_path.rglob("*"))


def test_two_stores_of_one_home_share_the_secret_the_first_made(tmp_path: Path) -> None:
    """Two stores opened before the secret file exists (two server workers):
    the first to seal makes it, the second uses it; each opens the other's."""
    first = open_storage(tmp_path / "a.db", settings=secret_in(tmp_path))
    second = open_storage(tmp_path / "a.db", settings=secret_in(tmp_path))
    try:
        keyed_agent(first)
        other = AgentState(name="ada", llm=LLMConfig(model="m", api_key=SecretStr("k2")), system="")
        second.create_agent(other, [])
        for store in (first, second):
            with open_storage(tmp_path / "a.db", settings=secret_in(tmp_path)) as fresh:
                assert fresh.get_agent("ada").llm.api_key.get_secret_value() == "k2"
                assert fresh.get_agent("sam").llm.api_key.get_secret_value() == KEY
            assert store.get_agent("sam").llm.api_key is not None
    finally:
        first.close()
        second.close()
    assert [p.name for p in tmp_path.iterdir() if "secret" in p.name] == ["secret.key"]
    assert os.stat(tmp_path / "secret.key").st_size > 0
