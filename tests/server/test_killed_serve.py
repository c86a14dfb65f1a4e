"""A real `memgpt-lite serve` killed (SIGKILL) during a streamed send, after
the step's tool calls were stored and before its reply: started again, the
server names the user's message unanswered and leaves it out of the next
request. On SQLite and PostgreSQL
(`db_location`). The model hangs on the step's second call, so the kill
lands there, never by timing."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import httpx
from support.serving import environment, make_key, start_serve

from memgpt_lite.testing import FakeOpenAIServer, call, hang, reply, say

MODEL = "gpt-4o-mini"


def wait_for(condition: Any, process: Any, what: str) -> None:
    """Wait (at most 60 s) until `condition()` holds, the process still running."""
    deadline = time.monotonic() + 60
    while not condition():
        assert process.poll() is None, f"the process exited before {what}"
        assert time.monotonic() < deadline, f"no {what} in 60 s"
        time.sleep(0.02)


def user_texts(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


def test_a_serve_killed_after_the_tool_calls_leaves_the_message_unanswered(
    tmp_path: Path, db_location: str
) -> None:
    with FakeOpenAIServer() as model:
        env = environment(model, tmp_path / "home")
        key = make_key(env, db_location, "alice")
        headers = {"Authorization": f"Bearer {key}"}
        process, url = start_serve(env, db_location, tmp_path / "serve.log")
        try:
            with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
                created = http.post("/api/agents", json={"name": "sam", "model": MODEL})
                assert created.status_code == 201, created.text
                model.enqueue(
                    reply(
                        "keep it",
                        [
                            call(
                                "core_memory_append",
                                label="human",
                                content="likes tea",
                                request_heartbeat=True,
                            )
                        ],
                    ),
                    hang(),
                )
                body = {"message": "I like tea", "stream": True}
                with http.stream("POST", "/api/agents/sam/messages", json=body) as response:
                    assert response.status_code == 200
                    wait_for(lambda: model.hanging == 1, process, "second model call")
                    process.send_signal(signal.SIGKILL)
                    process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)

        process, url = start_serve(env, db_location, tmp_path / "serve-again.log")
        try:
            with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
                listed = http.get("/api/agents/sam/unanswered")
                assert listed.status_code == 200, listed.text
                assert [m["content"] for m in listed.json()["messages"]] == ["I like tea"]
                model.enqueue(say("What else?"))
                sent = http.post("/api/agents/sam/messages", json={"message": "hello again"})
                assert sent.json()["replies"] == ["What else?"]
                assert user_texts(model.chat_requests[-1]) == ["hello again"]
                assert http.get("/api/agents/sam/unanswered").json()["total"] == 1
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=60)
        assert model.rejections == []
