"""The framework's own time per step, with 0 to 100k messages already stored.

    python benchmarks/step_overhead.py [--stored 0,1000,10000,100000] [--steps 200]
        [--db sqlite|postgres|both|URL]

Each size runs in a fresh process (so peak RSS is that size's own) against the
fake OpenAI server, itself in another process so it does not compete for the
GIL, once with streamed requests and once without. Each step is timed whole,
and right after it the bare openai client sends the request the next step
will send, in two ways:

- `create`: the client as an application uses it,
  `client.chat.completions.create(...)`, its chunks iterated when streaming.
  This is "the raw client's round trip" of the target.
- `post`: the client's lower-level `client.post`, reading the answer's bytes:
  no request preparation and no parsing at all, a floor no caller that reads
  the answer can reach.

The framework's own time is the step's median less each baseline's median:
the step lock, loading state, compiling the system message, counting tokens,
encoding the request, parsing the answer (SSE included), running tools and
committing. Steps and baselines alternate, so a machine that slows down for a
while slows both.

Each size gets a fresh database (`--db`, see databases.py; `both` prints
SQLite's and PostgreSQL's rows one after the other, per size).

The window is held at the last ~20 messages before each step, outside the
timing, so the figures show how cost depends on stored history alone.
Target: under 2 ms per step over the raw client at 10k stored messages, flat to 100k.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

from databases import Databases, add_db_option, backends, label
from fake_endpoint import fake_endpoint

WINDOW = 20


def seed(agent, count: int) -> None:
    """Store `count` messages as user / assistant-call / tool-result triples."""
    from memgpt_lite.models import Message, ToolCall

    batch: list[Message] = []
    for i in range(count):
        kind = i % 3
        if kind == 0:
            message = Message(
                agent_id=agent.state.id,
                role="user",
                content=f"Message {i}: tell me about topic {i % 97} please",
            )
        elif kind == 1:
            call = ToolCall(
                id=f"seed_{i}",
                name="send_message",
                arguments=json.dumps({"message": f"Here is something on {i % 97}."}),
            )
            message = Message(agent_id=agent.state.id, role="assistant", tool_calls=[call])
        else:
            message = Message(
                agent_id=agent.state.id,
                role="tool",
                tool_call_id=f"seed_{i - 1}",
                name="send_message",
                content="Sent message successfully.",
            )
        batch.append(message)
        if len(batch) == 5000:
            agent.store.add_messages(batch)
            batch = []
    agent.store.add_messages(batch)


def hold_window(agent) -> None:
    """Move the window start so it holds about WINDOW messages, starting at a
    user message so no tool result is separated from its call."""
    users = [m for m in agent.store.last_messages(agent.state.id, WINDOW) if m.role == "user"]
    if users:
        agent.state.context_start = users[-(WINDOW // 3) :][0].seq or 0
        agent.store.save_agent(agent.state)


class BareClient:
    """The openai client, sending what the agent's next step will send."""

    def __init__(self, base_url: str, api_key: str, stream: bool) -> None:
        import openai

        self.client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0)
        self.stream = stream

    def request(self, agent) -> dict:
        from memgpt_lite.memory.recall.window import compile_context

        compiled = compile_context(agent.runner)
        request = {
            "model": agent.state.llm.model,
            "messages": [dict(m) for m in compiled.request_messages],
            "tools": compiled.tools,
            "tool_choice": "required",
        }
        if self.stream:
            request |= {"stream": True, "stream_options": {"include_usage": True}}
        return request

    def create_ms(self, request: dict) -> float:
        started = time.perf_counter()
        answer = self.client.chat.completions.create(**request)
        if self.stream:
            for _chunk in answer:
                pass
        return (time.perf_counter() - started) * 1000

    def post_ms(self, request: dict) -> float:
        import httpx2  # the HTTP library of the installed openai client

        started = time.perf_counter()
        response = self.client.post(
            "/chat/completions", body=request, cast_to=httpx2.Response, stream=self.stream
        )
        response.read()
        return (time.perf_counter() - started) * 1000


def worker(stored: int, steps: int, base_url: str, api_key: str, stream: bool, db: str) -> dict:
    from memgpt_lite import Agent

    agent = Agent.create(
        "bench",
        "gpt-4o-mini",
        db=db,
        base_url=base_url,
        api_key=api_key,
        llm_options={"stream": stream},
    )
    seed(agent, stored)
    bare = BareClient(base_url, api_key, stream)
    step_ms, create_ms, post_ms = [], [], []
    for i in range(steps + 10):
        hold_window(agent)
        request = bare.request(agent)
        started = time.perf_counter()
        agent.step(f"Step {i}: what do you remember about topic {i % 97}?")
        total = (time.perf_counter() - started) * 1000
        created, posted = bare.create_ms(request), bare.post_ms(request)
        if i >= 10:  # the first steps warm caches and the tokenizer
            step_ms.append(total)
            create_ms.append(created)
            post_ms.append(posted)
    agent.store.close()
    median = statistics.median
    return {
        "stored": stored,
        "stream": stream,
        "step_ms_median": median(step_ms),
        "step_ms_p95": statistics.quantiles(step_ms, n=20)[18],
        "create_ms_median": median(create_ms),
        "post_ms_median": median(post_ms),
        "over_create_ms": median(step_ms) - median(create_ms),
        "over_post_ms": median(step_ms) - median(post_ms),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run_worker(args: argparse.Namespace, endpoint, stored: int, stream: str, db: str) -> dict:
    command = [sys.executable, __file__, "--steps", str(args.steps), "--worker-db", db]
    command += ["--worker", str(stored), stream, endpoint.base_url, endpoint.api_key]
    out = subprocess.run(command, capture_output=True, text=True, env=os.environ.copy())
    if out.returncode:
        sys.stderr.write(out.stderr)
        raise SystemExit(f"the worker for {stored} stored messages failed (exit {out.returncode})")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stored", default="0,1000,10000,100000")
    parser.add_argument("--steps", type=int, default=200)
    add_db_option(parser)
    parser.add_argument(
        "--worker", nargs=4, metavar=("STORED", "STREAM", "URL", "KEY"), help=argparse.SUPPRESS
    )
    parser.add_argument("--worker-db", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        stored, stream, base_url, api_key = args.worker
        row = worker(int(stored), args.steps, base_url, api_key, stream == "1", args.worker_db)
        print(json.dumps(row))
        return
    labelled = args.db != "sqlite"  # the SQLite-only table keeps its columns
    print(
        (f"{'db':>8} " if labelled else "")
        + f"{'stored':>8} {'stream':>6} {'step ms':>8} {'p95':>6} {'create ms':>10} "
        f"{'post ms':>8} {'over create':>12} {'over post':>10} {'peak RSS MB':>12}"
    )
    with fake_endpoint() as endpoint, Databases() as databases:
        for stored in (int(s) for s in args.stored.split(",")):
            for backend in backends(args.db):
                for stream in ("0", "1"):
                    db = databases.new(backend, f"steps-{stored}-{stream}")
                    row = run_worker(args, endpoint, stored, stream, db)
                    print(
                        (f"{label(backend):>8} " if labelled else "")
                        + f"{row['stored']:>8} {'yes' if row['stream'] else 'no':>6} "
                        f"{row['step_ms_median']:>8.2f} {row['step_ms_p95']:>6.2f} "
                        f"{row['create_ms_median']:>10.2f} {row['post_ms_median']:>8.2f} "
                        f"{row['over_create_ms']:>12.2f} {row['over_post_ms']:>10.2f} "
                        f"{row['peak_rss_mb']:>12.1f}",
                        flush=True,
                    )
    print(
        "over create: the framework's time per step beyond the client's own create() "
        "(the target: under 2 ms); over post: beyond bare bytes, with no parsing"
    )


if __name__ == "__main__":
    main()
