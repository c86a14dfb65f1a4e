"""What is kept of the last context window between requests, so a turn
walks in Python only what is new: the token counter's requests and tokens
(llm/sent.py), the request body's pieces (`BodyEncoder`), and the steps the
unanswered messages are found by (`KeptSteps`). Each is checked against the
same thing computed from scratch, over windows that grow, lose messages
from the front, and change within, as a turn, a compaction and an edit do."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

import pytest

from memgpt_lite.llm.object_runs import common_run, find, run_length
from memgpt_lite.llm.request_body import BodyEncoder, RequestMessage, encode_request
from memgpt_lite.llm.tokens import TokenCounter
from memgpt_lite.memory.recall.answered import KeptSteps, unanswered
from memgpt_lite.models import Message, ToolCall


class Same:
    """Equal to every other `Same`: runs must match objects, never values."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Same)

    __hash__ = object.__hash__


def test_runs_match_the_very_objects_only():
    a, b, c, d = Same(), Same(), Same(), Same()
    assert common_run([a, b, c], [a, b, c, d]) == (0, 3)
    assert common_run([a, b, c], [b, c]) == (1, 2)
    assert common_run([a, b, c], [b, d, c]) == (1, 1)
    assert common_run([a, b], [d, a, b]) == (0, 0)  # the first is not kept
    assert common_run([a, b], []) == (0, 0) and common_run([], [a]) == (0, 0)
    assert find([a, b, c], c) == 2 and find([a, b], Same()) == -1
    assert run_length([a, b, c], 1, [d, b, c], 1) == 2
    assert run_length([a, b, c], 3, [a], 0) == 0


def message(i: int, role: str = "user", step: str | None = None, text: str = "") -> Message:
    calls = [ToolCall(id=f"c{i}", name="send_message", arguments=f'{{"n": {i}}}')]
    return Message(
        agent_id="a",
        role=role,
        content=text or f"message {i} " * (i % 5),
        tool_calls=calls if role == "assistant" else [],
        tool_call_id=f"c{i}" if role == "tool" else None,
        step_id=step,
        seq=i,
    )


def windows(seed: int, steps: int = 60) -> Iterator[list[Message]]:
    """A window as turns, compactions and edits change it: each is a new
    list, most of whose messages are the very objects of the one before."""
    rng = random.Random(seed)
    made = 0

    def new(role: str | None = None) -> Message:
        nonlocal made
        made += 1
        role = role or rng.choice(["user", "assistant", "tool", "system"])
        return message(made, role, rng.choice([None, *(f"s{k}" for k in range(8))]))

    window = [new() for _ in range(rng.randrange(0, 8))]
    for _ in range(steps):
        window = list(window)
        action = rng.random()
        if action < 0.45:  # a turn
            window += [new() for _ in range(rng.randrange(1, 4))]
        elif action < 0.6 and window:  # a compaction
            del window[: rng.randrange(1, len(window) + 1)]
        elif action < 0.75 and window:  # an edit: a new object, equal or not
            i = rng.randrange(len(window))
            window[i] = window[i].model_copy(update={"content": rng.choice([None, "edited"])})
        elif action < 0.85 and window:  # a message left out (unanswered)
            del window[rng.randrange(len(window))]
        elif action < 0.9:
            window = []
        yield window


@pytest.mark.parametrize("seed", range(8))
def test_the_counter_keeps_what_a_fresh_count_gives(seed):
    counter, kept_before = TokenCounter("gpt-4o-mini"), {}
    for window in windows(seed):
        fresh = TokenCounter("gpt-4o-mini").sent(window)
        requests, tokens = counter.window(window)
        sent = counter.sent(window)
        assert requests == [s.request for s in fresh] and tokens == [s.tokens for s in fresh]
        assert [s.request for s in sent] == requests and [s.tokens for s in sent] == tokens
        assert all(a is b for a, b in zip((s.request for s in sent), requests, strict=True))
        assert [s.message for s in sent] == window
        assert all(s.message is m for s, m in zip(sent, window, strict=True))
        # What was built for a message is used again while it is the same object.
        for s in sent:
            if id(s.message) in kept_before and kept_before[id(s.message)].message is s.message:
                assert kept_before[id(s.message)] is s
        kept_before = {id(s.message): s for s in sent}


def test_the_counter_forgets_a_message_it_is_told_to():
    counter = TokenCounter("gpt-4o-mini")
    window = [message(i) for i in range(4)]
    first = counter.sent(window)
    counter.forget(window[1].id)
    again = counter.sent(window)
    assert again[1] is not first[1] and again[1] == first[1]
    assert again[0] is first[0] and again[2] is first[2] and again[3] is first[3]


def bodies(seed: int) -> Iterator[dict]:
    """Request bodies as the loop sends them: a new system message, the
    window's RequestMessages (one clipped now and then: a plain dict in its
    place), sometimes a reminder after them."""
    rng = random.Random(seed)
    counter = TokenCounter("gpt-4o-mini")
    system = {"role": "system", "content": "s"}
    for window in windows(seed):
        requests, _ = counter.window(window)
        messages: list = [dict(system, content=f"s{rng.random()}"), *requests]
        if len(messages) > 1 and rng.random() < 0.3:
            i = rng.randrange(1, len(messages))
            messages[i] = {**messages[i], "content": "clipped"}
        if rng.random() < 0.2:
            messages.append({"role": "system", "content": "reminder"})
        yield {"model": "m", "messages": messages, "tool_choice": "required"}


@pytest.mark.parametrize("seed", range(8))
def test_a_body_encoder_gives_what_encode_request_gives(seed):
    encoder = BodyEncoder()
    for body in bodies(seed):
        assert encoder.encode(body) == encode_request(body)


def test_a_plain_message_sent_again_after_a_change_is_encoded_anew():
    encoder, kept = BodyEncoder(), RequestMessage({"role": "user", "content": "kept"})
    plain = {"role": "user", "content": "before"}
    body = {"model": "m", "messages": [plain, kept, plain]}
    assert encoder.encode(body) == encode_request(body)
    plain["content"] = "after"
    assert b"after" in encoder.encode(body) and encoder.encode(body) == encode_request(body)
    assert encoder.encode({"model": "m", "messages": []}) == encode_request(
        {"model": "m", "messages": []}
    )
    odd = {"model": "m", "input": "no messages list"}
    assert encoder.encode(odd) == encode_request(odd)


def steps_windows(seed: int) -> Iterator[tuple[list[Message], str | None]]:
    rng = random.Random(seed)
    for window in windows(seed, steps=80):
        yield window, rng.choice([None, "s1", "s3"])


@pytest.mark.parametrize("seed", range(12))
def test_kept_steps_find_what_unanswered_finds(seed):
    kept = KeptSteps()
    for window, step_id in steps_windows(seed):
        found = kept.unanswered_in(window, step_id)
        expected = unanswered(window, step_id)
        assert len(found) == len(expected)
        assert all(a is b for a, b in zip(found, expected, strict=True))


@pytest.mark.parametrize(
    "change",
    [
        lambda w: w + [message(90, "user", "s9")],  # a new step, not answered yet
        lambda w: w + [message(91, "user", "s9"), message(92, "assistant", "s9")],
        lambda w: w[3:],  # the answer left, the question stays
        lambda w: w[:2] + w[3:],
    ],
)
def test_kept_steps_follow_answers_coming_and_going(change: Callable):
    window = [
        message(1, "user", "s1"),
        message(2, "user", "s2"),
        message(3, "assistant", "s1"),
        message(4, "tool", "s1"),
    ]
    kept = KeptSteps()
    assert kept.unanswered_in(window, None) == unanswered(window)
    changed = change(window)
    assert kept.unanswered_in(changed, None) == unanswered(changed)
    assert kept.unanswered_in(window, "s2") == unanswered(window, "s2") == []
