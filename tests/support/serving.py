"""The server under test: the real app on uvicorn in a thread, on a free
port of 127.0.0.1, for clients that need a socket (letta-client, openai,
raw SSE); or the real `memgpt-lite serve` process (`start_serve`), as users
start it. In-process tests use `fastapi.testclient.TestClient` instead."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import uvicorn

from memgpt_lite.agent.keys import create_key
from memgpt_lite.server.app import create_app
from memgpt_lite.storage.open import open_storage
from memgpt_lite.testing import FakeOpenAIServer
from support.paths import REPO


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def new_key(db: str, user: str, *, admin: bool = False) -> str:
    """A fresh API key of `user` in the database at `db` (an admin key with `admin`)."""
    with open_storage(db) as store:
        return create_key(store, user, admin=admin)[1]


@contextmanager
def live_server(db: str, *, auth: bool = True, **options: object) -> Iterator[str]:
    """The app on `db`, served by uvicorn in a thread; yields its base URL."""
    app = create_app(db, auth=auth, **options)  # type: ignore[arg-type]
    config = uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{config.port}"
    finally:
        server.should_exit = True
        thread.join(30)


def cli(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memgpt_lite", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def environment(model: FakeOpenAIServer, home: Path) -> dict[str, str]:
    """The server's environment: ours without any real endpoint or database,
    the fake model's URL and key, a home folder of its own, this tree. The
    test PostgreSQL server's vector setting is kept: where its pgvector
    cannot build an index, building one would crash it for every test."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MEMGPT_LITE_"))}
    if "MEMGPT_LITE_PG_VECTORS" in os.environ:
        env["MEMGPT_LITE_PG_VECTORS"] = os.environ["MEMGPT_LITE_PG_VECTORS"]
    env.update(
        OPENAI_BASE_URL=model.base_url,
        OPENAI_API_KEY=model.api_key,
        MEMGPT_LITE_HOME=str(home),
        PYTHONPATH=str(REPO),
    )
    return env


def start_serve(
    env: dict[str, str], db: Path | str, log: Path, *options: str
) -> tuple[subprocess.Popen[bytes], str]:
    """`memgpt-lite serve` on `db` and a free port, its output to `log`; its
    process and URL once /health answers."""
    port = free_port()
    command = [sys.executable, "-m", "memgpt_lite", "serve", "--port", str(port), "--db", str(db)]
    command += options
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    # One client for every poll: a new one builds its TLS context each time,
    # CPU that the starting server, on the same cores, would otherwise get.
    with httpx.Client(timeout=1) as poller:
        while True:
            if process.poll() is not None:
                raise AssertionError(f"serve exited with {process.returncode}: {log.read_text()}")
            try:
                if poller.get(f"{url}/health").status_code == 200:
                    return process, url
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                process.kill()
                raise AssertionError("serve did not answer /health in 60 s")
            time.sleep(0.05)


def make_key(env: dict[str, str], db: Path | str, user: str) -> str:
    done = cli(env, "--db", str(db), "keys", "create", "--user", user)
    assert done.returncode == 0, done.stderr
    key = done.stdout.strip()
    assert key and "\n" not in key, f"keys create printed more than the key: {done.stdout!r}"
    return key
