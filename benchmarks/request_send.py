"""What one request costs the client with a long window, and how soon the
first words of a streamed answer reach the caller.

    python benchmarks/request_send.py [--messages 3400] [--runs 15]

Sending: `chat.completions.create()` against our path (`OpenAIChatModel`,
which sends through the client's low-level `post`), plain and streamed, with
a window of --messages realistic messages (user turns, inner thoughts,
send_message and archival_memory_search calls, tool results) and the built-in
tools. The endpoint is a tiny HTTP responder in another process that answers
at once with a fixed completion, or the same as server-sent events when the
request streams; so each figure is the client's own work: preparing and
sending the request and reading the answer. Median and min of --runs requests
after two warm-ups, in ms.

First words: the fake OpenAI server (in this process, so both sides read the
same clock) streams a reply a piece every 10 ms, like a model writing, and
notes when it wrote the first piece of text (`first_content_at`); the caller
notes when `OpenAIChatModel.stream` gave it the first `TextDelta`. The
difference is printed, median and max over --runs answers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import openai

from memgpt_lite.llm.model import TextDelta
from memgpt_lite.llm.openai_chat import OpenAIChatModel
from memgpt_lite.models import LLMConfig
from memgpt_lite.testing import FakeOpenAIServer, say
from memgpt_lite.tools.builtin import BUILTIN_TOOLS

MODEL = "gpt-4o-mini"

# The instant endpoint: reads each request whole, answers at once. A request
# that asks to stream gets the answer as server-sent events.
RESPONDER = r"""
import asyncio, json
MESSAGE = {"role": "assistant", "content": "Replying briefly.", "tool_calls": [{"id": "call_1",
    "type": "function", "function": {"name": "send_message",
    "arguments": "{\"message\": \"Noted, thank you.\"}"}}]}
USAGE = {"prompt_tokens": 90000, "completion_tokens": 20, "total_tokens": 90020}
PLAIN = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "message": MESSAGE, "finish_reason": "tool_calls"}],
    "usage": USAGE}).encode()
def event(delta, finish=None, usage=None):
    choices = [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}]
    data = b"data: " + json.dumps({"id": "c", "object": "chat.completion.chunk",
        "created": 0, "model": "m", "choices": choices, "usage": usage}).encode() + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)
call = MESSAGE["tool_calls"][0]
STREAM = b"".join([event({"role": "assistant", "content": ""}),
    *(event({"content": w}) for w in ("Replying ", "briefly.")),
    event({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
        "function": {"name": "send_message", "arguments": ""}}]}),
    *(event({"tool_calls": [{"index": 0, "function": {"arguments": a}}]})
      for a in ('{"message": ', '"Noted, ', 'thank you."}')),
    event({}, "tool_calls"), event(None, usage=USAGE),
    b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"])
HEADS = {
    False: b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
        % len(PLAIN) + PLAIN,
    True: b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n" + STREAM,
}
async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = await reader.readexactly(length)
            writer.write(HEADS[b'"stream":true' in body])
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()
asyncio.run(main())
"""


def window(count: int, seed: int = 0) -> list[dict[str, Any]]:
    """`count` messages shaped like a long MemGPT conversation."""
    rng = random.Random(seed)
    words = [f"{w}{i}" for i in range(300) for w in ("note", "plan", "trip", "cat")]

    def text(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    messages: list[dict[str, Any]] = [{"role": "system", "content": text(500)}]
    turn = 0
    while len(messages) < count:
        turn += 1
        messages.append({"role": "user", "content": text(rng.randint(8, 40))})
        if turn % 5 == 0:  # a search before the answer
            query = json.dumps({"query": text(4), "page": 0})
            found = json.dumps({"results": [text(40) for _ in range(3)], "total": 3})
            messages += _call(f"s{turn}", "archival_memory_search", query, text(15), found)
        reply = json.dumps({"message": text(rng.randint(10, 50)), "request_heartbeat": False})
        done = json.dumps({"status": "OK", "message": None, "time": "2024-05-01 10:00:00 AM"})
        messages += _call(f"m{turn}", "send_message", reply, text(12), done)
    return messages[:count]


def _call(call_id: str, name: str, arguments: str, thought: str, result: str) -> list[Any]:
    function = {"name": name, "arguments": arguments}
    assistant = {
        "role": "assistant",
        "content": thought,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }
    return [assistant, {"role": "tool", "tool_call_id": call_id, "content": result}]


async def timed(send: Callable[[], Awaitable[Any]], runs: int) -> tuple[float, float]:
    """Median and min of `runs` sends, in ms, after two warm-ups."""
    for _ in range(2):
        await send()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        await send()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), min(times)


async def sending(base_url: str, messages: list[Any], runs: int) -> None:
    tools = [tool.schema() for tool in BUILTIN_TOOLS.values()]
    client = openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0)
    model = OpenAIChatModel(LLMConfig(model=MODEL), base_url=base_url, api_key="k", timeout=60)
    plain, streamed = LLMConfig(model=MODEL, stream=False), LLMConfig(model=MODEL)
    request = {"model": MODEL, "messages": messages, "tools": tools, "tool_choice": "required"}

    async def create_plain() -> Any:
        return await client.chat.completions.create(**request)

    async def create_streamed() -> Any:
        options = {"include_usage": True}
        stream = await client.chat.completions.create(
            **request, stream=True, stream_options=options
        )
        return [chunk async for chunk in stream]

    cases = [
        ("create(), plain", create_plain),
        ("create(), streamed", create_streamed),
        ("OpenAIChatModel, plain", lambda: model.acomplete(plain, messages, tools)),
        ("OpenAIChatModel, streamed", lambda: model.acomplete(streamed, messages, tools)),
    ]
    body = json.dumps(request).encode()
    print(f"window: {len(messages)} messages, {len(tools)} tools, {len(body) / 1e6:.2f} MB of JSON")
    for label, send in cases:
        median, best = await timed(send, runs)
        print(f"  {label:28} {median:8.1f} ms median  {best:8.1f} ms min")
    started = time.perf_counter()
    json.dumps(request, separators=(",", ":"), ensure_ascii=False).encode()
    print(f"  {'(its JSON encoding alone)':28} {(time.perf_counter() - started) * 1000:8.1f} ms")
    await client.close()
    model.close()


async def first_words(runs: int) -> None:
    with FakeOpenAIServer(stream_piece_seconds=0.01) as server:
        config = LLMConfig(model=MODEL)
        model = OpenAIChatModel(config, base_url=server.base_url, api_key=server.api_key)
        messages = [{"role": "user", "content": "hello"}]
        delays = []
        for run in range(runs + 2):
            server.enqueue(say("Nice to meet you!", content="The user greets me; I greet back."))
            received = None
            async for chunk in model.stream(config, messages, []):
                if received is None and isinstance(chunk, TextDelta):
                    received = time.perf_counter()
            sent = server.requests[-1].first_content_at
            if run >= 2 and received is not None and sent is not None:  # two warm-ups
                delays.append((received - sent) * 1000)
        model.close()
    print(
        f"first words, server write to caller: {statistics.median(delays):.2f} ms median, "
        f"{max(delays):.2f} ms max over {len(delays)} streamed answers"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=3400)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    responder = subprocess.Popen(
        [sys.executable, "-c", RESPONDER], stdout=subprocess.PIPE, text=True
    )
    try:
        port = int(responder.stdout.readline())  # type: ignore[union-attr]
        messages = window(args.messages)
        asyncio.run(sending(f"http://127.0.0.1:{port}/v1", messages, args.runs))
    finally:
        responder.kill()
        responder.wait()
    asyncio.run(first_words(args.runs))


if __name__ == "__main__":
    main()
