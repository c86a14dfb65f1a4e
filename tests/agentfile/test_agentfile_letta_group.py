"""A Letta file with several agents sharing blocks: `import --all` imports
every agent, and a block they share stays one block, attached to each."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.paths import LETTA_AF

from memgpt_lite.agent import Agent
from memgpt_lite.cli.main import cli
from memgpt_lite.storage.open import open_storage

LETTA_FILE = LETTA_AF / "memgpt_agent.af"


@pytest.fixture
def two_agents(tmp_path: Path) -> Path:
    """memgpt_agent.af with a second agent that shares its first block."""
    if not LETTA_FILE.exists():
        pytest.skip("no Letta agent files in ../shared/letta-af")
    raw = json.loads(LETTA_FILE.read_text())
    raw = json.loads(raw) if isinstance(raw, str) else raw
    first = raw["agents"][0]
    second = copy.deepcopy(first)
    second.update(id="agent-1", name="helper agent", block_ids=first["block_ids"][:1])
    raw["agents"].append(second)
    path = tmp_path / "group.af"
    path.write_text(json.dumps(raw))
    return path


def run(db: Path, *args: str):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


def test_import_all_keeps_a_shared_block_shared(two_agents: Path, tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    done = run(db, "import", str(two_agents), "--all")
    assert done.exit_code == 0, done.output
    assert "its own copy" not in done.output
    main = Agent.load("memgpt_agent", db=db)
    helper = Agent.load("helper-agent", db=db)  # the name with a space, made valid
    shared = helper.blocks[0]
    assert [b.id for b in main.blocks][:1] == [shared.id]
    with open_storage(str(db)) as store:
        assert sorted(store.block_owners(shared.id)) == ["helper-agent", "memgpt_agent"]
    main.set_block(shared.label, "seen by both")
    assert helper.block(shared.label).value == "seen by both"


def test_one_agent_at_a_time_gets_a_copy_and_says_so(two_agents: Path, tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    done = run(db, "import", str(two_agents))
    assert done.exit_code == 0, done.output
    assert "its own copy" in done.output and "its main agent" in done.output
    assert [s.name for s, _ in open_storage(str(db)).list_agents()] == ["memgpt_agent"]


def test_all_refuses_a_name_or_an_agent(two_agents: Path, tmp_path: Path) -> None:
    done = run(tmp_path / "a.db", "import", str(two_agents), "--all", "--name", "x")
    assert done.exit_code == 2 and "--all imports every agent" in done.output
