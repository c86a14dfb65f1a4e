"""The server under test: the real app on uvicorn in a thread, on a free
port of 127.0.0.1, for clients that need a socket (letta-client, openai,
raw SSE). In-process tests use `fastapi.testclient.TestClient` instead."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from memgpt_lite.agent.keys import create_key
from memgpt_lite.server.app import create_app
from memgpt_lite.storage.open import open_storage


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
