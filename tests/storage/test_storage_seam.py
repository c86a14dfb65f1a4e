"""The storage seam holds: outside the backends (`memgpt_lite/storage/sqlite/`
and `storage/postgres/`) and the core they share (`storage/core/`, the SQL
both dialects say alike), no module imports a database driver, writes SQL,
or reaches into a store's connection; neither backend uses the other's, and
the core uses neither. Everything else talks to `Storage`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from support.contract.base import new_agent
from support.paths import PACKAGE

import memgpt_lite
from memgpt_lite.errors import ConfigError
from memgpt_lite.storage.open import open_storage
from memgpt_lite.storage.protocol import Storage
from memgpt_lite.storage.sqlite.store import Store

SQLITE_BACKEND = PACKAGE / "storage" / "sqlite"
POSTGRES_BACKEND = PACKAGE / "storage" / "postgres"
CORE = PACKAGE / "storage" / "core"
SQLITE_MODULES = ("sqlite3", "sqlite_utils")
POSTGRES_MODULES = ("psycopg", "psycopg_pool", "pgvector")
DATABASE_MODULES = SQLITE_MODULES + POSTGRES_MODULES
# Statements as our SQL writes them: upper-case keywords.
SQL = re.compile(
    r"\bSELECT\b.*\bFROM\b|\bINSERT\s+(OR\s+[A-Z]+\s+)?INTO\b|\bUPDATE\s+\w+\s+SET\b"
    r"|\bDELETE\s+FROM\b|\b(CREATE|DROP|ALTER)\s+(TABLE|INDEX|TRIGGER|VIEW)\b|\bPRAGMA\b"
    r"|\bBEGIN(\s+(IMMEDIATE|DEFERRED|EXCLUSIVE))?\s*$|^\s*(COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b"
    r"|\bMATCH\s+\?",
    re.DOTALL,
)
# How code reaches into the SQLite store: its sqlite-utils Database and connection.
CONNECTION_ATTRIBUTES = ("db", "conn")


def problems_in(path: Path) -> list[str]:
    """Database imports, SQL in string literals, and `.db` / `.conn` access."""
    tree = ast.parse(path.read_text(), filename=str(path))
    where = path.relative_to(PACKAGE.parent)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [node.module or ""]
        else:
            modules = []
        for module in modules:
            if module.split(".")[0] in DATABASE_MODULES:
                found.append(f"{where}:{node.lineno}: imports {module}")
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and SQL.search(node.value)
        ):
            found.append(f"{where}:{node.lineno}: SQL {node.value[:60]!r}")
        if isinstance(node, ast.Attribute) and node.attr in CONNECTION_ATTRIBUTES:
            found.append(f"{where}:{node.lineno}: .{node.attr}")
    return found


def test_nothing_outside_the_backends_uses_a_database():
    backends = (SQLITE_BACKEND, POSTGRES_BACKEND, CORE)
    outside = [
        p for p in sorted(PACKAGE.rglob("*.py")) if not any(b in p.parents for b in backends)
    ]
    assert len(outside) > 40  # the whole package but the backends was scanned
    assert [problem for path in outside for problem in problems_in(path)] == []


@pytest.mark.parametrize(
    ("backend", "foreign"),
    [
        (SQLITE_BACKEND, (*POSTGRES_MODULES, "memgpt_lite.storage.postgres")),
        (POSTGRES_BACKEND, (*SQLITE_MODULES, "memgpt_lite.storage.sqlite")),
    ],
    ids=["sqlite", "postgres"],
)
def test_a_backend_imports_nothing_of_the_other(backend: Path, foreign: tuple[str, ...]):
    imported = []
    for path in sorted(backend.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                imported.append(node.module or "")
    assert any(name.startswith(("sqlite3", "psycopg")) for name in imported)  # it was read
    assert [name for name in imported if name.startswith(foreign)] == []


def imports_of(folder: Path) -> list[str]:
    imported = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                imported.append(node.module or "")
    return imported


def test_the_core_imports_no_driver_and_no_backend():
    """What the core holds is said alike by both dialects: a backend brings
    its driver. Nor does storage reach up into memory, the loop, tools or
    the agent."""
    imported = imports_of(CORE)
    assert any(name.startswith("memgpt_lite.storage.protocol") for name in imported)  # read
    foreign = (*DATABASE_MODULES, "memgpt_lite.storage.sqlite", "memgpt_lite.storage.postgres")
    assert [name for name in imported if name.startswith(foreign)] == []
    above = [f"memgpt_lite.{part}" for part in ("memory", "loop", "tools", "agent")]
    reaching_up = [n for n in imported for a in above if n == a or n.startswith(a + ".")]
    assert reaching_up == []


def test_the_scan_finds_what_the_backend_does():
    """The check above could pass by finding nothing anywhere: it finds each
    kind of problem in the backend itself."""
    found = " ".join(
        problem for path in SQLITE_BACKEND.rglob("*.py") for problem in problems_in(path)
    )
    for sign in ("imports sqlite3", "imports sqlite_utils", "SQL 'SELECT", "SQL 'INSERT", ".db"):
        assert sign in found, sign
    for statement in ("UPDATE agents SET x = 1", "DELETE FROM t", "PRAGMA page_count", "COMMIT"):
        assert SQL.search(statement), statement
    for prose in ("Select a model from the list", "begin the step", "the update set is empty"):
        assert not SQL.search(prose), prose


def test_open_storage_opens_sqlite_for_a_path_and_refuses_unknown_urls(tmp_path):
    path = tmp_path / "a.db"
    with open_storage(path) as store:
        assert isinstance(store, Store) and isinstance(store, Storage)
        assert store.path == path and store.busy_timeout_seconds == 30.0
        new_agent(store)
    with open_storage(f"sqlite:///{path}", busy_timeout_seconds=2.0) as store:
        assert store.get_agent("sam").name == "sam" and store.busy_timeout_seconds == 2.0
    with pytest.raises(ConfigError) as caught:
        open_storage("mysql://sam:secret@db.example/agents")
    assert str(caught.value) == (
        "no storage backend serves mysql:// URLs; give the path of a SQLite database file "
        "or a postgresql:// URL"
    )
    with pytest.raises(ConfigError, match="sqlite:///path"):
        open_storage("sqlite://a.db")


def test_the_public_names_name_the_seam():
    assert memgpt_lite.Storage is Storage and memgpt_lite.open_storage is open_storage
    assert memgpt_lite.Store is Store
