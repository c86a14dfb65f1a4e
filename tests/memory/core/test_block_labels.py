"""Path-style and long block labels (`system/human/family`, `/note_directory`),
as Letta's newer agents have them: valid in the model, the command line, the
chat's block commands, the core memory tools, the system message, and our own
export and import."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from memgpt_lite import Agent, Block
from memgpt_lite.agentfile.native import import_agent, write_agent_file
from memgpt_lite.cli.editor import keep_text
from memgpt_lite.cli.main import cli
from memgpt_lite.settings.resolve import home_dir
from memgpt_lite.storage.sqlite.store import Store
from memgpt_lite.testing import call, reply, say

FAMILY = "system/human/family"
LONG = "x" * 150


def run(*args: str, db: Path):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


def blocks_of(db: Path, name: str) -> dict[str, Block]:
    with Store(db) as store:
        return {b.label: b for b in store.get_blocks(store.get_agent(name).id)}


@pytest.mark.parametrize(
    "label",
    [
        "human",
        FAMILY,
        "/note_directory",
        "system/persona/soul",
        "a.b",
        "v1.2/notes",
        LONG,
        "x" * 200,
    ],
)
def test_path_style_and_long_labels_are_valid(label):
    assert Block(label=label).label == label


@pytest.mark.parametrize(
    "label",
    [
        "",
        "/",
        "//",
        "two words",
        "tab\there",
        "line\n",
        "nul\x00",
        "x" * 201,
        "..",
        ".",
        "../etc",
        "system/../human",
        "system/./human",
        "notes/..",
        'quote"d',
        "<block>",
        "ünïcode",
    ],
)
def test_labels_that_could_escape_or_break_the_prompt_are_refused(label):
    with pytest.raises(ValidationError, match="a block label is 1-200"):
        Block(label=label)


def test_the_command_line_lists_prints_sets_and_edits_path_labels(tmp_path, monkeypatch):
    db = tmp_path / "a.db"
    created = run(
        "create", "sam", "--model", "m", "--block", f"{FAMILY}=Sister: Ann", "--block",
        f"{LONG}=long", db=db,
    )  # fmt: skip
    assert created.exit_code == 0, created.output
    listed = run("blocks", "sam", db=db).stdout
    assert f"{FAMILY}\t11\t5000\t\n" in listed and f"{LONG}\t4\t5000\t\n" in listed
    assert run("blocks", "sam", FAMILY, db=db).stdout == "Sister: Ann\n"
    saved = run("blocks", "sam", FAMILY, "--set", "Sister: Bea", db=db)
    assert saved.stdout == f"Saved block {FAMILY!r} (11/5000 chars).\n"
    script = tmp_path / "editor.py"
    script.write_text(
        "import sys, pathlib\npath = pathlib.Path(sys.argv[1])\n"
        "path.write_text(path.read_text() + '\\nBrother: Cy\\n')\n"
    )
    monkeypatch.setenv("EDITOR", f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}")
    edited = run("blocks", "sam", FAMILY, "--edit", db=db)
    assert edited.stdout == f"Saved block {FAMILY!r} (23/5000 chars).\n"
    assert blocks_of(db, "sam")[FAMILY].value == "Sister: Bea\nBrother: Cy"
    assert FAMILY in run("show", "sam", db=db).stdout


def test_text_kept_from_a_path_label_edit_is_one_file_in_the_unsaved_folder(tmp_path):
    kept = keep_text("draft", f"sam-{FAMILY}")
    assert kept.parent == home_dir() / "unsaved" and kept.read_text() == "draft"
    assert kept.name.startswith("sam-system_human_family-")
    assert keep_text("draft", f"sam-{'x' * 200}").parent == home_dir() / "unsaved"


def test_the_chat_and_the_memory_tools_use_path_labels(fake_llm, chat_env, tmp_path):
    db = tmp_path / "chat.db"
    blocks = [Block(label="/note_directory", value=""), Block(label=FAMILY, value="")]
    Agent.create("sam", "gpt-4o-mini", blocks=blocks, db=db)
    fake_llm.enqueue(
        reply(
            "Noting the sister.",
            [
                call(
                    "core_memory_append",
                    label=FAMILY,
                    content="Sister: Ann",
                    request_heartbeat=True,
                )
            ],
        ),
        reply(
            "And the note.",
            [
                call(
                    "core_memory_replace",
                    label=FAMILY,
                    old_content="Ann",
                    new_content="Ann (older)",
                    request_heartbeat=True,
                )
            ],
        ),
        say("Noted."),
    )
    entries = ["my sister is Ann", "/block /note_directory notes/a.md", "/memory"]
    finished = subprocess.run(
        [sys.executable, "-m", "memgpt_lite", "--db", str(db), "chat", "sam"],
        input="\n".join(entries) + "\n",
        capture_output=True,
        text=True,
        env=chat_env,
        timeout=60,
    )
    assert finished.returncode == 0, finished.stderr
    out = finished.stdout
    assert "Saved block '/note_directory' (10/5000 chars)." in out
    assert f"[{FAMILY}] 19/5000 chars" in out and "[/note_directory] 10/5000 chars" in out
    assert fake_llm.rejections == []
    system = fake_llm.chat_requests[-1]["messages"][0]["content"]
    assert f'<block label="{FAMILY}" chars="19/5000">' in system
    assert "Sister: Ann (older)" in system
    stored = blocks_of(db, "sam")
    assert stored[FAMILY].value == "Sister: Ann (older)"
    assert stored["/note_directory"].value == "notes/a.md"


def test_path_labels_survive_our_export_and_import(tmp_path):
    db = tmp_path / "a.db"
    blocks = [Block(label=FAMILY, value="Sister: Ann"), Block(label=LONG, value="long")]
    Agent.create("sam", "m", blocks=blocks, db=db)
    with Store(db) as store:
        path = tmp_path / "sam.json"
        write_agent_file(store, "sam", path)
        report = import_agent(store, path, name="sam2")
    assert report.blocks == 2
    copied = blocks_of(db, "sam2")
    assert copied[FAMILY].value == "Sister: Ann" and copied[LONG].value == "long"


def test_the_http_api_reads_and_sets_blocks_with_path_labels(tmp_path):
    from fastapi.testclient import TestClient
    from support.serving import new_key

    from memgpt_lite.server.app import create_app

    db = str(tmp_path / "server.db")
    key = new_key(db, "alice")
    with TestClient(create_app(db), headers={"Authorization": f"Bearer {key}"}) as client:
        blocks = [{"label": FAMILY, "value": "Sister: Ann"}, {"label": "/note_directory"}]
        made = client.post("/api/agents", json={"name": "sam", "model": "m", "blocks": blocks})
        assert made.status_code == 201, made.text
        assert client.get(f"/api/agents/sam/blocks/{FAMILY}").json()["value"] == "Sister: Ann"
        put = client.put("/api/agents/sam/blocks//note_directory", json={"value": "a.md"})
        assert put.status_code == 200 and put.json()["label"] == "/note_directory"
        assert client.get("/api/agents/sam/blocks/system/human/nobody").status_code == 422
