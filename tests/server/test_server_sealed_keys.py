"""An agent's own API key, given over HTTP, sealed at rest with the server
secret (storage/core/sealed_keys.py): the database never holds it, the
command line of the same home sends with it, and a process without the
secret says so in one line and loses nothing."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from fastapi.testclient import TestClient
from support.paths import REPO
from support.serving import cli, new_key

from memgpt_lite.server.app import create_app
from memgpt_lite.testing.script import say
from memgpt_lite.testing.server import FakeOpenAIServer

KEY = "sk-their-own-key-42"


def test_a_key_given_over_http_is_sealed_and_the_cli_still_uses_it(
    tmp_path: Path, fake_llm: FakeOpenAIServer
) -> None:
    db = str(tmp_path / "server.db")
    headers = {"Authorization": f"Bearer {new_key(db, 'alice')}"}
    with (
        FakeOpenAIServer(api_key=KEY) as theirs,
        TestClient(create_app(db, allow_endpoints=[theirs.base_url]), headers=headers) as client,
    ):
        body = {"name": "sam", "model": "m", "base_url": theirs.base_url, "api_key": KEY}
        assert client.post("/api/agents", json=body).status_code == 201
        raw = Path(db).read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("server.db-*"))
        assert KEY.encode() not in raw
        conn = sqlite3.connect(db)
        [(llm,)] = conn.execute("SELECT llm FROM agents").fetchall()
        conn.close()
        assert KEY not in llm and '"api_key":"sealed:' in llm

        env = {**os.environ, "PYTHONPATH": str(REPO)}  # this test's home: the server's secret
        theirs.enqueue(say("with my own key"))
        sent = cli(env, "--db", db, "send", "sam", "hi")
        assert (sent.returncode, sent.stdout.strip()) == (0, "with my own key"), sent.stderr
        assert theirs.chat_requests and not theirs.rejections

        # Another home has no secret: one line, and the agent is as it was.
        elsewhere = {**env, "MEMGPT_LITE_HOME": str(tmp_path / "other-home")}
        failed = cli(elsewhere, "--db", db, "send", "sam", "hi again")
        assert failed.returncode != 0
        [line] = failed.stderr.strip().splitlines()
        assert "sealed with a secret this process does not have" in line
        assert "Traceback" not in failed.stderr and KEY not in failed.stderr
        theirs.enqueue(say("still mine"))
        again = client.post("/api/agents/sam/messages", json={"message": "and again"})
        assert again.json()["replies"] == ["still mine"]
