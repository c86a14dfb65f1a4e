"""Tests that run alone while pytest-xdist runs the others side by side.

A test marked `alone` asserts something within a sub-second limit (a request
that must still be answered under a 0.4 s deadline, a chunk that must arrive
before a 0.3 s timeout): on 2 cores, the other worker's processes and
databases can hold its thread up that long. While it runs, no other test
does; the other tests run side by side as usual.

The workers of one run share two lock files in the run's temporary folder
(each worker's own is a folder in it). A test holds `running` shared, an
`alone` test exclusively. An `alone` test first takes `gate`, which the others
pass through on their way in, so that it waits only for the tests already
running, not for every test that comes after them.

Each wait for the running tests to end leaves the other workers idle, so the
`alone` tests come first in the collection (`alone_first`): pytest-xdist
sends each worker a run of the tests in order, so one worker gets them all,
and it keeps the locks from one to the next (the next test a worker runs is
known, and taken from its queue, before the current one starts): one wait,
not one per test.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO

import pytest

MARKER = "alone"
DESCRIPTION = f"{MARKER}: runs while no other test runs (it asserts within a sub-second limit)"

_files: dict[str, IO[bytes]] = {}


def _lock_file(folder: Path, name: str) -> IO[bytes]:
    if name not in _files:
        _files[name] = (folder / f"xdist-{name}.lock").open("ab")
    return _files[name]


@contextmanager
def _held(file: IO[bytes], mode: int) -> Iterator[None]:
    fcntl.flock(file, mode)
    try:
        yield
    finally:
        fcntl.flock(file, fcntl.LOCK_UN)


def is_alone(item: pytest.Item | None) -> bool:
    return item is not None and item.get_closest_marker(MARKER) is not None


def alone_first(items: list[pytest.Item]) -> None:
    """Put the `alone` tests first, the rest in their order."""
    items.sort(key=lambda item: not is_alone(item))


# The locks an `alone` test took (one ExitStack, or none), kept while the
# next test is `alone` too.
_kept: list[ExitStack] = []


def _release_kept() -> None:
    while _kept:
        _kept.pop().close()


@contextmanager
def turn(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Run `item` alone if it is marked so, else beside other such tests."""
    # pytest-xdist gives each worker the temporary folder popen-gwN inside
    # the run's; in one process (`-n 0`) every test runs alone anyway.
    own_folder = item.config.option.basetemp
    if "PYTEST_XDIST_WORKER" not in os.environ or not own_folder:
        yield
        return
    folder = Path(own_folder).parent
    gate, running = _lock_file(folder, "gate"), _lock_file(folder, "running")
    if is_alone(item):
        if not _kept:
            locks = ExitStack()
            locks.enter_context(_held(gate, fcntl.LOCK_EX))
            locks.enter_context(_held(running, fcntl.LOCK_EX))
            _kept.append(locks)
        try:
            yield
        finally:
            if not is_alone(nextitem):
                _release_kept()
        return
    _release_kept()  # only if the `alone` test before was interrupted
    with _held(gate, fcntl.LOCK_SH):
        fcntl.flock(running, fcntl.LOCK_SH)
    try:
        yield
    finally:
        fcntl.flock(running, fcntl.LOCK_UN)
