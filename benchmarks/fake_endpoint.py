"""A scripted fake OpenAI endpoint in its own process, for the benchmarks.

It answers chat requests with a short `send_message` call and summarization
requests (those without tools) with a short summary, and, given a context
window, rejects over-long requests as a real endpoint does. Running it in
another process keeps its work off the benchmarked process's GIL.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from memgpt_lite.testing import FakeOpenAIServer, reply, say


def respond(body: dict):
    if "tools" not in body:
        return reply(content="The user and the agent talked about many numbered topics.")
    return say("Noted, thank you.", content="Replying briefly.")


def respond_echo(body: dict):
    """`respond`, but the reply repeats the last user message's text."""
    if "tools" not in body:
        return respond(body)
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    text = users[-1].get("content") if users else None
    return say(f"You said: {text}", content="Echoing.")


@dataclass
class Endpoint:
    base_url: str
    api_key: str
    rejected_for_length: int | None = None  # known once the endpoint has stopped


@contextmanager
def fake_endpoint(
    context_window: int | None = None, latency_ms: float = 0.0, echo: bool = False
) -> Iterator[Endpoint]:
    """Start the endpoint in a subprocess for the duration of the block. Each
    answer waits `latency_ms` first (requests are served concurrently). With
    `echo`, each reply repeats the user's last message ("You said: ...")."""
    args = [sys.executable, str(Path(__file__).resolve())]
    if echo:
        args.append("--echo")
    if context_window:
        args += ["--context-window", str(context_window)]
    if latency_ms:
        args += ["--latency-ms", str(latency_ms)]
    process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    endpoint = Endpoint(*process.stdout.readline().split())
    try:
        yield endpoint
    finally:
        process.stdin.close()  # the endpoint prints its count of rejections and stops
        line = process.stdout.readline()
        endpoint.rejected_for_length = int(line.split()[-1]) if line else None
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--context-window", type=int)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--echo", action="store_true")
    args = parser.parse_args()
    server = FakeOpenAIServer(context_window=args.context_window)
    answer = respond_echo if args.echo else respond
    if args.latency_ms:

        def slow(body: dict):
            time.sleep(args.latency_ms / 1000)  # in the request's own thread
            return answer(body)

        server.responder = slow
    else:
        server.responder = answer
    server.start()
    print(server.base_url, server.api_key, flush=True)
    sys.stdin.read()  # until the benchmark closes our stdin
    too_long = sum("maximum context length" in (r.error or "") for r in server.rejections)
    print(f"rejected_for_length {too_long}", flush=True)
    server.stop()


if __name__ == "__main__":
    main()
