"""How soon the first words of a streamed reply reach the caller of
`agent.stream()` / `agent.astream()`, after the endpoint sent them.

    python benchmarks/first_words.py [--runs 30]

The fake server streams each answer in pieces of four characters, 10 ms
apart, as a model writes, and notes the moment it wrote each piece. For each
step, the delay is measured from the write of the piece that holds the first
character of the inner thought to the `ThoughtDelta` that carries it, and
from the write of the piece that holds the first character of the
`send_message` text to the `MessageDelta` that carries it. The clocks are the
same (`time.perf_counter`, one process). Prints the median and the largest
delay of each; target: within 5 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from memgpt_lite import Agent
from memgpt_lite.events import MessageDelta, ThoughtDelta
from memgpt_lite.loop.message_stream import MessageStream
from memgpt_lite.testing import FakeOpenAIServer, say

REPLY = say("Nice to meet you, Alice! Tea is a fine choice.", content="She likes tea; greet her.")


def first_message_write(pieces: Iterable) -> float:
    """When the server wrote the first piece of arguments that holds text of the message."""
    parser = MessageStream()
    for piece in pieces:
        if piece.index is not None and parser.feed(piece.text):
            return piece.at
    raise RuntimeError("no message text was streamed")


def delays(server: FakeOpenAIServer, thought_at: float, message_at: float) -> tuple[float, float]:
    pieces = server.requests[-1].pieces
    thought_sent = next(p.at for p in pieces if p.index is None)
    return (thought_at - thought_sent) * 1000, (message_at - first_message_write(pieces)) * 1000


class Arrivals:
    """When the first ThoughtDelta and the first MessageDelta came."""

    def __init__(self) -> None:
        self.thought_at: float | None = None
        self.message_at: float | None = None

    def note(self, event: object) -> None:
        now = time.perf_counter()
        if self.thought_at is None and isinstance(event, ThoughtDelta):
            self.thought_at = now
        if self.message_at is None and isinstance(event, MessageDelta):
            self.message_at = now


def first_arrivals(events: Iterable) -> tuple[float, float]:
    arrivals = Arrivals()
    for event in events:
        arrivals.note(event)
    return arrivals.thought_at, arrivals.message_at


async def afirst_arrivals(agent: Agent, text: str) -> tuple[float, float]:
    arrivals = Arrivals()
    async for event in agent.astream(text):
        arrivals.note(event)
    return arrivals.thought_at, arrivals.message_at


def report(label: str, measured: list[tuple[float, float]]) -> None:
    thought = [t for t, _ in measured]
    message = [m for _, m in measured]
    print(
        f"  {label:16} thought: median {statistics.median(thought):5.2f} ms, max "
        f"{max(thought):5.2f} ms   message: median {statistics.median(message):5.2f} ms, "
        f"max {max(message):5.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with (
        FakeOpenAIServer(stream_piece_seconds=0.01) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        server.responder = lambda body: REPLY
        agent = Agent.create(
            "sam",
            "gpt-4o-mini",
            db=Path(tmp) / "a.db",
            base_url=server.base_url,
            api_key=server.api_key,
        )
        synchronous, awaited = [], []
        for run in range(args.runs + 2):
            arrivals = first_arrivals(agent.stream(f"Hi, I am Alice ({run})."))
            if run >= 2:  # two warm-ups
                synchronous.append(delays(server, *arrivals))
            arrivals = asyncio.run(afirst_arrivals(agent, f"I like tea ({run})."))
            if run >= 2:
                awaited.append(delays(server, *arrivals))
        assert server.rejections == []
    print(f"first words of {args.runs} streamed replies, endpoint write to caller:")
    report("agent.stream()", synchronous)
    report("agent.astream()", awaited)


if __name__ == "__main__":
    main()
