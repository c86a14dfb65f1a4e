"""A run left open by a server that was stopped mid-step (nobody renews
it) is ended as abandoned when a server starts on the database; a run its
server still renews is not. Its kept stream ends with its stop reason."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from letta_client import Letta

from memgpt_lite.models import AgentState, Block, LLMConfig, utcnow
from memgpt_lite.server.live_runs import ABANDONED
from memgpt_lite.storage.open import open_storage
from memgpt_lite.storage.protocols.runs import Run

LONG_AGO = utcnow() - timedelta(minutes=10)
STALE = Run(id="run-stale", owner="alice", agent_id="", status="running", created_at=LONG_AGO)
KEPT = Run(
    id="run-kept",
    owner="alice",
    agent_id="",
    status="running",
    created_at=LONG_AGO,
    background=True,
)
RENEWED_ID = "run-renewed"


@pytest.fixture
def db(tmp_path: Path) -> str:
    """A database a stopped server left: runs still open, one renewed just now."""
    path = str(tmp_path / "letta.db")
    with open_storage(path) as store:
        agent = AgentState(name="sam", owner="alice", llm=LLMConfig(model="fake-model"), system="s")
        store.create_agent(agent, [Block(label="persona", value="p")])
        renewed = Run(id=RENEWED_ID, owner="alice", agent_id=agent.id, status="running")
        for run in (STALE, KEPT, renewed):  # the last just now
            store.save_run(run.model_copy(update={"agent_id": agent.id}))
        thought = {"message_type": "reasoning_message", "reasoning": "hm", "run_id": KEPT.id}
        thought |= {"id": "message-1", "date": LONG_AGO.isoformat(), "seq_id": 1}
        store.add_run_chunks(KEPT.id, [(1, json.dumps(thought))])
    return path


def test_a_server_starting_ends_the_runs_no_server_renews(client: Letta) -> None:
    stale = client.runs.retrieve(STALE.id)
    assert (stale.status, stale.stop_reason, stale.metadata) == (
        "failed",
        "error",
        {"error": ABANDONED},
    )
    assert stale.completed_at is not None
    assert client.runs.retrieve(RENEWED_ID).status == "running"
    chunks = list(client.runs.messages.stream(KEPT.id))
    assert [(c.message_type, c.seq_id) for c in chunks] == [
        ("reasoning_message", 1),
        ("error_message", 2),
        ("stop_reason", 3),
    ]
    assert chunks[1].message == ABANDONED and chunks[2].stop_reason == "error"
