"""benchmarks/server_load.py at a tiny size, so it cannot rot: its core
against the real `memgpt-lite serve` process, with a model that crosses one
reply and fails one step, which the benchmark must count; and its figures
(queueing, crossed replies, server-sent events) on made-up sends."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from support.paths import REPO

from memgpt_lite.testing import FakeOpenAIServer, error, say

sys.path.insert(0, str(REPO / "benchmarks"))

import server_load  # noqa: E402
from server_load import Load, Send  # noqa: E402

CROSSED = "p1-a0-c1"  # answered with another client's token
FAILED = "p0-a0-c1"  # answered with an error: the step fails, the send is a 502


def crossing_echo(body: dict[str, Any]) -> Any:
    """The benchmark's echo, except that it crosses one reply and fails one step."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    text = str(users[-1].get("content") or "") if users else ""
    if f"<{FAILED}>" in text:
        return error(400, "the model refuses this one")
    return say(f"You said: {text.replace(CROSSED, 'p0-a0-c0')}")


def test_the_load_against_the_serve_process_counts_crossed_replies_and_errors(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "load.db")
    key = server_load.make_key(db, server_load.USER)
    with FakeOpenAIServer() as model:
        model.responder = crossing_echo
        env = server_load.server_env(model.base_url, model.api_key, str(tmp_path / "home"))
        with server_load.serve_process(db, env) as server:
            agents = server_load.create_agents(server.url, key, 1, stream=False)
            plain = asyncio.run(server_load.run_load(server, key, agents, 2, 2, stream=False))
            stored = server_load.stored_crossings(db, plain)
            server_load.delete_agents(server.url, key, agents)
            agents = server_load.create_agents(server.url, key, 1, stream=True)
            streamed = asyncio.run(server_load.run_load(server, key, agents, 2, 2, stream=True))
    for load in (plain, streamed):
        found = server_load.figures(load)
        assert found.sends == 4
        assert found.errors == 1, [s.error for s in load.sends]
        assert found.crossed == 1
        assert found.requests_per_second > 0
        assert found.endpoint_ms[0] > 0
        assert found.server_cpu_ms > 0
    failed = [s for s in plain.sends if not s.ok]
    assert [s.token for s in failed] == [FAILED]
    assert failed[0].error.startswith("502")
    assert server_load.figures(streamed).first_event_ms is not None
    assert [s.token for s in streamed.sends if not s.ok] == [FAILED]
    # What was stored: the crossed reply is there too, nothing lost (the warm-up counted).
    assert stored["crossed"] == 1
    assert stored["lost"] == 0 and stored["unexpected"] == 0
    assert stored["replies"] == 4  # three of the load's four sends, and the warm-up


def send(agent: str, started: float, ended: float, *, ok: bool = True) -> Send:
    return Send(0, agent, "p0-a0-c0", started, ended, ok=ok, llm_seconds=0.05)


def test_queueing_is_the_wait_for_the_send_ahead_on_the_same_agent() -> None:
    sends = [
        send("a", 0.0, 1.0),
        send("a", 0.2, 1.5),  # waits for the first until 1.0
        send("b", 0.3, 0.6),  # another agent: no wait
        send("a", 1.1, 1.6),  # starts after the first ended, waits for the second until 1.5
        send("b", 0.7, 0.8),  # started after the other b ended
    ]
    waits = server_load.queued_seconds(sends)
    assert waits == pytest.approx({0: 0.0, 1: 0.8, 2: 0.0, 3: 0.4, 4: 0.0})
    found = server_load.figures(Load(sends, seconds=2.0))
    assert found.requests_per_second == 2.5
    assert found.queued_ms[0] == pytest.approx(0.0)
    assert found.errors == 0


def test_a_reply_carries_only_its_own_token() -> None:
    assert server_load.replies_carry(["You said: Message <p0-a1-c2>: hi"], "p0-a1-c2")
    assert not server_load.replies_carry(["You said: Message <p1-a1-c2>: hi"], "p0-a1-c2")
    assert not server_load.replies_carry([], "p0-a1-c2")
    assert not server_load.replies_carry(["<p0-a1-c2>", "<p1-a1-c2>"], "p0-a1-c2")


def test_server_sent_events_are_parsed_by_event_and_data() -> None:
    lines = [
        "event: step_started",
        'data: {"type": "step_started"}',
        "",
        "event: step_finished",
        'data: {"type": "step_finished",',
        'data:  "result": {}}',
        "",
    ]
    events = server_load.parse_sse(lines)
    assert [kind for kind, _ in events] == ["step_started", "step_finished"]
    assert events[1][1] == {"type": "step_finished", "result": {}}
