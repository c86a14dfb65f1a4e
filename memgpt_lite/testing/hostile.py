"""Hostile input for fuzzing tools and agents: what models, users and files
can throw at them. Used by our tests and `benchmarks/reliability.py`, and
usable on your own tools:

    from memgpt_lite.testing.hostile import hostile_arguments
    for arguments in hostile_arguments({"city": "Oslo", "days": 2}, random.Random(1)):
        server.enqueue(reply(tool_calls=[call_raw("plan_trip", arguments)]))
        ...

Every generator is deterministic for a given `random.Random`.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator, Sequence
from typing import Any


def deep(levels: int, opening: str = "[", closing: str = "]") -> str:
    """JSON text nested `levels` deep."""
    return opening * levels + closing * levels


# Valid arguments of each built-in tool, the base that hostile values replace.
BUILTIN_ARGUMENTS: dict[str, dict[str, Any]] = {
    "send_message": {"message": "Hello"},
    "core_memory_append": {"label": "human", "content": "Likes tea", "request_heartbeat": False},
    "core_memory_replace": {"label": "human", "old_content": "tea", "new_content": "coffee"},
    "conversation_search": {"query": "tea", "page": 0},
    "conversation_search_date": {"start_date": "2024-01-01", "end_date": "2040-01-01"},
    "archival_memory_insert": {"content": "A note about tea", "tags": ["drinks"]},
    "archival_memory_search": {
        "query": "tea",
        "page": 0,
        "tags": ["drinks"],
        "start_date": "2024-01-01",
        "end_date": "2040-01-01",
    },
}

HOSTILE_STRINGS = [
    "\ud800",
    "a\udfffb",
    "\ud83d\ude00",  # a pair, as hand-decoded UTF-16 leaves it: one emoji
    "\ude00\ud83d",  # the same halves the wrong way round: two lone surrogates
    "\x00\x01\x1b[2J\x7f\u202e",
    "",
    " \n\t",
    '"\\',
    'NEAR(a b) OR * AND "x',
    "2024-13-45",
    "y" * 20_000,
]
# JSON text for one value: every hostile string escaped (json.dumps), those
# with surrogates also raw (the transport escapes them), and hostile literals.
HOSTILE_VALUES = [
    *(json.dumps(text) for text in HOSTILE_STRINGS),
    *(json.dumps(text, ensure_ascii=False) for text in HOSTILE_STRINGS[:4]),
    "9" * 5000,
    "-" + "9" * 5000,
    "NaN",
    "Infinity",
    "-Infinity",
    "1e999",
    str(10**30),
    "1e300",
    "-1",
    "true",
    "null",
    "[]",
    "{}",
    deep(65),
    deep(10_000),
    deep(100_000, '{"a":', "}").replace("}", "1}", 1),
    '["\\ud800", {"\\udc00": "\\ud83d\\ude00"}]',
]
HOSTILE_ARGUMENTS = [
    "",
    "   ",
    "{",
    '{"message": ',
    "null",
    "[]",
    '"text"',
    "5",
    "NaN",
    '{"message": "x"} trailing',
    "{'message': 'x'}",
    "\ud800",
    '{"\\ud800": 1}',
    deep(100_000),
    "z" * 50_000,
    '{"message": "a", "message": "b"}',
]


def hostile_arguments(valid: dict[str, Any], rng: random.Random) -> list[str]:
    """Tool-call arguments (JSON text, as a model sends it) for a tool whose
    `valid` arguments are given: whole hostile texts, then `valid` with each
    parameter in turn given hostile values, then unexpected keys."""
    found = list(HOSTILE_ARGUMENTS)
    for key in valid:
        for value in rng.sample(HOSTILE_VALUES, 6):
            pairs = [
                f"{json.dumps(k)}: {value if k == key else json.dumps(v)}" for k, v in valid.items()
            ]
            found.append("{" + ", ".join(pairs) + "}")
    found.append(json.dumps({**valid, "\ud800": 1}, ensure_ascii=False))
    found.append(json.dumps({**valid, **{f"extra{i}": i for i in range(2000)}}))
    return found


# What Python makes of the argv bytes b"x\xff\xfey\xed\xa0\x80z" (surrogateescape).
ARGV_BYTES = b"x\xff\xfey\xed\xa0\x80z"
ARGV_TEXT = os.fsdecode(ARGV_BYTES)


def _json_paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    children = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value[:2])
        if isinstance(value, list)
        else ()
    )
    for key, child in children:
        yield from _json_paths(child, (*prefix, key))


_RAW = "@@hostile@@"


def _with(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return copy


FILE_VALUES: list[Any] = [
    "\ud800",
    "a\udfffb",
    "\x00\x1b",
    2**63,
    -(2**63) - 1,
    10**4000,
    -1,
    1.5,
    True,
    None,
    [],
    {},
    [["x"]],
    "9999-99-99",
]
FILE_RAW_VALUES = [
    "9" * 5000,
    "NaN",
    "-Infinity",
    "1e999",
    deep(100_000),
    deep(70),
    '"\\udc00\\ud800"',
]


def hostile_files(
    rng: random.Random, bases: Sequence[tuple[str, Any]]
) -> Iterator[tuple[str, bytes]]:
    """(what, file bytes): each of the agent files `bases` (name, parsed JSON)
    with hostile values in random places, cut short, doubly encoded and with
    raw surrogate bytes; then files that are not agent files at all."""
    for name, base in bases:
        places = list(_json_paths(base))
        for place in rng.sample(places, min(8, len(places))):
            new = rng.choice(FILE_VALUES)
            yield (
                f"{name} {place} = {new!r:.20}",
                json.dumps(_with(base, place, new)).encode("utf-8", "surrogatepass"),
            )
            raw_value = rng.choice(FILE_RAW_VALUES)
            text = json.dumps(_with(base, place, _RAW)).replace(json.dumps(_RAW), raw_value)
            yield f"{name} {place} = {raw_value:.20}", text.encode()
        full = json.dumps(base)
        cut = rng.randrange(1, len(full))
        yield f"{name} cut at {cut}", full[:cut].encode()
        yield f"{name} as a string", json.dumps(json.dumps(base)).encode()
        yield f"{name} with raw surrogate bytes", full.encode().replace(b'"', b'"\xed\xa0\x80', 3)
    for raw_value in FILE_RAW_VALUES:
        yield f"whole file {raw_value:.20}", raw_value.encode()
    yield "binary", bytes(rng.randrange(256) for _ in range(4000))
    yield "empty", b""
