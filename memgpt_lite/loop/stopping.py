"""Asking a step to stop: a `StopRequest`, handed to the step that may be
stopped (`agent.step(message, stop=request)` and the other drivers).

A step stops only at a safe point, where what it stored is whole: before it
begins (nothing stored), before each request to the model (the user's
message stays stored, unanswered), and after the model answered, before
each tool call. An answer whose calls were not run yet is stored with a
result for each that says the call was not run, so the protocol holds
(every call answered once) and the model reads, next time, what happened.
A step stopped so ends with the stop reason "cancelled"; one that reached
its end first ends as it would have.

The request is asked from another thread (a server's route) while the
step runs in its own, and `asked_elsewhere` lets another process ask it
(the server reads the run's row): it is called at each safe point until it
says yes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

# What the model reads as the result of a call a stopped step did not run.
NOT_RUN = "Error: not run. The user cancelled the step before this call ran."


class StopRequest:
    """Whether a step was asked to stop. `stop()` asks it; `asked_elsewhere`,
    if given, is asked at each safe point too (once it says yes, the
    request stays made)."""

    def __init__(self, asked_elsewhere: Callable[[], bool] | None = None) -> None:
        self._asked = threading.Event()
        self._asked_elsewhere = asked_elsewhere

    def stop(self) -> None:
        self._asked.set()

    def requested(self) -> bool:
        if self._asked.is_set():
            return True
        if self._asked_elsewhere is not None and self._asked_elsewhere():
            self._asked.set()
            return True
        return False
