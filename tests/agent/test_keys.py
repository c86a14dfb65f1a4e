"""Users and API keys: memgpt_lite/agent/keys.py, agents' owners through the
library and agent files, databases made before users, and copy-db. The
store's part is the storage contract (tests/support/contract/keys.py); the commands
are in tests/cli/test_cli_keys.py."""

from __future__ import annotations

import hashlib
import json

import pytest
from support.backends import execute_sql, is_postgres, open_db, undo_agent_names_per_owner

from memgpt_lite.agent import Agent
from memgpt_lite.agent.keys import KEY_PREFIX, create_key, hash_key, user_for_key
from memgpt_lite.agentfile.native import import_agent, write_agent_file
from memgpt_lite.errors import AlreadyExistsError, ConfigError
from memgpt_lite.models import DEFAULT_USER, ApiKey
from memgpt_lite.storage.copy import copy_database
from memgpt_lite.storage.open import open_storage

# Keys: made, found, revoked


def test_a_key_is_the_prefix_and_32_random_bytes_stored_as_its_sha256(tmp_path):
    with open_storage(tmp_path / "a.db") as store:
        key, secret = create_key(store, "alice")
        other_key, other = create_key(store, "alice")
        assert secret.startswith(KEY_PREFIX) and len(secret) == len(KEY_PREFIX) + 43
        assert secret != other and key.id != other_key.id
        assert key.key_hash == hash_key(secret) == hashlib.sha256(secret.encode()).hexdigest()
        assert store.list_api_keys() == [key, other_key]
        assert secret not in {k.key_hash for k in store.list_api_keys()}
    assert secret.encode() not in (tmp_path / "a.db").read_bytes()


def test_user_for_key(db_location):
    with open_db(db_location) as store:
        alice, alice_secret = create_key(store, "alice")
        _, bob_secret = create_key(store, "bob")
        assert user_for_key(store, alice_secret) == "alice"
        assert user_for_key(store, bob_secret) == "bob"
        store.revoke_api_key(alice.id)
        assert user_for_key(store, alice_secret) is None
        assert user_for_key(store, bob_secret) == "bob"


@pytest.mark.parametrize(
    "secret",
    [
        "",
        "mlk_",
        KEY_PREFIX + "A" * 43 + "x",  # too long
        "xyz_" + "A" * 43,  # another prefix
        KEY_PREFIX + "A" * 42 + "\ud800",  # a lone surrogate
        KEY_PREFIX + "A" * 42 + "=",
    ],
)
def test_malformed_keys_find_no_user_and_are_not_looked_up(tmp_path, secret):
    with open_storage(tmp_path / "a.db") as store:
        # Stored as if it were a key: only the form check can refuse it.
        store.add_api_key(ApiKey(user="mallory", key_hash=hash_key(secret)))
        assert user_for_key(store, secret) is None


def test_an_unknown_well_formed_key_finds_no_user(tmp_path):
    with open_storage(tmp_path / "a.db") as store:
        create_key(store, "alice")
        assert user_for_key(store, KEY_PREFIX + "A" * 43) is None


def test_a_bad_user_name_stores_no_key(tmp_path):
    with open_storage(tmp_path / "a.db") as store:
        with pytest.raises(
            ConfigError, match="^cannot create a key for 'a b': a user name is 1-64"
        ):
            create_key(store, "a b")
        assert store.list_api_keys() == []


def test_a_key_hash_must_be_sha256_hex():
    with pytest.raises(ValueError, match="64 lowercase hex digits"):
        ApiKey(user="alice", key_hash="secret")


# Owners through the library and agent files


def test_agents_belong_to_local_unless_told(db_location):
    sam = Agent.create("sam", "gpt-4o-mini", db=db_location)
    ada = Agent.create("ada", "gpt-4o-mini", store=sam.store, owner="alice")
    assert sam.state.owner == DEFAULT_USER == "local"
    assert Agent.load("ada", store=sam.store).state.owner == "alice" == ada.state.owner
    assert [s.name for s, _ in sam.store.list_agents(owner="alice")] == ["ada"]
    with pytest.raises(ConfigError, match="user name is 1-64"):
        Agent.create("eve", "gpt-4o-mini", store=sam.store, owner="not valid")
    sam.store.close()


def test_exist_ok_opens_only_the_same_owner_s_agent(tmp_path):
    # Names are unique within an owner (issue 30): another user's "sam" is
    # never opened; exist_ok creates the caller's own beside it.
    db = tmp_path / "a.db"
    first = Agent.create("sam", "gpt-4o-mini", db=db, owner="alice")
    again = Agent.create("sam", "gpt-4o-mini", store=first.store, owner="alice", exist_ok=True)
    assert again.state.id == first.state.id
    bobs = Agent.create("sam", "gpt-4o-mini", store=first.store, owner="bob", exist_ok=True)
    local = Agent.create("sam", "gpt-4o-mini", store=first.store, exist_ok=True)
    assert len({first.state.id, bobs.state.id, local.state.id}) == 3
    assert (bobs.state.owner, local.state.owner) == ("bob", "local")
    with pytest.raises(AlreadyExistsError, match="^an agent named 'sam' already exists$"):
        Agent.create("sam", "gpt-4o-mini", store=first.store, owner="bob")
    assert sorted((s.name, s.owner) for s, _ in first.store.list_agents()) == [
        ("sam", "alice"),
        ("sam", "bob"),
        ("sam", "local"),
    ]
    first.store.close()


def test_an_imported_agent_gets_the_owner_given_and_files_carry_none(db_location, tmp_path):
    sam = Agent.create("sam", "gpt-4o-mini", db=db_location, owner="alice")
    path = tmp_path / "sam.json"
    write_agent_file(sam.store, "sam", path)
    assert "owner" not in json.loads(path.read_text())
    assert "alice" not in path.read_text()
    imported = import_agent(sam.store, path, name="bobs-sam", owner="bob")
    local = import_agent(sam.store, path, name="local-sam")
    assert sam.store.get_agent(imported.agent_id).owner == "bob"
    assert sam.store.get_agent(local.agent_id).owner == "local"
    sam.store.close()


# Databases made before users


def _as_before_users(location: str) -> None:
    """Put the database back as the version before users left it: no owner
    column, no api_keys table, the migrations that made them (and the later
    one that added a column to api_keys) not applied."""
    undo_agent_names_per_owner(location)  # a later migration, undone first
    execute_sql(location, "DROP TABLE api_keys")
    if is_postgres(location):
        execute_sql(location, "ALTER TABLE agents DROP COLUMN owner")  # its index goes with it
        execute_sql(
            location,
            "DELETE FROM memgpt_lite_migrations "
            "WHERE name IN ('m004_users_and_api_keys', 'm009_admin_keys')",
        )
        from memgpt_lite.storage.postgres import store as store_module
        from memgpt_lite.storage.postgres.connect import close_pool

        store_module._prepared.pop(location, None)  # this process opened it: open anew
        close_pool(location)
        return
    execute_sql(location, "DROP INDEX agents_owner")
    execute_sql(location, "ALTER TABLE agents DROP COLUMN owner")
    execute_sql(
        location,
        "DELETE FROM _sqlite_migrations "
        "WHERE name IN ('m011_users_and_api_keys', 'm016_admin_keys')",
    )


def _agent_columns(location: str) -> set[str]:
    if is_postgres(location):
        import psycopg

        with psycopg.connect(location) as conn:
            rows = conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'agents'"
            ).fetchall()
        return {row[0] for row in rows}
    import sqlite3

    conn = sqlite3.connect(location)
    try:
        return {row[1] for row in conn.execute("PRAGMA table_info(agents)")}
    finally:
        conn.close()


def test_a_database_from_before_users_upgrades_and_its_agents_are_local(db_location):
    Agent.create("sam", "gpt-4o-mini", db=db_location, owner="alice").store.close()
    _as_before_users(db_location)
    assert "owner" not in _agent_columns(db_location)
    with open_db(db_location) as store:
        assert "owner" in _agent_columns(db_location)
        assert store.get_agent("sam").owner == "local"
        assert [s.name for s, _ in store.list_agents(owner="local")] == ["sam"]
        assert store.list_api_keys() == []
        _, secret = create_key(store, "alice")
        assert user_for_key(store, secret) == "alice"
        Agent.create("ada", "gpt-4o-mini", store=store, owner="alice")
        assert [s.name for s, _ in store.list_agents(owner="alice")] == ["ada"]


# copy-db


def test_copy_db_carries_owners_and_keys(tmp_path, pg_url):
    src, dst = str(tmp_path / "src.db"), pg_url
    with open_storage(src) as store:
        Agent.create("sam", "gpt-4o-mini", store=store, owner="alice")
        Agent.create("ada", "gpt-4o-mini", store=store)
        revoked, _ = create_key(store, "alice")
        store.revoke_api_key(revoked.id)
        _, secret = create_key(store, "bob")
        keys = store.list_api_keys()
    counted: list[int] = []
    copy_database(src, dst, on_keys=counted.append)
    assert counted == [2]
    with open_storage(dst) as store:
        assert {s.name: s.owner for s, _ in store.list_agents()} == {"sam": "alice", "ada": "local"}
        assert store.list_api_keys() == keys
        assert user_for_key(store, secret) == "bob"
    back = str(tmp_path / "back.db")
    copy_database(dst, back)
    with open_storage(back) as store:
        assert store.list_api_keys() == keys


def test_copy_db_refuses_a_destination_holding_a_key(tmp_path):
    src, dst = tmp_path / "src.db", tmp_path / "dst.db"
    with open_storage(src) as store:
        key, _ = create_key(store, "alice")
        Agent.create("sam", "gpt-4o-mini", store=store)
    with open_storage(dst) as store:
        store.add_api_key(key)
    with pytest.raises(AlreadyExistsError, match=f"API keys: {key.id}; nothing was copied"):
        copy_database(src, dst)
    with open_storage(dst) as store:
        assert store.list_agents() == [] and store.list_api_keys() == [key]
