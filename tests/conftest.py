"""Shared fixtures: no test may reach a real model or the network, and each test
gets its own home folder and, on request, a scripted fake OpenAI server."""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.backends import is_postgres
from support.browser import install_in_background
from support.paths import REPO
from support.postgres_server import TEST_PG_ENV, TestServer
from support.turns import DESCRIPTION, alone_first, turn

from memgpt_lite.testing import FakeOpenAIServer

# Bytecode is cached for this run and the processes it starts, even where
# $PYTHONDONTWRITEBYTECODE is set (CI's machine sets it): otherwise each pytest
# worker rewrote every test module's asserts again (collecting took 9.8 s of
# CPU instead of 4.5) and every `python -m memgpt_lite` the tests start
# compiled the package again. It is only a cache; git ignores __pycache__/.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Nothing listens on the discard port, so a request that escaped our fakes
# fails at once instead of reaching OpenAI with a developer's real key.
UNREACHABLE_BASE_URL = "http://127.0.0.1:9/v1"
_OPENAI_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_ORGANIZATION",
    "OPENAI_PROJECT_ID",
)


def _is_local(family: int, address: Any) -> bool:
    """True for Unix sockets and loopback IPv4/IPv6 addresses."""
    if family == socket.AF_UNIX:
        return True
    if family not in (socket.AF_INET, socket.AF_INET6) or not isinstance(address, tuple):
        return False
    host = str(address[0])
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])  # drop an IPv6 scope id
    except ValueError:
        return False  # a host name: resolving it could already leave the machine
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _test_pg_addresses() -> set[tuple[str, int]]:
    """The addresses of the PostgreSQL server $MEMGPT_LITE_TEST_PG names, if
    any: the one remote host the tests may reach."""
    url = os.environ.get(TEST_PG_ENV)
    if not url:
        return set()
    import psycopg.conninfo

    info = psycopg.conninfo.conninfo_to_dict(url)
    host, port = str(info.get("host") or ""), int(info.get("port") or 5432)
    if not host or host.startswith("/"):
        return set()
    found = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    return {(str(a[4][0]), int(a[4][1])) for a in found}


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than there are cores. Many tests spend
    much of their time waiting on the processes they start (servers, the
    command line, a browser), so a worker more keeps the cores busy: on 2
    cores the whole suite took 299 s instead of about 335."""
    return (os.cpu_count() or 1) + 1


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", DESCRIPTION)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Install the web app tests' browser, if it is missing, while the other
    tests run (support/browser.py): in the one process that starts the run,
    not in each pytest-xdist worker."""
    config = session.config
    if not hasattr(config, "workerinput"):
        install_in_background(config.args, config.rootpath)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that run alone first, so that one worker runs them all, one
    after the other (see support/turns.py)."""
    alone_first(items)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Each test in its turn: alone if marked so (see support/turns.py)."""
    with turn(item, nextitem):
        yield


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Block real model requests and non-loopback connections; isolate state."""
    for name in _OPENAI_ENV:
        monkeypatch.delenv(name, raising=False)
    # A default model from the shell would change what agents get (and what
    # Letta's hosted names map to on the server).
    monkeypatch.delenv("MEMGPT_LITE_MODEL", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", UNREACHABLE_BASE_URL)
    monkeypatch.setenv("MEMGPT_LITE_HOME", str(tmp_path / "memgpt_home"))

    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    allowed = _test_pg_addresses()

    def check(sock: socket.socket, address: Any) -> None:
        if not _is_local(sock.family, address) and address[:2] not in allowed:
            raise RuntimeError(f"network access blocked in tests: {address!r}")

    def connect(self: socket.socket, address: Any) -> None:
        check(self, address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        check(self, address)
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)


@pytest.fixture(scope="session")
def _vocabularies() -> None:
    """Both token vocabularies, built once per test process. The fake server
    counts every request's tokens before it answers, and building a
    vocabulary the first time takes about 0.3 s: a test of what arrives
    within a sub-second limit must not depend on whether an earlier test in
    its process (an xdist worker's) happened to build it already."""
    from memgpt_lite.llm.tokens import get_encoding

    for name in ("o200k_base", "cl100k_base"):
        get_encoding(name)


@pytest.fixture
def fake_llm(
    _isolated: None, _vocabularies: None, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeOpenAIServer]:
    """A started fake OpenAI server that code under test finds through the env."""
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", server.api_key)
        yield server


@pytest.fixture
def chat_env(fake_llm: FakeOpenAIServer) -> dict[str, str]:
    """The environment of a chat (or send) process on a pseudo-terminal: the
    fake server (through `fake_llm`'s variables), this source tree, a colour
    terminal unless a test says otherwise."""
    env = {k: v for k, v in os.environ.items() if k not in ("VISUAL", "EDITOR", "FORCE_COLOR")}
    env.update(PYTHONPATH=str(REPO), TERM="xterm", COLUMNS="200", LINES="50")
    env.pop("NO_COLOR", None)
    return env


@pytest.fixture(scope="session")
def pg_server() -> Iterator[TestServer]:
    """A PostgreSQL server for the session (see support/postgres_server.py)."""
    server = TestServer()
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server: TestServer) -> Iterator[str]:
    """The URL of a fresh, empty PostgreSQL database of this test's own."""
    url = pg_server.new_database()
    yield url
    pg_server.drop(url)


@pytest.fixture(params=["sqlite", "postgres"])
def db_location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a test's database is, once per backend: a SQLite file, or a
    fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "memgpt_lite.db")
    return request.getfixturevalue("pg_url")


@pytest.fixture
def another_db_location(
    request: pytest.FixtureRequest, db_location: str, tmp_path: Path
) -> Iterator[str]:
    """A second, empty database of `db_location`'s backend (to import into, say)."""
    if not is_postgres(db_location):
        yield str(tmp_path / "another.db")
        return
    server: TestServer = request.getfixturevalue("pg_server")
    url = server.new_database()
    yield url
    server.drop(url)
