"""A long context window must not be slow to send: time per turn with about
3,400 messages in the window, against an instant endpoint.

    python benchmarks/long_window.py [--window-messages 3400] [--turns 30]

The agent gets a context window large enough that nothing is compacted, and
its history is seeded with user / send_message / result triples, so every
turn sends all of them. The endpoint is a bare HTTP responder in another
process that answers at once without reading the request beyond its length,
so what is measured is ours: loading the window, building and counting the
request, sending it through the openai client, parsing the answer, running
the tool and committing. Prints the median and p95 milliseconds per turn,
and the median CPU time this process spent per turn (steadier than the wall
time on a machine busy with other work); for comparison, the bare openai
client's time to send the same body the cheapest way it can (`client.post`
of the encoded body, the answer read whole), which is the floor of a turn,
and `chat.completions.create()`'s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from step_overhead import seed

from memgpt_lite import Agent, AgentSettings

ANSWER = json.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "Replying.",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {
                                "name": "send_message",
                                "arguments": json.dumps({"message": "Noted."}),
                            },
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
).encode()

RESPONDER = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
ANSWER = sys.argv[1].encode()
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The answer goes out in one write, with Nagle off: headers and body
    # written apart, the body waited for the client's delayed ACK of the
    # headers, about 40 ms a request that no real server adds.
    wbufsize = -1
    disable_nagle_algorithm = True
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)
    def log_message(self, *args):
        pass
server = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def raw_send_ms(base_url: str, body: dict, turns: int) -> tuple[float, float]:
    """The bare openai client's median time for the same request body: sent
    with `client.post` (JSON-encoded by us, the answer read whole), and with
    `chat.completions.create()`, which walks every message first."""
    import httpx2
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0)
    post, create = [], []
    for _ in range(turns):
        started = time.perf_counter()
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        response = client.post("/chat/completions", content=content, cast_to=httpx2.Response)
        json.loads(response.read())
        post.append((time.perf_counter() - started) * 1000)
    for _ in range(max(3, turns // 5)):  # about half a second each
        started = time.perf_counter()
        client.chat.completions.create(**body)
        create.append((time.perf_counter() - started) * 1000)
    return statistics.median(post), statistics.median(create)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window-messages", type=int, default=3400)
    parser.add_argument("--turns", type=int, default=30)
    args = parser.parse_args()
    responder = subprocess.Popen(
        [sys.executable, "-c", RESPONDER, ANSWER.decode()], stdout=subprocess.PIPE, text=True
    )
    try:
        base_url = f"http://127.0.0.1:{responder.stdout.readline().strip()}/v1"
        with tempfile.TemporaryDirectory() as tmp:
            agent = Agent.create(
                "long",
                "gpt-4o-mini",
                db=Path(tmp) / "long.db",
                base_url=base_url,
                api_key="x",
                settings=AgentSettings(context_window=1_000_000, working_window=0),  # all of it
            )
            # Each turn adds three; the window holds --window-messages at the first timed turn.
            seed(agent, args.window_messages - 3 * 4)
            for _ in range(3):
                agent.step("Warm up.")
            first_window = len(agent.context_messages()) + 3  # the turn adds three
            times, cpu_times = [], []
            for i in range(args.turns):
                started, cpu_started = time.perf_counter(), time.process_time()
                agent.step(f"Turn {i}: anything new?")
                times.append((time.perf_counter() - started) * 1000)
                cpu_times.append((time.process_time() - cpu_started) * 1000)
            window = len(agent.context_messages())
            from memgpt_lite.memory.recall.window import compile_context

            compiled = compile_context(agent.runner)
            body = {
                "model": "m",
                "messages": compiled.request_messages,
                "tools": compiled.tools,
                "tool_choice": "required",
            }
            post, create = raw_send_ms(base_url, body, 30)
    finally:
        responder.kill()
    print(f"window: {first_window:,} to {window:,} messages")
    print(
        f"  per turn, all of it:  median {statistics.median(times):7.1f} ms   "
        f"p95 {statistics.quantiles(times, n=20)[18]:7.1f} ms"
    )
    print(f"  this process's CPU time per turn:  median {statistics.median(cpu_times):7.1f} ms")
    print(f"  the bare client's client.post(), same body:  median {post:7.1f} ms")
    print(f"  client.chat.completions.create(), same body: median {create:7.1f} ms")


if __name__ == "__main__":
    main()
