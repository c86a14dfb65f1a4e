"""Managing agents from the shell: create from files, list, show, rename,
delete, and the blocks command with its editor flow. The commands that read and
change what is stored (agents, delete, rename, show, blocks) run against SQLite
and PostgreSQL (`db_location`)."""

from __future__ import annotations

import os
import pty
import shlex
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.backends import open_db
from support.paths import REPO

from memgpt_lite import Agent, Block, Message
from memgpt_lite.cli.editor import edit_text
from memgpt_lite.cli.main import cli
from memgpt_lite.settings.resolve import home_dir
from memgpt_lite.storage.sqlite.store import Store
from memgpt_lite.testing import call, reply, say


def run(*args: str, db: str | Path, input: str | None = None):
    return CliRunner().invoke(cli, ["--db", str(db), *args], input=input, catch_exceptions=False)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "agents.db"


def create_sam(db: str | Path, *extra: str) -> None:
    result = run("create", "sam", "--model", "gpt-4o-mini", *extra, db=db)
    assert result.exit_code == 0, result.output


def blocks_of(db: str | Path, name: str) -> dict[str, Block]:
    with open_db(db) as store:
        return {b.label: b for b in store.get_blocks(store.get_agent(name).id)}


# create


def test_create_reads_persona_human_and_blocks_from_files(db, tmp_path):
    (tmp_path / "persona.md").write_text("I am Sam.\nI like tea.\n")
    (tmp_path / "human.md").write_text("Name: Alice\n")
    (tmp_path / "project.md").write_text("Deadline: May\n\n")
    create_sam(
        db,
        "--persona",
        f"@{tmp_path / 'persona.md'}",
        "--human",
        f"@{tmp_path / 'human.md'}",
        "--block",
        f"project=@{tmp_path / 'project.md'}",
        "--block",
        "mood=@@home, a = sign",
        "--block-limit",
        "project=200",
        "--block-limit",
        "persona=50",
    )
    blocks = blocks_of(db, "sam")
    assert list(blocks) == ["persona", "human", "project", "mood"]
    assert blocks["persona"].value == "I am Sam.\nI like tea." and blocks["persona"].limit == 50
    assert blocks["human"].value == "Name: Alice"
    assert (blocks["project"].value, blocks["project"].limit) == ("Deadline: May", 200)
    assert (blocks["mood"].value, blocks["mood"].limit) == ("@home, a = sign", 5000)
    assert blocks["persona"].description  # the built-in blocks keep their descriptions


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--persona", "@missing.md"], "Error: cannot read @missing.md: no such file\n"),
        (["--block", "notes=@nope.txt"], "Error: cannot read @nope.txt: no such file\n"),
        (["--system", "@gone.md"], "Error: cannot read @gone.md: no such file\n"),
        (["--block", "notes"], "Error: --block takes LABEL=VALUE, got 'notes'\n"),
        (["--block", "persona=x"], "Error: block 'persona' is given twice: use --persona\n"),
        (["--block", "a=1", "--block", "a=2"], "Error: block 'a' is given twice\n"),
        (["--block-limit", "ghost=10"], "Error: --block-limit names no block: ghost\n"),
        (
            ["--block-limit", "human=ten"],
            "Error: --block-limit 'human=ten': the limit must be a positive number\n",
        ),
        (
            ["--persona", "x" * 20, "--block-limit", "persona=10"],
            "Error: block 'persona': block 'persona' holds 20 characters, over its limit of 10\n",
        ),
        (
            ["--block", "two words=x"],
            "Error: block 'two words': a block label is 1-200 letters, digits, '_', '-', '.' "
            "or '/', with no '.' or '..' between slashes\n",
        ),
    ],
)
def test_bad_create_input_is_one_line_and_stores_nothing(db, tmp_path, monkeypatch, args, error):
    monkeypatch.chdir(tmp_path)
    result = run("create", "sam", "--model", "gpt-4o-mini", *args, db=db)
    assert result.exit_code == 1
    assert result.stderr == error
    assert Store(db).list_agents() == []


# agents


def test_agents_lists_counts_and_last_active(db_location):
    db = db_location
    assert run("agents", db=db).stdout.startswith("No agents yet.")
    create_sam(db)
    run("create", "bob", "--model", "llama3.2", db=db)
    store = open_db(db)
    bob, sam = (state for state, _ in store.list_agents())
    talked_at = datetime(2024, 1, 2, 3, 4, tzinfo=UTC)
    store.add_messages([Message(agent_id=sam.id, role="user", content="hi", created_at=talked_at)])
    Agent.load("sam", store=store).archival.insert("Beth's birthday is 3 March.")
    local = "%Y-%m-%d %H:%M"
    assert run("agents", db=db).stdout.splitlines() == [
        f"bob\tllama3.2\t0\t0\t{bob.created_at.astimezone().strftime(local)}",
        f"sam\tgpt-4o-mini\t1\t1\t{talked_at.astimezone().strftime(local)}",
    ]


def test_agents_is_a_table_on_a_terminal(db):
    create_sam(db)
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm"}
    process = subprocess.Popen(
        [sys.executable, "-m", "memgpt_lite", "--db", str(db), "agents"],
        stdout=follower,
        stderr=subprocess.PIPE,
        env=env,
    )
    os.close(follower)
    output = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closes when the process exits (EIO on Linux)
            break
        if not chunk:
            break
        output += chunk
    os.close(leader)
    assert process.wait(timeout=60) == 0, process.stderr.read()
    text = output.decode("utf-8")
    assert "name" in text and "last active" in text and "messages" in text
    assert "sam" in text and "gpt-4o-mini" in text and "\t" not in text


# delete


def test_delete_asks_first_and_keeps_the_agent_on_no(db_location):
    db = db_location
    create_sam(db)
    refused = run("delete", "sam", db=db, input="n\n")
    assert refused.exit_code == 1 and refused.stderr == "Nothing was deleted.\n"
    assert "Delete agent 'sam', its 0 messages and 0 passages?" in refused.stdout
    with open_db(db) as store:
        assert [s.name for s, _ in store.list_agents()] == ["sam"]
    accepted = run("delete", "sam", db=db, input="y\n")
    assert accepted.exit_code == 0 and "Deleted agent 'sam'." in accepted.stdout
    with open_db(db) as store:
        assert store.list_agents() == []


def test_delete_yes_keeps_blocks_shared_with_other_agents(db_location):
    db = db_location
    team = Block(label="team", value="Lead: Carol")
    Agent.create("sam", "gpt-4o-mini", blocks=[team], db=db).store.close()
    Agent.create("bob", "gpt-4o-mini", blocks=[team], db=db).store.close()
    result = run("delete", "sam", "--yes", db=db)
    assert result.stdout == "Deleted agent 'sam'.\n"
    assert blocks_of(db, "bob")["team"].value == "Lead: Carol"
    assert run("delete", "ghost", "--yes", db=db).stderr == "Error: no agent named 'ghost'\n"


# rename


def test_rename_keeps_memory_and_history(fake_llm, db_location):
    db = db_location
    create_sam(db, "--human", "Name: Alice")
    fake_llm.enqueue(say("Hello!"))
    assert run("send", "sam", "hi", db=db).exit_code == 0
    result = run("rename", "sam", "samantha", db=db)
    assert result.stdout == "Renamed agent 'sam' to 'samantha'.\n"
    assert run("send", "sam", "hi", db=db).stderr == "Error: no agent named 'sam'\n"
    fake_llm.enqueue(say("Still me."))
    assert run("send", "samantha", "are you there?", db=db).stdout == "Still me.\n"
    history = fake_llm.chat_requests[-1]["messages"]
    assert [m["content"] for m in history if m["role"] == "user"] == ["hi", "are you there?"]
    assert "Name: Alice" in history[0]["content"]
    assert fake_llm.rejections == []


@pytest.mark.parametrize(
    ("new", "error"),
    [
        ("bob", "Error: an agent named 'bob' already exists\n"),
        ("no spaces", "Error: cannot rename agent to 'no spaces': an agent name"),
        ("", "Error: cannot rename agent to '': an agent name"),
    ],
)
def test_rename_refuses_a_taken_or_invalid_name(db, new, error):
    create_sam(db)
    run("create", "bob", "--model", "llama3.2", db=db)
    result = run("rename", "sam", new, db=db)
    assert result.exit_code == 1 and result.stderr.startswith(error)
    models = {s.name: s.llm.model for s, _ in Store(db).list_agents()}
    assert models == {"bob": "llama3.2", "sam": "gpt-4o-mini"}


def test_rename_of_a_missing_agent(db):
    assert run("rename", "ghost", "spirit", db=db).stderr == "Error: no agent named 'ghost'\n"


# show


def test_show_summarises_the_agent(db_location):
    db = db_location
    team = Block(label="team", value="Lead: Carol", limit=100, read_only=True)
    Agent.create(
        "sam",
        "llama3.2",
        blocks=[Block(label="persona", value="I am Sam."), team],
        embedder="local",
        db=db,
    ).store.close()
    Agent.create("bob", "llama3.2", blocks=[team], db=db).store.close()
    with open_db(db) as store:
        state = store.get_agent("sam")
        state.tool_names = ["convert_currency"]
        store.save_agent(state)
    shown = run("show", "sam", db=db).stdout
    for expected in (
        "name: sam\nmodel: llama3.2\n",
        "context window: 8,192 tokens (from the model's name)",
        "tool_choice=required",
        "max_chained_steps=10",
        "embedder: local",
        "messages: 0\narchival passages: 0\n",
        "last active: ",
        "tools: send_message, core_memory_append",
        "custom tools: convert_currency (give them to Agent.load)",
        "blocks:\n  persona: 9/5000 chars\n  team: 11/100 chars  (read-only, shared with bob)\n",
    ):
        assert expected in shown
    assert run("show", "ghost", db=db).stderr == "Error: no agent named 'ghost'\n"


def test_create_multi_agent_with_tags_then_send_through_another_agent(db_location, fake_llm):
    """`create --multi-agent --tag`: stored, shown, and at work in `send`."""
    db = db_location
    multi = ["send_message_to_agent_and_wait_for_reply", "send_message_to_agents_matching_tags"]
    create_sam(db, "--multi-agent", "--tag", "team", "--tag", " eu ")
    assert run("create", "bob", "-m", "gpt-4o-mini", "--tag", "team", db=db).exit_code == 0
    with open_db(db) as store:
        sam = store.get_agent("sam")
        assert sam.tool_names == multi and sam.settings.tags == ["team", "eu"]
        assert store.get_agent("bob").tool_names == []
    shown = run("show", "sam", db=db).stdout
    assert f"archival_memory_search, {', '.join(multi)}\n" in shown
    assert "tags: team, eu\n" in shown and "custom tools" not in shown
    blank = run("create", "cid", "-m", "gpt-4o-mini", "--tag", " ", db=db)
    assert (blank.exit_code, blank.stderr) == (1, "Error: a tag is 1-100 characters, not blank\n")
    ask = call(multi[0], message="Any news?", other_agent_id="bob", request_heartbeat=True)
    fake_llm.enqueue(reply(tool_calls=[ask]), say("No news."), say("Bob has no news."))
    assert run("send", "sam", "Ask bob for news", db=db).stdout == "Bob has no news.\n"
    with open_db(db) as store:
        said = store.messages_from(store.get_agent("bob").id, 0)
    assert said[0].content.endswith("\nAny news?") and said[1].tool_calls[0].name == "send_message"


# blocks


def test_blocks_lists_prints_and_sets(db_location, tmp_path):
    db = db_location
    create_sam(db, "--persona", "I am Sam.", "--human", "", "--block-limit", "human=40")
    assert run("blocks", "sam", db=db).stdout == "persona\t9\t5000\t\nhuman\t0\t40\t\n"
    assert run("blocks", "sam", "persona", db=db).stdout == "I am Sam.\n"
    result = run("blocks", "sam", "human", "--set", "Name: Alice", db=db)
    assert result.stdout == "Saved block 'human' (11/40 chars).\n"
    (tmp_path / "human.md").write_text("Name: Alice\nLikes: tea\n")
    run("blocks", "sam", "human", "--set", f"@{tmp_path / 'human.md'}", db=db)
    assert blocks_of(db, "sam")["human"].value == "Name: Alice\nLikes: tea"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["human", "--set", "x" * 41], "Error: block 'human' would hold 41 characters, over its "),
        (["human", "--set", "@nowhere.md"], "Error: cannot read @nowhere.md: no such file\n"),
        (["ghost", "--set", "x"], "Error: agent 'sam' has no block labelled 'ghost'\n"),
        (["ghost"], "Error: agent 'sam' has no block labelled 'ghost'\n"),
        (["human", "--set", "x", "--edit"], "Error: give --set or --edit, not both\n"),
        (["--set", "x"], "Error: name the block to change: memgpt-lite blocks NAME LABEL"),
    ],
)
def test_bad_blocks_input_changes_nothing(db, args, error):
    create_sam(db, "--human", "Name: Alice", "--block-limit", "human=40")
    result = run("blocks", "sam", *args, db=db)
    assert result.exit_code == 1 and result.stderr.startswith(error)
    assert blocks_of(db, "sam")["human"].value == "Name: Alice"


def test_set_on_a_read_only_block_is_refused(db):
    Agent.create("sam", "m", blocks=[Block(label="rules", value="Be kind.", read_only=True)], db=db)
    result = run("blocks", "sam", "rules", "--set", "Be rude.", db=db)
    assert result.stderr == "Error: block 'rules' is read-only: it cannot be edited.\n"
    edited = run("blocks", "sam", "rules", "--edit", db=db)
    assert edited.stderr == "Error: block 'rules' is read-only: it cannot be edited\n"
    assert blocks_of(db, "sam")["rules"].value == "Be kind."


# the editor flow


def use_editor(monkeypatch, tmp_path: Path, body: str, variable: str = "EDITOR") -> None:
    """Point $EDITOR at a Python script whose body edits the file `path`."""
    script = tmp_path / "fake_editor.py"
    script.write_text(f"import sys, pathlib\npath = pathlib.Path(sys.argv[1])\n{body}\n")
    monkeypatch.setenv(variable, f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}")


def unsaved_files() -> list[Path]:
    folder = home_dir() / "unsaved"
    return sorted(folder.iterdir()) if folder.exists() else []


def test_edit_saves_the_edited_block(fake_llm, db, tmp_path, monkeypatch):
    create_sam(db, "--human", "Name: Alice")
    # Editors end the file with a newline; it does not end up in the block.
    use_editor(monkeypatch, tmp_path, "path.write_text(path.read_text() + '\\nLikes: tea\\n')")
    result = run("blocks", "sam", "human", "--edit", db=db)
    assert result.stdout == "Saved block 'human' (22/5000 chars).\n"
    assert blocks_of(db, "sam")["human"].value == "Name: Alice\nLikes: tea"
    fake_llm.enqueue(say("You like tea."))
    assert run("send", "sam", "what do I like?", db=db).stdout == "You like tea.\n"
    assert "Likes: tea" in fake_llm.chat_requests[-1]["messages"][0]["content"]
    assert fake_llm.rejections == []


def test_edit_without_changes_is_a_no_op(db, tmp_path, monkeypatch):
    create_sam(db, "--human", "Name: Alice")
    use_editor(monkeypatch, tmp_path, "path.write_text(path.read_text() + '\\n')")
    result = run("blocks", "sam", "human", "--edit", db=db)
    assert result.stdout == "Block 'human' is unchanged.\n"


def test_edit_over_the_limit_keeps_the_text(db, tmp_path, monkeypatch):
    create_sam(db, "--human", "Name: Alice", "--block-limit", "human=40")
    use_editor(monkeypatch, tmp_path, "path.write_text('Name: Alice\\n' + 'Loves tea. ' * 10)")
    result = run("blocks", "sam", "human", "--edit", db=db)
    assert result.exit_code == 1
    [kept] = unsaved_files()
    assert result.stderr == (
        "Error: block 'human' would hold 122 characters, over its limit of 40; nothing was "
        f"changed. Your text is in {kept}\n"
    )
    assert kept.read_text() == "Name: Alice\n" + "Loves tea. " * 10
    assert kept.name.startswith("sam-human-") and kept.suffix == ".md"
    assert blocks_of(db, "sam")["human"].value == "Name: Alice"


def test_edit_refuses_to_overwrite_a_change_made_meanwhile(db, tmp_path, monkeypatch):
    create_sam(db, "--human", "Name: Alice")
    # While the user types, the agent (another process) rewrites the block.
    body = (
        "import sqlite3\n"
        f"conn = sqlite3.connect({str(db)!r})\n"
        "conn.execute(\"UPDATE blocks SET value = 'Name: Alice Smith' WHERE label = 'human'\")\n"
        "conn.commit()\n"
        "path.write_text('Name: Al')"
    )
    use_editor(monkeypatch, tmp_path, body)
    result = run("blocks", "sam", "human", "--edit", db=db)
    assert result.exit_code == 1
    assert "was changed by someone else while you edited it" in result.stderr
    [kept] = unsaved_files()
    assert kept.read_text() == "Name: Al" and str(kept) in result.stderr
    assert blocks_of(db, "sam")["human"].value == "Name: Alice Smith"


def test_editor_failing_after_typing_keeps_the_text(db, tmp_path, monkeypatch):
    create_sam(db, "--human", "Name: Alice")
    use_editor(monkeypatch, tmp_path, "path.write_text('half typed')\nsys.exit(3)")
    result = run("blocks", "sam", "human", "--edit", db=db)
    [kept] = unsaved_files()
    assert result.stderr == (
        f"Error: the editor exited with status 3; nothing was changed; your text is in {kept}\n"
    )
    assert kept.read_text() == "half typed"
    assert blocks_of(db, "sam")["human"].value == "Name: Alice"


def test_editor_that_cannot_start(db, monkeypatch):
    create_sam(db)
    monkeypatch.setenv("EDITOR", "no-such-editor-anywhere --wait")
    monkeypatch.delenv("VISUAL", raising=False)
    result = run("blocks", "sam", "human", "--edit", db=db)
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: cannot start the editor 'no-such-editor-anywhere'")
    assert unsaved_files() == []


# Blocks SIGINT, says so, and writes its text only once a Ctrl-C has come.
EDITOR_WAITING_FOR_CTRL_C = """\
import pathlib, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
print("editor waits for Ctrl-C", flush=True)
if signal.sigtimedwait([signal.SIGINT], 20) is not None:
    pathlib.Path(sys.argv[1]).write_text("Name: Alice B.")
"""


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX-only")
def test_ctrl_c_in_the_editor_does_not_lose_the_edit(db, tmp_path):
    import pexpect

    create_sam(db, "--human", "Name: Alice")
    script = tmp_path / "editor.py"
    script.write_text(EDITOR_WAITING_FOR_CTRL_C)
    env = {k: v for k, v in os.environ.items() if k != "VISUAL"}
    env.update(EDITOR=f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}")
    env.update(PYTHONPATH=str(REPO), TERM="xterm")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "memgpt_lite", "--db", str(db), "blocks", "sam", "human", "--edit"],
        env=env,
        encoding="utf-8",
        timeout=20,
    )
    child.expect_exact("editor waits for Ctrl-C")
    child.sendintr()  # reaches the editor and memgpt-lite, as at a real terminal
    child.expect_exact("Saved block 'human' (14/5000 chars).")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert blocks_of(db, "sam")["human"].value == "Name: Alice B."


def test_edit_text_prefers_visual_and_keeps_newlines_it_was_given(tmp_path, monkeypatch):
    use_editor(monkeypatch, tmp_path, "path.write_text('from editor\\n')", "EDITOR")
    visual_dir = tmp_path / "visual"
    visual_dir.mkdir()
    use_editor(
        monkeypatch, visual_dir, "path.write_text(path.read_text().upper() + '\\n')", "VISUAL"
    )
    assert edit_text("draft") == "DRAFT"
    assert edit_text("draft\n") == "DRAFT\n\n"


def test_text_kept_from_an_edit_survives_a_home_that_is_a_file(db, tmp_path, monkeypatch, caplog):
    create_sam(db, "--human", "Name: Alice", "--block-limit", "human=40")
    home = tmp_path / "home-file"
    home.write_text("not a folder")
    monkeypatch.setenv("MEMGPT_LITE_HOME", str(home))
    use_editor(monkeypatch, tmp_path, "path.write_text('Name: Alice\\n' + 'Loves tea. ' * 10)")
    result = run("blocks", "sam", "human", "--edit", db=db)
    assert result.exit_code == 1
    [shown, error] = result.stderr.splitlines()  # the CLI shows warnings as one line
    [warning] = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warning.startswith(f"$MEMGPT_LITE_HOME ({home}) is a file, not a folder; unsaved text")
    assert shown == f"warning: {warning}"
    kept = Path(error.rsplit("Your text is in ", 1)[1])
    try:
        assert kept.read_text() == "Name: Alice\n" + "Loves tea. " * 10
    finally:
        kept.unlink()
