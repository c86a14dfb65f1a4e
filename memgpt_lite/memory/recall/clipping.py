"""Clipping a request's messages to fit the context window, in the request
only: what storage holds is never changed, and recall search still finds it
whole. A clipped text ends with a marker saying how long it was; a search
listing loses whole results from its end instead (listing.py); and the
messages of the step in progress, once compaction has evicted what it could,
are fitted together into the room left, what the model asked for last kept
whole the longest (`Clipper.fit_step`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memgpt_lite.llm.tokens import TokenCounter
from memgpt_lite.memory.recall.listing import fit_listing

# The least a message of the step in progress is clipped to when the step
# alone overfills the window: less would say nothing of what it held.
STEP_FLOOR = 48
# The least `clip_message` keeps of a message (its marker, mostly).
LEAST_CLIP = 16


def clip_text(counter: TokenCounter, text: str, max_tokens: int, note: str) -> str:
    """`text` cut to about `max_tokens` tokens, with a marker saying so."""
    tokens = counter.encoding.encode_ordinary(text)
    if len(tokens) <= max_tokens:
        return text
    marker = f"\n[clipped: {len(tokens)} tokens, {note}]"
    keep = max(0, max_tokens - counter.count_text(marker))
    return counter.encoding.decode(tokens[:keep]) + marker


def clip_message(counter: TokenCounter, message: dict[str, Any], limit: int) -> dict[str, Any]:
    note = "too long for the context window; the full text is in recall memory"
    clipped = dict(message)
    share = max(LEAST_CLIP, limit // (1 + len(message.get("tool_calls") or [])))
    if clipped.get("content"):
        # A search's results lose whole entries from the end, never the best.
        listing = message["role"] == "tool"
        fitted = fit_listing(counter, clipped["content"], share) if listing else None
        clipped["content"] = fitted or clip_text(counter, clipped["content"], share, note)
    if clipped.get("tool_calls"):
        clipped["tool_calls"] = [
            {
                **c,
                "function": {
                    **c["function"],
                    "arguments": clip_text(counter, c["function"]["arguments"], share, note),
                },
            }
            for c in clipped["tool_calls"]
        ]
    return clipped


def water_level(sizes: Sequence[int], room: int) -> int:
    """The largest cap such that the sizes, each cut to it, add up to `room`."""
    used = 0
    ordered = sorted(sizes)
    for k, size in enumerate(ordered):
        if used + size * (len(ordered) - k) > room:
            return max(0, (room - used) // (len(ordered) - k))
        used += size
    return ordered[-1] if ordered else 0


@dataclass
class Clipper:
    """The messages of one request as they are clipped to fit: each clip
    starts again from the message as stored (`sent`), so its marker counts
    the whole and a message clipped twice keeps what the last limit allows."""

    counter: TokenCounter
    sent: Sequence[dict[str, Any]]  # the window's messages, unclipped
    request: list[dict[str, Any]]  # the system message, then those, clipped
    counts: list[int]  # the tokens of each of the window's messages, clipped

    def role(self, i: int) -> str:
        return str(self.sent[i]["role"])

    def clip(self, i: int, limit: int) -> None:
        """Clip message `i` of the window to `limit` tokens if it is longer,
        what it holds besides its text (role, ids, names) counted."""
        if self.counts[i] <= limit:
            return
        message, counter = self.sent[i], self.counter
        bare: dict[str, Any] = {**message, "content": ""}
        if message.get("tool_calls"):
            bare["tool_calls"] = [
                {**c, "function": {**c["function"], "arguments": ""}} for c in message["tool_calls"]
            ]
        clipped = clip_message(counter, message, limit - counter.count_message(bare))
        self.request[i + 1] = clipped
        self.counts[i] = counter.count_message(clipped)

    def fit_step(self, first: int, room: int) -> None:
        """Clip the messages of the step in progress (`first` on) to `room`
        tokens together. What the model asked for last (its latest call and
        results) and the user's message keep the most: the step's earlier
        calls and results, and its notes (a memory-pressure alert), are cut
        first, oldest first, to `STEP_FLOOR`, then to the least a clip keeps;
        then every message is cut to one common cap, so short ones stay whole."""
        step = range(first, len(self.counts))
        last_call = max((i for i in step if self.role(i) == "assistant"), default=first)
        aside = [
            i
            for i in step
            if self.role(i) == "system" or (i < last_call and self.role(i) != "user")
        ]
        for floor in (STEP_FLOOR, LEAST_CLIP):  # the least first, oldest first
            for i in aside:
                if sum(self.counts[first:]) <= room:
                    return
                self.clip(i, floor)
        target = room
        for _ in range(3):  # a clipped message's marker and overhead may overshoot a little
            excess = sum(self.counts[first:]) - room
            if excess <= 0:
                return
            cap = max(STEP_FLOOR, water_level([self.counts[i] for i in step], target))
            for i in step:
                self.clip(i, cap)
            target -= max(0, sum(self.counts[first:]) - room)
