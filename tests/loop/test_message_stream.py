"""The send_message text streamed out of partial JSON arguments: for any
arguments and any way of cutting them, the pieces add up to the message, and
broken input stops the text without raising."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from memgpt_lite.loop.message_stream import MessageStream
from memgpt_lite.text import clean_text

# Characters that are awkward in JSON strings or for a parser cut anywhere.
AWKWARD = [
    *'abc XYZ 019 "\\/{}[]:,',
    "\n",
    "\t",
    "\r",
    "\b",
    "\f",
    "\x00",
    "\x1f",
    "\x7f",
    "é",
    "中",
    "\u2028",
    "\ufeff",
    "😀",
    "𝄞",
    '"message": "',
    "\\u",
]


def awkward_text(rng: random.Random, longest: int = 40) -> str:
    return "".join(rng.choice(AWKWARD) for _ in range(rng.randint(0, longest)))


def random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 3 else 5)
    if kind == 0:
        return awkward_text(rng, 10)
    if kind == 1:
        return rng.choice([0, -7, 12345678901234567890, 1.5, -2.5e-10, 3e300])
    if kind == 2:
        return rng.choice([True, False, None])
    if kind in (3, 4):
        return awkward_text(rng, 5)
    if kind in (5, 6):
        return {
            awkward_text(rng, 6): random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))
        }
    return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]


def random_arguments(rng: random.Random) -> str:
    """JSON arguments with "message" among other keys, in any order and layout."""
    items = [(f"k{i}{awkward_text(rng, 3)}", random_value(rng)) for i in range(rng.randint(0, 4))]
    items.append(("request_heartbeat", rng.choice([True, False])))
    items.insert(rng.randint(0, len(items)), ("message", awkward_text(rng)))
    text = json.dumps(
        dict(items),
        ensure_ascii=rng.choice([True, False]),
        indent=rng.choice([None, None, 0, 2]),
        separators=rng.choice([None, (",", ":"), (" , ", " : ")]),
    )
    if rng.random() < 0.3:
        text = text.replace("/", "\\/")  # "/" only occurs in strings: "\/" is its escape
    if rng.random() < 0.3:
        text = rng.choice([" ", "\n", "\t \r\n"]) + text
    return text


def cut(text: str, rng: random.Random) -> list[str]:
    """`text` in pieces cut at random places, one-character pieces included."""
    points = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(0, 30))))
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


def streamed(pieces: list[str], stream: MessageStream | None = None) -> str:
    stream = stream or MessageStream()
    return "".join(stream.feed(piece) for piece in pieces)


@pytest.mark.parametrize("seed", range(40))
def test_any_arguments_cut_anywhere_give_the_message(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(25):
        arguments = random_arguments(rng)
        expected = json.loads(arguments)["message"]
        stream = MessageStream()
        assert streamed(cut(arguments, rng), stream) == expected, arguments
        assert stream.complete


def test_every_cut_of_every_escape() -> None:
    message = 'a"b\\c/d\ne\tf\u00e9\u4e2d\U0001f600\x01\u2028 end'
    for arguments in (
        json.dumps({"message": message}),
        json.dumps({"message": message}, ensure_ascii=False),
        json.dumps({"message": message}).replace("/", "\\/"),
    ):
        for i in range(len(arguments) + 1):
            for j in range(i, len(arguments) + 1):
                pieces = [arguments[:i], arguments[i:j], arguments[j:]]
                assert streamed(pieces) == message, (i, j)


def test_text_comes_out_as_soon_as_it_is_complete() -> None:
    stream = MessageStream()
    steps = [
        ('{"request_heartbeat": false, "mess', ""),
        ('age": "Hel', "Hel"),
        ("lo \\", "lo "),  # the escape is not finished
        ("u00", ""),
        ("e9 \\ud83d", "é "),  # half a surrogate pair waits for its other half
        ("\\ude00", "\U0001f600"),
        ('!", "message": "again"}', "!"),  # nothing after the closing quote
    ]
    for piece, text in steps:
        assert stream.feed(piece) == text, piece
    assert stream.complete


def test_other_key_and_escaped_key_names() -> None:
    assert streamed(['{"mess\\u0061ge": "x"}']) == "x"
    assert streamed(['{"inner_thoughts": "hm", "message": "no"}'], MessageStream("inner_thoughts"))
    assert streamed(['{"messages": "no", "messag": "no", "message": "yes"}']) == "yes"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("", ""),
        ("not json", ""),
        ('["message", "x"]', ""),
        ('"message"', ""),
        ('{"message": 5}', ""),
        ('{"message": null, "x": "y"}', ""),
        ('{"message": ["x"]}', ""),
        ('{"message": {"message": "x"}}', ""),
        ('{"message": "Hello wor', "Hello wor"),  # truncated
        ('{"message": "ab\\x41cd"}', "ab"),  # not a JSON escape
        ('{"message": "ab\\u12G4cd"}', "ab"),
        ('{"message": "ab\ncd"}', "ab"),  # a raw control character
        ('{"message": "a\\ud800b"}', "a\ufffdb"),  # lone surrogates, as clean_text makes them
        ('{"message": "a\\udc00"}', "a\ufffd"),
        ('{"message": "a\\ud83d"}', "a\ufffd"),
        ('{"message": "a\\ud83d\\ud83d\\ude00"}', "a\ufffd\U0001f600"),
        ('{"a": tru, "message": "x"}', ""),
        ('{"a": NaN, "message": "x"}', ""),
        ('{"a": [}, "message": "x"}', ""),
        ('{"a" 1, "message": "x"}', ""),
        ('{"a": 1,, "message": "x"}', ""),
        ('{"a": 1} "message": "x"}', ""),
        ('{"message": "x", "message": "y"}', "x"),  # the first one counts
    ],
)
def test_broken_arguments_never_raise_and_stop_the_text(arguments: str, expected: str) -> None:
    for size in (1, 2, 3, len(arguments) or 1):
        pieces = [arguments[i : i + size] for i in range(0, len(arguments), size)]
        assert streamed(pieces) == expected, size


def test_lone_surrogates_match_the_cleaned_message() -> None:
    """Arguments with escaped lone surrogates stream what the stored message
    holds: the text with each replaced by U+FFFD."""
    rng = random.Random(7)
    for _ in range(200):
        units = [rng.choice(["a", "\ud800", "\udfff", "\ud83d", "\ude00", "é"]) for _ in range(8)]
        arguments = json.dumps({"message": "".join(units)})
        assert streamed(cut(arguments, rng)) == clean_text(json.loads(arguments)["message"])


@pytest.mark.parametrize("seed", range(10))
def test_mutated_arguments_never_raise(seed: int) -> None:
    """Damaged JSON never raises; when the damage leaves valid JSON with one
    message, that message is what comes out."""
    rng = random.Random(seed)
    for _ in range(100):
        text = list(random_arguments(rng))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(text) + 1)
            action = rng.randrange(3)
            if action == 0 and text[at:]:
                del text[at]
            elif action == 1:
                text.insert(at, rng.choice('{}[]",:\\ u0'))
            elif text[at:]:
                text[at] = rng.choice('{}[]",:\\ u0a')
        arguments = "".join(text)
        out = streamed(cut(arguments, rng))
        assert isinstance(out, str)
        try:
            pairs = json.loads(arguments, object_pairs_hook=lambda p: p)
        except ValueError:
            continue
        if not arguments.lstrip().startswith("{"):  # an object's pairs, not an array
            continue
        messages = [value for key, value in pairs if key == "message"]
        if len(messages) == 1 and isinstance(messages[0], str):
            assert out == clean_text(messages[0]), arguments
