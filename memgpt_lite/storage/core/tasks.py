"""Which asyncio task holds a store's transaction, for every backend.

Coroutines of one event loop share its thread, so a thread lock alone would
let a task's write join the transaction another task holds open across an
`await`. A store remembers the task that opened its transaction and refuses
another task's call while it is open (RuntimeError: a bug in the caller).
"""

from __future__ import annotations

import sys


def current_task() -> object | None:
    """The asyncio task running on this thread, if any (asyncio not even
    imported: none)."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    loop = asyncio.events._get_running_loop()
    return None if loop is None else asyncio.current_task(loop)


def check_task(opener: object) -> None:
    """Refuse a call from another asyncio task than the one whose transaction
    is open on this thread: it would join that transaction."""
    if current_task() is not opener:
        raise RuntimeError(
            "a store transaction is open in another asyncio task on this thread (held "
            "across an await); a transaction must end before its task awaits"
        )
