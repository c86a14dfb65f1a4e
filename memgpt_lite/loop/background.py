"""Work in a thread of its own, at most one at a time per key in this
process: an agent's reflection (reflection.py), a sleep-time group's pass
(agent/sleeptime.py). Nobody waits for it unless they ask (`wait`)."""

from __future__ import annotations

import threading
from collections.abc import Callable


class OnePerKey:
    """The threads running now, by key; `name` prefixes each thread's name."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._running: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()

    def start(self, key: str, work: Callable[[], None]) -> threading.Thread | None:
        """Run `work` in a thread of its own, unless work of `key` runs
        already (None then). `work` handles its own failures."""

        def run() -> None:
            try:
                work()
            finally:
                with self._lock:
                    self._running.pop(key, None)

        with self._lock:
            if key in self._running:
                return None
            thread = threading.Thread(target=run, name=f"{self._name}-{key}", daemon=True)
            self._running[key] = thread
        thread.start()
        return thread

    def wait(self, key: str, timeout: float | None = None) -> bool:
        """Wait for the work of `key`, if it runs; False if it still runs
        after `timeout` seconds."""
        with self._lock:
            thread = self._running.get(key)
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()
