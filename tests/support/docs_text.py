"""The README and the pages of docs/ as tests read them: a page, one of its
sections, its code blocks, and the `memgpt-lite` commands in those blocks."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from support.paths import REPO

ROOT = REPO
README = ROOT / "README.md"
DOCS = ROOT / "docs"

# A fenced block: its indentation, its info string (the language) and its text.
_FENCE = re.compile(
    r"^(?P<indent> *)```(?P<lang>[\w-]*)\n(?P<body>.*?)^(?P=indent)```$", re.M | re.S
)
_HEADING = re.compile(r"^(#{1,6}) (.+)$", re.M)


def page(name: str) -> str:
    """A page of docs/ by its path there (`cli/agents.md`), or the README."""
    path = README if name == "README.md" else DOCS / name
    return path.read_text(encoding="utf-8")


def _headings_outside_code(text: str) -> list[re.Match[str]]:
    fenced = [(m.start(), m.end()) for m in _FENCE.finditer(text)]
    return [
        m
        for m in _HEADING.finditer(text)
        if not any(start <= m.start() < end for start, end in fenced)
    ]


def section(name: str, title: str) -> str:
    """The section of a page under the heading `title` (of any level), up to
    the next heading of the same level or a higher one."""
    text = page(name)
    headings = _headings_outside_code(text)
    found = [m for m in headings if m.group(2) == title]
    assert len(found) == 1, f"{name} has {len(found)} headings {title!r}"
    level = len(found[0].group(1))
    later = [m for m in headings if m.start() > found[0].start() and len(m.group(1)) <= level]
    return text[found[0].start() : later[0].start() if later else len(text)]


def code_blocks(text: str, lang: str = "") -> list[str]:
    """The text of every fenced block with this info string ("" for none),
    indented ones (inside a list item) included."""
    blocks = []
    for match in _FENCE.finditer(text):
        if match.group("lang") == lang:
            indent = len(match.group("indent"))
            blocks.append("\n".join(line[indent:] for line in match.group("body").splitlines()))
    return blocks


@dataclass(frozen=True)
class Command:
    """One `memgpt-lite` command line of a block, as a shell would split it."""

    line: str  # as written, continuation lines joined
    args: list[str]  # the words after `memgpt-lite`
    stdin_file: str | None  # `< FILE`
    assigned: bool  # `VAR=$(memgpt-lite ...)`: its output goes to a variable


def commands(block: str) -> list[Command]:
    """The `memgpt-lite ...` lines of a block, continuation lines joined and
    trailing comments dropped. A line that starts another program (`pip`,
    `git diff | ...`, a `$ ` transcript, chat input) is not ours and left out;
    what a `|` pipes our output into is left out too."""
    found = []
    for line in block.replace("\\\n", " ").splitlines():
        line = line.strip()
        assigned = re.match(r"^\w+=\$\((memgpt-lite .*)\)(\s+#.*)?$", line)
        source = assigned.group(1) if assigned else line
        if not source.startswith("memgpt-lite "):
            continue
        words = shlex.split(source, comments=True)
        if "|" in words:
            words = words[: words.index("|")]
        stdin_file = None
        if "<" in words:
            at = words.index("<")
            stdin_file = words[at + 1]
            words = words[:at] + words[at + 2 :]
        found.append(Command(line, words[1:], stdin_file, assigned is not None))
    return found


def section_commands(name: str, title: str) -> list[list[str]]:
    """The `memgpt-lite ...` lines of a section's first code block, each line
    one command (none may be anything else)."""
    blocks = code_blocks(section(name, title))
    assert blocks, f"no code block in {name} section {title!r}"
    lines = [line for line in blocks[0].replace("\\\n", " ").splitlines() if line.strip()]
    found = commands(blocks[0])
    assert len(found) == len(lines), f"{name} {title!r}: a line that is not a command"
    return [command.args for command in found]
