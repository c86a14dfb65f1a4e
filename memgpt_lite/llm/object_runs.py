"""Finding the part of a list that a list kept from last time still has,
object for object (by identity, never `==`), in C.

Each turn hands the window's thousands of messages down again, mostly the
same objects as last turn: some may have left from the front (compaction),
a few are new at the end. What was built for them last turn is found by
comparing the two lists with `operator.is_not` mapped over them, which runs
in C with no Python call per message (`==` would be faster still, but it
compares messages by value: one changed in place since and another equal
to it now would pass for each other); only the messages around a change
are walked in Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice, repeat
from operator import indexOf, is_, is_not


def common_run(kept: Sequence[object], objects: Sequence[object]) -> tuple[int, int]:
    """Where `objects` starts in `kept`, and how far they agree from there:
    `(at, run)` with `objects[i] is kept[at + i]` for every `i < run`, `run`
    as long as it goes; `(0, 0)` when the first of `objects` is not in `kept`."""
    at = find(kept, objects[0]) if objects else -1
    return (at, run_length(kept, at, objects, 0)) if at >= 0 else (0, 0)


def find(kept: Sequence[object], item: object) -> int:
    """The first index of the very object `item` in `kept`, or -1."""
    try:
        return indexOf(map(is_, kept, repeat(item)), True)
    except ValueError:
        return -1


def run_length(kept: Sequence[object], at: int, objects: Sequence[object], start: int) -> int:
    """How many of `objects`, from `start` on, are the very objects of
    `kept` from `at` on, one for one."""
    limit = min(len(kept) - at, len(objects) - start)
    if limit <= 0 or objects[start] is not kept[at]:
        return 0
    ours = objects if start == 0 else islice(objects, start, None)  # no copy
    if not any(map(is_not, ours, islice(kept, at, at + limit))):
        return limit
    ours = objects if start == 0 else islice(objects, start, None)
    return indexOf(map(is_not, ours, islice(kept, at, at + limit)), True)  # the first that differs
