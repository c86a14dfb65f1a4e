"""How both backends word what goes wrong with the database itself: a
one-line StoreError (memgpt_lite.errors) in place of the driver's exception,
which is let through as it is for anything else (an SQL bug keeps its
traceback). Each backend words its own driver's errors (`file_problem`,
`server_problem`); this is what their wording shares."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from memgpt_lite.errors import NotFoundError, StoreError

NOTHING_CHANGED = "nothing was changed"
Wording = Callable[[BaseException], StoreError | None]


@contextmanager
def worded(errors: tuple[type[BaseException], ...], wording: Wording) -> Iterator[None]:
    """Raise `errors` as `wording` words them; those it does not (None) as
    they are."""
    try:
        yield
    except errors as exc:
        problem = wording(exc)
        if problem is None:
            raise
        raise problem from None


NO_PASSAGE = "no passage {!r} in this agent's archival memory"
NO_MESSAGE = "no message with id {!r}"


def unknown_agent(agent_id: str) -> NotFoundError:
    """For an item of an agent that does not exist (deleted meanwhile by
    another process, say): one line, not a foreign-key error."""
    return NotFoundError(f"no agent with id {agent_id!r}")
