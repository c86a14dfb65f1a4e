"""`memgpt-lite keys create|list|revoke`, run as tests/cli/test_cli.py runs the
CLI, on SQLite and PostgreSQL (`db_location`), and once as a real process
(the secret alone on stdout, for `KEY=$(memgpt-lite keys create ...)`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from click.testing import CliRunner
from support.backends import open_db, without_notices

from memgpt_lite.agent.keys import KEY_PREFIX, hash_key, key_for_secret, user_for_key
from memgpt_lite.cli.main import cli

SECRET = re.compile(rf"^{KEY_PREFIX}[A-Za-z0-9_-]{{43}}\n$")


def run(*args: str, db=None):
    prefix = ["--db", str(db)] if db else []
    return CliRunner().invoke(cli, [*prefix, *args], catch_exceptions=False)


def test_create_prints_the_secret_alone_and_stores_only_its_hash(db_location):
    created = run("keys", "create", "--user", "alice", db=db_location)
    assert created.exit_code == 0, created.output
    assert SECRET.match(created.stdout)
    secret = created.stdout.strip()
    with open_db(db_location) as store:
        [key] = store.list_api_keys()
        assert (key.user, key.key_hash) == ("alice", hash_key(secret))
        assert user_for_key(store, secret) == "alice"
    assert without_notices(created.stderr) == (
        f"Created key {key.id} for user 'alice'; its secret is shown only this once.\n"
    )


def test_admin_keys_are_made_with_admin_and_listed_so(db_location):
    created = run("keys", "create", "--user", "root", "--admin", db=db_location)
    assert created.exit_code == 0, created.output
    run("keys", "create", "--user", "bob", db=db_location)
    with open_db(db_location) as store:
        admin, plain = store.list_api_keys()
        found = key_for_secret(store, created.stdout.strip())
    assert (admin.admin, plain.admin) == (True, False)
    assert found is not None and found.id == admin.id and found.admin
    assert without_notices(created.stderr).startswith(f"Created admin key {admin.id} for user")
    rows = [line.split("\t") for line in run("keys", "list", db=db_location).stdout.splitlines()]
    assert [(r[1], r[4]) for r in rows] == [("root", "yes"), ("bob", "no")]


def test_list_shows_ids_users_and_times_never_hashes(db_location):
    assert run("keys", "list", db=db_location).stdout == (
        "No API keys yet. Create one with: memgpt-lite keys create --user NAME\n"
    )
    run("keys", "create", "--user", "alice", db=db_location)
    run("keys", "create", "--user", "bob", db=db_location)
    with open_db(db_location) as store:
        keys = store.list_api_keys()
    listed = run("keys", "list", db=db_location)
    assert listed.exit_code == 0
    rows = [line.split("\t") for line in listed.stdout.splitlines()]  # piped: tab-separated
    assert [(r[0], r[1], r[3]) for r in rows] == [
        (keys[0].id, "alice", "-"),
        (keys[1].id, "bob", "-"),
    ]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", r[2]) for r in rows)
    assert not any(key.key_hash in listed.stdout for key in keys)


def test_revoke_stops_the_key_and_keeps_it_listed(db_location):
    secret = run("keys", "create", "--user", "alice", db=db_location).stdout.strip()
    kept = run("keys", "create", "--user", "alice", db=db_location).stdout.strip()
    with open_db(db_location) as store:
        key_id = store.list_api_keys()[0].id
    revoked = run("keys", "revoke", key_id, db=db_location)
    assert revoked.exit_code == 0, revoked.output
    assert revoked.stdout.startswith(f"Revoked key {key_id} of user 'alice' at ")
    assert run("keys", "revoke", key_id, db=db_location).exit_code == 0  # twice: fine
    with open_db(db_location) as store:
        assert user_for_key(store, secret) is None
        assert user_for_key(store, kept) == "alice"
    rows = [line.split("\t") for line in run("keys", "list", db=db_location).stdout.splitlines()]
    assert rows[0][0] == key_id and rows[0][3] != "-"
    assert rows[1][3] == "-"


def test_errors_are_one_line(tmp_path):
    db = tmp_path / "a.db"
    unknown = run("keys", "revoke", "key-nope", db=db)
    assert (unknown.exit_code, unknown.stderr) == (1, "Error: no API key with id 'key-nope'\n")
    bad = run("keys", "create", "--user", "no spaces", db=db)
    assert bad.exit_code == 1 and bad.stdout == ""
    assert bad.stderr.startswith("Error: cannot create a key for 'no spaces': a user name is 1-64")
    assert bad.stderr.count("\n") == 1
    missing = run("keys", "create", db=db)
    assert missing.exit_code == 2 and "Missing option '--user'" in missing.stderr
    assert run("keys", "list", db=db).stdout.startswith("No API keys yet.")


def test_the_secret_can_be_captured_by_a_shell(tmp_path):
    db = str(tmp_path / "a.db")
    shell = f'KEY=$("{sys.executable}" -m memgpt_lite --db "{db}" keys create --user alice) && '
    shell += 'printf "%s" "$KEY"'
    done = subprocess.run(
        ["sh", "-c", shell], capture_output=True, text=True, env=os.environ.copy(), timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert SECRET.match(done.stdout + "\n")
    assert "shown only this once" in done.stderr and "Traceback" not in done.stderr


def test_cli_agents_belong_to_local(fake_llm, db_location):
    assert run("create", "sam", "--model", "gpt-4o-mini", db=db_location).exit_code == 0
    with open_db(db_location) as store:
        assert store.get_agent("sam").owner == "local"


def test_copy_db_says_how_many_keys_it_copied(tmp_path):
    src, dst = str(tmp_path / "src.db"), str(tmp_path / "dst.db")
    run("keys", "create", "--user", "alice", db=src)
    copied = run("copy-db", src, dst)
    assert copied.exit_code == 0, copied.output
    assert copied.stdout == ""  # no agents: no table
    assert copied.stderr.startswith(f"Copied 0 agent(s) and 1 API key(s) from {src} to {dst};")
    assert [r.split("\t")[1] for r in run("keys", "list", db=dst).stdout.splitlines()] == ["alice"]
