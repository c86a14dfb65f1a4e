"""When a user's message counts as answered (memory/recall/answered.py): a
reply reached the user in its step. Each place a step can stop is a stored
state here, as the loop leaves it (a call and its result are stored
together); and `KeptSteps`, which finds the same from what it kept of the
last window, is checked against `unanswered` over windows of such steps as
turns, compactions, edits and deletions change them."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

import pytest

from memgpt_lite.memory.recall.answered import KeptSteps, delivered_reply, unanswered
from memgpt_lite.models import Message, ToolCall

_ids = itertools.count()


def user(step: str | None, text: str = "hello") -> Message:
    return Message(agent_id="a", role="user", content=text, step_id=step)


def answer(step: str | None, *names: str, text: str | None = None) -> Message:
    calls = [
        ToolCall(id=f"call{next(_ids)}", name=name, arguments='{"message": "hi"}') for name in names
    ]
    return Message(agent_id="a", role="assistant", content=text, tool_calls=calls, step_id=step)


def results(assistant: Message, content: str = "done") -> list[Message]:
    return [
        Message(
            agent_id="a",
            role="tool",
            content="Sent message successfully." if c.name == "send_message" else content,
            tool_call_id=c.id,
            name=c.name,
            step_id=assistant.step_id,
        )
        for c in assistant.tool_calls
    ]


def turn(step: str, *names: str, content: str = "done") -> list[Message]:
    """An answer with calls of `names` and their results, as one batch."""
    assistant = answer(step, *names)
    return [assistant, *results(assistant, content)]


def failed_reply(step: str) -> Message:
    """The result of the last send_message call made, refused."""
    return Message(
        agent_id="a",
        role="tool",
        content="Error: message is empty: the user would see nothing. Write the message.",
        tool_call_id=f"call{next(_ids) - 1}",
        name="send_message",
        step_id=step,
    )


def stopped(*batches: list[Message]) -> list[Message]:
    return [user("s1"), *itertools.chain.from_iterable(batches)]


@pytest.mark.parametrize(
    "window",
    [
        stopped(),  # killed before the model answered
        stopped(turn("s1", "core_memory_append")),  # killed after its tool calls
        stopped(  # killed in a chain of heartbeats
            turn("s1", "conversation_search"),
            turn("s1", "core_memory_append", "archival_memory_insert"),
        ),
        stopped(turn("s1", "send_message")[:1] + [failed_reply("s1")]),  # the reply failed
        stopped([answer("s1")]),  # an empty text answer reached no one
        stopped(turn("s1", "core_memory_append")) + [user("s2")],  # then another message
    ],
    ids=["before-answer", "after-calls", "heartbeats", "failed-reply", "empty-text", "then-more"],
)
def test_a_step_that_stopped_before_a_reply_leaves_its_message_unanswered(window):
    assert unanswered(window)[0] is window[0]
    assert unanswered(window, step_id="s1") == [m for m in window[1:] if m.role == "user"]


@pytest.mark.parametrize(
    "window",
    [
        stopped(turn("s1", "send_message")),
        stopped(turn("s1", "core_memory_append"), turn("s1", "send_message")),
        stopped(turn("s1", "send_message", "conversation_search")),  # replied, went on, killed
        stopped([answer("s1", text="Hi there.")]),  # a final text
        stopped([answer("s1", "archival_memory_insert")]),  # waiting for approval
        [user(None)],  # no step: imported, or from before steps were kept
    ],
    ids=["reply", "reply-after-calls", "reply-then-more", "text", "approval", "no-step"],
)
def test_a_reply_that_reached_the_user_answers(window):
    assert unanswered(window) == []


def test_a_failed_reply_is_no_answer_until_one_is_sent():
    assistant = answer("s1", "send_message")
    window = [user("s1"), assistant, failed_reply("s1")]
    assert window[2].tool_call_id == assistant.tool_calls[0].id
    assert not delivered_reply(window) and unanswered(window) == [window[0]]
    window += turn("s1", "send_message")
    assert delivered_reply(window) and unanswered(window) == []


def test_only_the_step_of_each_message_counts():
    window = [user("s1"), user("s2"), *turn("s2", "send_message"), user("s3")]
    assert [m.step_id for m in unanswered(window)] == ["s1", "s3"]
    assert [m.step_id for m in unanswered(window, "s3")] == ["s1"]


def steps(rng: random.Random, number: int) -> list[Message]:
    """One step as the loop stores it, stopped at a random point."""
    step = f"s{number % 6}"  # steps recur: the same id in different places
    messages = [user(rng.choice([step, None]) if rng.random() < 0.1 else step)]
    for _ in range(rng.randrange(0, 4)):
        names = rng.sample(["send_message", "core_memory_append", "conversation_search"], 2)
        batch = turn(step, *names[: rng.randrange(1, 3)])
        if rng.random() < 0.2:
            batch = batch[:1]  # waiting for approval
        elif rng.random() < 0.2:
            batch = [batch[0], *(r.model_copy(update={"content": "Error: no"}) for r in batch[1:])]
        messages += batch
    if rng.random() < 0.2:
        messages.append(answer(step, text=rng.choice(["", "A reply."])))
    return messages


def windows(seed: int) -> Iterator[list[Message]]:
    rng = random.Random(seed)
    window: list[Message] = []
    for number in range(80):
        window = list(window)
        action = rng.random()
        if action < 0.5:  # a turn
            window += steps(rng, number)
        elif action < 0.6 and window:  # a turn's messages arrive in two requests
            window += steps(rng, number)[: rng.randrange(1, 3)]
        elif action < 0.7 and window:  # a compaction
            del window[: rng.randrange(1, len(window) + 1)]
        elif action < 0.8 and window:  # an edit: a new object
            i = rng.randrange(len(window))
            window[i] = window[i].model_copy(update={"content": rng.choice([None, "Error: x"])})
        elif action < 0.9 and window:  # a pop
            del window[rng.randrange(len(window)) :]
        elif action < 0.95:
            window = [m.model_copy() for m in window]  # a store that hands out new objects
        yield window


@pytest.mark.parametrize("seed", range(10))
def test_kept_steps_find_what_unanswered_finds(seed):
    kept = KeptSteps()
    rng = random.Random(seed)
    found_any = False
    for window in windows(seed):
        step_id = rng.choice([None, "s1", "s3"])
        expected = unanswered(window, step_id)
        found = kept.unanswered_in(window, step_id)
        assert len(found) == len(expected)
        assert all(a is b for a, b in zip(found, expected, strict=True))
        found_any = found_any or bool(found)
    assert found_any  # the windows hold unanswered steps to find
