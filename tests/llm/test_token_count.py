"""The offline token counter (llm/tokens.py): the encoding follows the model,
counts are exact and offline, a request counts its messages, tools and
framing, and per-message counts are cached. Long texts are counted by parts,
each part's count kept: the totals must be exactly what encoding the whole
text gives, whatever the text."""

from __future__ import annotations

import random

import pytest

from memgpt_lite.llm.tokens import COUNT_BY_PARTS_FROM, TokenBound, TokenCounter, encoding_name
from memgpt_lite.tools.builtin import BUILTIN_TOOLS

# Characters around the places where the text is cut into parts: line breaks,
# other whitespace, "/" (which a piece may carry after a line break),
# punctuation, letters, digits, contractions, non-ASCII letters and spaces.
PIECES = ["\n", "\n\n", "\r\n", " ", "\t", "/", "a", "Z", "<", ">", ".", "!", "7", "42"]
PIECES += ["'s", "'LL", "é", "中", "\u00a0", "\u2028", "\x1c", "-", "#", " /x", "\n/"]


def whole(counter: TokenCounter, text: str) -> int:
    return len(counter.encoding.encode_ordinary(text))


@pytest.mark.parametrize("model", ["gpt-4o-mini", "gpt-4"])  # o200k_base, cl100k_base
def test_by_parts_counts_what_the_whole_text_counts(model):
    counter, rng = TokenCounter(model), random.Random(7)
    for _ in range(400):
        size = rng.randint(COUNT_BY_PARTS_FROM, COUNT_BY_PARTS_FROM + 600)
        text = "".join(rng.choice(PIECES) for _ in range(size))
        assert counter.count_text(text) == whole(counter, text)


@pytest.mark.parametrize("model", ["gpt-4o-mini", "gpt-4"])
def test_the_bound_is_never_below_the_count(model):
    # TokenBound decides, with no encoder, what an exact count could only confirm
    # (agent/sizing.py): it must never count less, whatever the text.
    counter, bound, rng = TokenCounter(model), TokenBound(), random.Random(11)
    odd = ["\U0001f600", "\ud83d", "\ude00", "\ud83d\ude00", "\x00", "\u200b", "<|endoftext|>"]
    for _ in range(300):
        size = rng.choice([rng.randint(0, 40), rng.randint(COUNT_BY_PARTS_FROM, 3000)])
        text = "".join(rng.choice(PIECES + odd) for _ in range(size))
        assert bound.count_text(text) >= counter.count_text(text)
        message = {"role": "user", "content": text, "name": "x"}
        assert bound.count_message(message) >= counter.count_message(message)
    tools = [tool.schema() for tool in BUILTIN_TOOLS.values()]
    assert bound.count_tools(tools) >= counter.count_tools(tools) > 0


def test_a_system_message_that_changes_a_line_is_counted_afresh():
    counter = TokenCounter("gpt-4o-mini")
    lines = [f"<line {i}>Some remembered fact number {i}, and more.</line {i}>" for i in range(60)]
    text = "\n".join(lines)
    assert counter.count_text(text) == whole(counter, text)
    lines[30] = "<line 30>Now it says something much longer than it did before.</line 30>"
    changed = "\n".join(lines)
    assert counter.count_text(changed) == whole(counter, changed) != whole(counter, text)


def test_encoding_follows_the_model():
    assert encoding_name("gpt-4o-mini") == "o200k_base"
    assert encoding_name("gpt-4.1") == "o200k_base"
    assert encoding_name("gpt-4") == "cl100k_base"
    assert encoding_name("gpt-3.5-turbo") == "cl100k_base"
    assert encoding_name("llama3.2:latest") == "o200k_base"


def test_token_counts_are_exact_and_offline():
    # Known ids from OpenAI's tokenizers; the conftest blocks the network, so
    # this also proves the vocabularies load offline.
    o200k = TokenCounter("gpt-4o")
    assert o200k.encoding.encode_ordinary("hello world") == [24912, 2375]
    cl100k = TokenCounter("gpt-4")
    assert cl100k.encoding.encode_ordinary("hello world") == [15339, 1917]
    # Special-token text typed by a user is counted as text, never refused.
    assert o200k.count_text("<|endoftext|>") > 1


def test_request_count_includes_messages_tools_and_framing():
    counter = TokenCounter("gpt-4o-mini")
    message = {"role": "user", "content": "hello world"}
    assert counter.count_message(message) == 3 + 1 + 2
    tools = [BUILTIN_TOOLS["send_message"].schema()]
    assert counter.count_request([message], tools) == 6 + counter.count_tools(tools) + 3
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "send_message", "arguments": "{}"}}
        ],
    }
    assert counter.count_message(call) > counter.count_message(
        {"role": "assistant", "content": None}
    )


def test_per_message_counts_are_cached_by_key():
    counter = TokenCounter("gpt-4o-mini")
    first = counter.count_message({"role": "user", "content": "short"}, cache_key="m1")
    # Same key: the cached count comes back without tokenising again.
    assert counter.count_message({"role": "user", "content": "much longer " * 50}, "m1") == first
    counter.forget("m1")
    assert counter.count_message({"role": "user", "content": "much longer " * 50}, "m1") > first
