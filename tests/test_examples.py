"""The examples run, against the fake server, so they cannot rot."""

import os
import subprocess
import sys
from pathlib import Path

from memgpt_lite.testing import call, reply

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_quickstart_runs_and_remembers(fake_llm):
    fake_llm.enqueue(
        reply(
            tool_calls=[
                call(
                    "core_memory_append",
                    label="human",
                    content="Name: Alice. Lives in Paris.",
                    request_heartbeat=True,
                )
            ]
        ),
        reply(tool_calls=[call("send_message", message="Nice to meet you, Alice!")]),
        reply(tool_calls=[call("current_time", timezone="Mars/Olympus", request_heartbeat=True)]),
        reply(tool_calls=[call("current_time", timezone="Europe/Paris", request_heartbeat=True)]),
        reply(tool_calls=[call("send_message", message="It is teatime in Paris.")]),
    )
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "quickstart.py")],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "quickstart: Nice to meet you, Alice!" in result.stdout
    assert "quickstart: It is teatime in Paris." in result.stdout
    assert result.stdout.rstrip().endswith("Name: Alice. Lives in Paris.")
    tool_results = [
        m["content"] for m in fake_llm.chat_requests[-1]["messages"] if m["role"] == "tool"
    ]
    assert "Error: unknown time zone 'Mars/Olympus'" in tool_results[-2]
    assert "CET" in tool_results[-1] or "CEST" in tool_results[-1]
    assert fake_llm.rejections == []
