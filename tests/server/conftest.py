"""Fixtures of the tests that drive the server with Letta's client: a
database of the test's own, the app on it served by uvicorn in a thread
against the fake model, and alice's client. A test module that needs
another setup defines its own fixture of the same name, which wins."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from letta_client import Letta
from support.serving import live_server, new_key

from memgpt_lite.testing.server import FakeOpenAIServer


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "letta.db")


@pytest.fixture
def server(db: str, fake_llm: FakeOpenAIServer) -> Iterator[str]:
    with live_server(db) as url:
        yield url


@pytest.fixture
def client(db: str, server: str) -> Letta:
    """Alice's Letta client, with retries off so each test sees every answer."""
    return Letta(base_url=server, api_key=new_key(db, "alice"), max_retries=0)
