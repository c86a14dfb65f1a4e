"""What both storage backends say alike lives once, in storage/core/: at most
MAX_SHARED lines of storage/sqlite/ also stand in storage/postgres/.

A line counts when its normalised text (stripped, white space collapsed,
`%s` read as `?`) stands anywhere in the other backend. Blank lines,
comments, import statements (all their lines), lines of punctuation alone
and docstring delimiters do not count: they say nothing of their own.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from support.paths import PACKAGE

STORAGE = PACKAGE / "storage"
MAX_SHARED = 100
_PUNCTUATION = re.compile(r"[\s()\[\]{},:;.]*")
_DELIMITERS = {'"""', "'''"}


def normalised_lines(folder: Path) -> list[tuple[str, str]]:
    """(file name, normalised text) of every line of every .py file under
    `folder` that counts."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        imports: set[int] = set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import | ast.ImportFrom):
                imports.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        for number, line in enumerate(source.splitlines(), start=1):
            text = " ".join(line.split()).replace("%s", "?")
            if (
                number in imports
                or not text
                or text.startswith("#")
                or _PUNCTUATION.fullmatch(text)
                or text in _DELIMITERS
            ):
                continue
            found.append((path.name, text))
    return found


def shared_lines(first: Path, second: Path) -> list[tuple[str, str]]:
    """The counted lines of `first` whose text stands anywhere in `second`."""
    elsewhere = {text for _, text in normalised_lines(second)}
    return [(name, text) for name, text in normalised_lines(first) if text in elsewhere]


SQLITE_SAMPLE = """\
\"\"\"A docstring line both have.\"\"\"
import os
from typing import (
    Any,
)


# a comment both have
def read(self):
    \"\"\"
    Reads.
    \"\"\"
    row = self.db.execute("SELECT 1 FROM t WHERE id = ?", [id])
    return (
        row
    )
"""
POSTGRES_SAMPLE = """\
\"\"\"A docstring line both have.\"\"\"
import os

Any = (
    Any,
)


# a comment both have
def read(self):
    \"\"\"
    Reads.
    \"\"\"
    row  =  self.db.execute("SELECT 1 FROM t WHERE id = %s", [id])
    return row


row
"""


def test_the_measure_counts_what_both_trees_say_alike(tmp_path):
    sqlite, postgres = tmp_path / "sqlite", tmp_path / "postgres"
    (sqlite / "inner").mkdir(parents=True)
    postgres.mkdir()
    (sqlite / "store.py").write_text(SQLITE_SAMPLE)
    (sqlite / "inner" / "more.py").write_text("def read(self):\n    return 1\n")
    (postgres / "store.py").write_text(POSTGRES_SAMPLE)
    assert shared_lines(sqlite, postgres) == [
        ("more.py", "def read(self):"),  # each line of the first tree counts, repeats too
        ("store.py", '"""A docstring line both have."""'),
        ("store.py", "def read(self):"),
        ("store.py", "Reads."),
        ("store.py", 'row = self.db.execute("SELECT 1 FROM t WHERE id = ?", [id])'),
        ("store.py", "row"),
    ]
    # Not the import's `Any,` of the first tree; the other way round, a line
    # of code is counted wherever the first tree has the same text.
    assert ("store.py", "Any,") not in shared_lines(postgres, sqlite)
    assert ("store.py", "row") in shared_lines(postgres, sqlite)
    assert shared_lines(sqlite, tmp_path / "nothing") == []


def test_the_backends_share_at_most_a_hundred_lines():
    found = shared_lines(STORAGE / "sqlite", STORAGE / "postgres")
    assert len(normalised_lines(STORAGE / "sqlite")) > 500  # the backend was read
    listing = "\n".join(f"{name}: {text}" for name, text in found)
    print(f"{len(found)} lines of storage/sqlite/ also stand in storage/postgres/")
    assert len(found) <= MAX_SHARED, f"{len(found)} lines said twice:\n{listing}"
