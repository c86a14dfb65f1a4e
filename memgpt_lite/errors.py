"""The one small error hierarchy. Everything memgpt_lite raises on purpose is a
`MemGPTError`, so callers (and the CLI) can catch exactly these and let real
bugs surface as tracebacks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError


class MemGPTError(Exception):
    """Base class of every error memgpt_lite raises on purpose."""


class ConfigError(MemGPTError):
    """Bad or missing settings: no API key, an unknown model option, bad input."""


class TooLargeError(ConfigError):
    """A message, or a request, over a size limit the server sets."""


class NotFoundError(MemGPTError):
    """An agent, block, message or passage that does not exist."""


class AlreadyExistsError(MemGPTError):
    """A name that must be unique is taken."""


class StoreError(MemGPTError):
    """The database cannot be used: not SQLite, corrupt, locked too long, full."""


class ReadOnlyError(StoreError):
    """A write to a database this process may only read."""


class BusyError(StoreError):
    """Another connection kept the database locked longer than the busy timeout."""


class ConflictError(MemGPTError):
    """Another process (or another `Agent` object) changed what this one was
    about to write over: a stale copy of an agent, or a step lock taken over."""


class ApprovalError(ConflictError):
    """A message sent while a tool call waits for the user's approval, or an
    approval that answers no call waiting."""


class LLMError(MemGPTError):
    """The model endpoint failed after retries, or answered with an error."""


class RemoteError(MemGPTError):
    """A server reached on the user's behalf, other than the model endpoint
    (an MCP server), could not be started, reached or understood."""


class ContextBudgetError(MemGPTError):
    """Even the system message and core memory do not fit the context window."""


class ContextFullError(ContextBudgetError):
    """The messages of the step in progress no longer fit beside the system
    message. The loop ends such a step (stop reason "context_full") once the
    model has answered at least once; the next step can compact it away."""


class ModelRetry(MemGPTError):
    """Raised by a tool to tell the model to try again, with the reason.

    The loop turns it into the tool's result, for example
    ``raise ModelRetry("block 'human' is full: shorten it or use archival memory")``.
    """


# pydantic puts this before the text of a ValueError raised in a validator;
# our validators' texts are written for users, so it is dropped.
_VALUE_ERROR_PREFIX = "Value error, "


def validation_message(error: Mapping[str, Any]) -> str:
    """One problem of a pydantic `ValidationError` (an item of `exc.errors()`)
    as users read it: the message without pydantic's "Value error, "."""
    message = str(error["msg"])
    if error.get("type") == "value_error" and message.startswith(_VALUE_ERROR_PREFIX):
        return message[len(_VALUE_ERROR_PREFIX) :]
    return message


def validation_messages(exc: ValidationError) -> str:
    """Every problem of a pydantic `ValidationError`, in one line."""
    return "; ".join(validation_message(e) for e in exc.errors(include_url=False))


def is_interrupt(exc: BaseException) -> bool:
    """Ctrl-C, also as Python 3.11 reports one that lands inside a class's
    `__set_name__` (a library defining its classes as a command imports it):
    wrapped in a RuntimeError."""
    return isinstance(exc, KeyboardInterrupt) or (
        isinstance(exc, RuntimeError) and isinstance(exc.__cause__, KeyboardInterrupt)
    )
