"""The command line on a database a server shares: names are unique per
user only, so the CLI finds `local`'s agent of a name first, else the one
user's who has it, and asks for an id when several users have one; a
display name (given by a Letta client) is shown beside the name."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from memgpt_lite import Agent
from memgpt_lite.cli.main import cli
from memgpt_lite.storage.open import open_storage


def run(*args: str, db: Path):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


def test_the_cli_finds_names_as_before_and_asks_for_an_id_when_they_clash(tmp_path):
    db = tmp_path / "shared.db"
    with open_storage(db) as store:
        alices = Agent.create("sam", "gpt-4o-mini", store=store, owner="alice")
        bot = Agent.create("bot", "gpt-4o-mini", store=store, owner="alice")
        bot.rename("my-helper-bot", "My Helper Bot")
    shown = run("show", "sam", db=db).stdout  # the only 'sam': alice's
    assert "name: sam\n" in shown
    assert (
        "name: my-helper-bot\ndisplay name: My Helper Bot\n"
        in run("show", "my-helper-bot", db=db).stdout
    )
    with open_storage(db) as store:
        bobs = Agent.create("sam", "gpt-4o-mini", store=store, owner="bob")
    clash = run("show", "sam", db=db)
    assert clash.exit_code == 1 and clash.stderr.count("\n") == 1
    assert clash.stderr.startswith("Error: several users have an agent named 'sam'")
    assert alices.state.id in clash.stderr and bobs.state.id in clash.stderr
    assert "name: sam\n" in run("show", bobs.state.id, db=db).stdout
    assert run("create", "sam", "--model", "gpt-4o-mini", db=db).exit_code == 0  # local's
    assert "name: sam\n" in run("show", "sam", db=db).stdout  # local's, first
    assert run("rename", "my-helper-bot", "helper", db=db).exit_code == 0
    assert "display name" not in run("show", "helper", db=db).stdout
