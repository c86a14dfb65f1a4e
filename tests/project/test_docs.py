"""The documentation: the README stays short and points at docs/, the MkDocs
site builds with no warning, and the `memgpt-lite` commands of the README
and of the docs' pages run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from support.docs_text import DOCS, README, ROOT, Command, code_blocks, commands, page

from memgpt_lite import Agent
from memgpt_lite.cli.main import cli
from memgpt_lite.testing import FakeOpenAIServer, call, reply, say

README_MAX_BYTES = 25_000
PAGES = sorted(str(path.relative_to(DOCS)) for path in DOCS.rglob("*.md"))


# The README


def test_the_readme_stays_short() -> None:
    assert len(README.read_bytes()) <= README_MAX_BYTES


def test_the_readme_links_to_every_docs_page() -> None:
    linked = set(re.findall(r"\]\(docs/([^)#]+\.md)(?:#[^)]*)?\)", page("README.md")))
    assert linked == set(PAGES)


def _slug(title: str) -> str:
    """The anchor GitHub and MkDocs give a heading made of plain words."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def test_the_readmes_links_lead_somewhere() -> None:
    text = page("README.md")
    anchors = {_slug(title) for title in re.findall(r"^#+ (.+)$", text, re.M)}
    for target in re.findall(r"\]\(([^)]+)\)", text):
        if target.startswith("#"):
            assert target[1:] in anchors, target
        elif "://" not in target:
            assert (ROOT / target.split("#")[0]).is_file(), target


# The site


def mkdocs_build(site_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        # Material's banner about its future is not about this site.
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )


def built_page(site: Path, name: str) -> Path:
    """Where MkDocs writes a page: a/b.md to a/b/index.html, a/index.md to
    a/index.html."""
    stem = Path(name).with_suffix("")
    return site / (stem.parent if stem.name == "index" else stem) / "index.html"


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    built = mkdocs_build(tmp_path / "site")
    assert built.returncode == 0, built.stdout + built.stderr
    assert "WARNING" not in built.stderr, built.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    for name in PAGES:  # every page is in the nav, so every page is built
        assert built_page(tmp_path / "site", name).is_file(), name


def test_the_site_links_no_web_fonts(tmp_path: Path) -> None:
    assert mkdocs_build(tmp_path / "site").returncode == 0
    html = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "fonts.googleapis.com" not in html and "fonts.gstatic.com" not in html


# The commands of the README and the docs, run as written


# Lines the test does not run, each with its reason. Every entry must still
# match a line of the docs, so that none outlives what it excuses.
NOT_RUN = {
    "postgresql://": "a PostgreSQL server of the reader's own; tests reach only loopback",
    "memgpt-lite serve": "runs until stopped; tests/server/test_serve_process.py starts it",
    "memgpt-lite ui": "runs until stopped; tests/webapp/test_ui_command.py starts it",
}

REMEMBER = "Remember that Beth's birthday is on 3 March"

# Lines that end with another status than 0, as the docs say.
EXIT_STATUS = {
    f'send sam "{REMEMBER}"': 5,  # an archival insert that waits for approval
}

# Files and folders the docs' commands read, as a reader would have them.
FILES = {
    "sam.md": "I am Sam.",
    "notes.md": "Due: May",
    "me.md": "Alice",
    "notes/bees.txt": "The bees swarmed in May.",
    "weather.py": 'def weather(city: str) -> str:\n    """The weather."""\n    return "sun"',
}
LETTA_FILE = "my_letta_agent.af"


def doc_responder(body: dict) -> object:
    """A model that answers every kind of request the commands make: the
    summary, a reflection, a message asking to remember (an archival insert,
    which may wait for approval), and anything else with a short reply."""
    tools = [tool["function"]["name"] for tool in body.get("tools", [])]
    last = body["messages"][-1]
    if not tools:
        return reply(content="The user introduced themselves.")  # a summary
    if tools == ["record_reflection"]:
        return reply(tool_calls=[call("record_reflection", facts=[{"text": "Alice keeps bees."}])])
    if last["role"] == "user" and "Remember" in str(last["content"]):
        insert = call(
            "archival_memory_insert", content="Beth's birthday: 3 March", request_heartbeat=True
        )
        return reply(tool_calls=[insert])
    return say("Noted.")


def _run(args: list[str], input: str | None = None) -> Result:
    return CliRunner().invoke(cli, args, input=input, catch_exceptions=False)


def _newest_passage_id() -> str:
    passages, _ = Agent.load("sam").archival.list(limit=1)
    return passages[0].id


def _newest_key_id() -> str:
    listed = _run(["keys", "list"])
    return re.findall(r"key-[0-9a-f]+", listed.output)[-1]


# Placeholders of the docs, and what stands for them when a line runs.
PLACEHOLDERS: dict[str, Callable[[], str]] = {
    "PASSAGE_ID": _newest_passage_id,
    "key-4f2a...": _newest_key_id,
}


def _history_for_sam() -> None:
    """What the docs' lines about sam assume: two exchanges, a change of its
    human block, and a passage."""
    for text in ("Hi, I'm Alice", "I keep bees"):
        assert _run(["send", "sam", text]).exit_code == 0
    assert _run(["blocks", "sam", "human", "--set", "Name: Alice"]).exit_code == 0
    assert _run(["archival", "sam", "insert", "Alice lives in Leeds."]).exit_code == 0


def _letta_file(path: Path) -> None:
    """An agent file in Letta's layout, as `export --format letta` writes it."""
    assert _run(["create", "bee", "--model", "gpt-4o-mini"]).exit_code == 0
    assert _run(["export", "bee", "--format", "letta", "-o", str(path)]).exit_code == 0
    assert _run(["delete", "bee", "--yes"]).exit_code == 0


def _with_placeholders(command: Command) -> list[str]:
    return [PLACEHOLDERS[word]() if word in PLACEHOLDERS else word for word in command.args]


def documented_blocks() -> Iterator[tuple[str, int, str]]:
    for name in ["README.md", *PAGES]:
        for index, block in enumerate(code_blocks(page(name))):
            if commands(block):
                yield name, index, block


BLOCKS = list(documented_blocks())


def test_every_not_run_entry_still_excuses_a_line() -> None:
    lines = [command.line for _, _, block in BLOCKS for command in commands(block)]
    for pattern in [*NOT_RUN, *EXIT_STATUS]:
        assert any(pattern in line for line in lines), pattern


def test_the_cli_pages_have_commands_to_run() -> None:
    pages = {name for name, _, _ in BLOCKS}
    cli_pages = {"README.md", "getting-started/index.md", "getting-started/configuration.md"}
    cli_pages |= {"cli/chat.md", "cli/agents.md", "cli/scripting.md", "cli/export-import.md"}
    assert cli_pages <= pages, cli_pages - pages


@pytest.mark.parametrize(
    ("name", "index", "block"),
    BLOCKS,
    ids=[f"{name}#{index}" for name, index, _ in BLOCKS],
)
def test_documented_commands_run_as_written(
    name: str,
    index: int,
    block: str,
    fake_llm: FakeOpenAIServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each block runs in a fresh home, line after line, against the fake
    server, as a reader would type it; sam exists (made by the block, or
    before it) and has talked a little, as the lines about it assume."""
    monkeypatch.chdir(tmp_path)
    # The programs installed beside memgpt-lite, as a reader's PATH has them:
    # mcp-server-time, the MCP server the MCP page adds.
    installed = Path(sys.executable).parent
    monkeypatch.setenv("PATH", f"{installed}{os.pathsep}{os.environ.get('PATH', '')}")
    for file, text in FILES.items():
        (tmp_path / file).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / file).write_text(text + "\n")
    monkeypatch.setenv("VISUAL", "true")  # an editor that leaves the text as it is
    fake_llm.responder = doc_responder
    lines = commands(block)
    if any(LETTA_FILE in command.line for command in lines):
        _letta_file(tmp_path / LETTA_FILE)
    creates_sam = [c.args[:2] == ["create", "sam"] for c in lines]
    if not any(creates_sam):
        assert _run(["create", "sam", "--model", "gpt-4o-mini"]).exit_code == 0
        _history_for_sam()
    for command, creates in zip(lines, creates_sam, strict=True):
        if any(pattern in command.line for pattern in NOT_RUN):
            continue
        if command.args[:2] == ["deny", "sam"]:
            # The page shows approve and deny as the two answers to one wait:
            # deny gets a call of its own to answer.
            assert _run(["send", "sam", REMEMBER]).exit_code == 5
        stdin = (tmp_path / command.stdin_file).read_text() if command.stdin_file else ""
        if "delete" in command.args:
            stdin = "y\n"  # its question: delete it?
        result = _run(_with_placeholders(command), input=stdin)
        expected = next((s for p, s in EXIT_STATUS.items() if p in command.line), 0)
        assert result.exit_code == expected, f"{command.line}\n{result.output}"
        assert "Traceback" not in result.output, command.line
        if creates:
            _history_for_sam()
