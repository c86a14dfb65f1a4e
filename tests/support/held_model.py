"""A fake model whose answers wait until a test lets them go, and the
polling of a Letta run until it ended: for the tests of Letta's runs."""

from __future__ import annotations

import threading
import time
from typing import Any

from letta_client import Letta

from memgpt_lite.testing.script import call, reply
from memgpt_lite.testing.server import FakeOpenAIServer

# How long a test waits for the server: a bound on a hang, not a measure.
POLL_LIMIT_SECONDS = 60


def ended(client: Letta, run_id: str) -> Any:
    """The run, polled until its step ended (`completed_at` set)."""
    deadline = time.monotonic() + POLL_LIMIT_SECONDS
    while (run := client.runs.retrieve(run_id)).completed_at is None:
        assert time.monotonic() < deadline, f"run {run_id} still {run.status}"
        time.sleep(0.02)
    return run


def save_then_reply() -> list[Any]:
    """Two answers: a call that asks to go on, then the reply."""
    return [
        reply(
            "Save it.",
            tool_calls=[call("archival_memory_insert", content="bees", request_heartbeat=True)],
        ),
        reply("Now answer.", tool_calls=[call("send_message", message="saved")]),
    ]


class Held:
    """A fake model whose answers wait, from the `at`th request on, until
    the test lets them go; `asked` is set when that request came."""

    def __init__(self, fake_llm: FakeOpenAIServer, answers: list[Any], at: int = 1) -> None:
        self.answers, self.at, self.count = answers, at, 0
        self.asked, self.release = threading.Event(), threading.Event()
        fake_llm.responder = self

    def __call__(self, body: dict[str, Any]) -> Any:
        self.count += 1
        if self.count >= self.at:
            self.asked.set()
            self.release.wait(POLL_LIMIT_SECONDS)
        return self.answers.pop(0)
