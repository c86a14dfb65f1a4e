"""Read-only values of the data model, for objects that many readers share:
a list (`FrozenList`), and a message with its tool calls as a store keeps
it between reads of a context window (`KeptMessage`, `KeptToolCall`).
Pydantic's `frozen` refuses every change made through a model's own API;
going around it (`object.__setattr__`, writing `__dict__`) is not supported.
"""

from __future__ import annotations

from typing import Any, NoReturn

from pydantic import ConfigDict

from memgpt_lite.models import Message, ToolCall


def refuse_change(*_: object, **__: object) -> NoReturn:
    raise TypeError("this is read-only: shared with other readers; change a copy of it")


class FrozenList(list):  # type: ignore[type-arg]
    """A list that cannot be changed in place (the tool calls of a request
    message or of a `KeptMessage`). Pickled or copied, a plain list."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = refuse_change
    append = extend = insert = pop = remove = clear = sort = reverse = refuse_change

    def __reduce__(self) -> tuple[type, tuple[list[Any]]]:
        return list, (list(self),)


class KeptToolCall(ToolCall):
    """A tool call of a `KeptMessage`: read-only."""

    model_config = ConfigDict(frozen=True)

    def __eq__(self, other: object) -> bool:
        # Equal to a ToolCall of the same values, as its copy is (pydantic's
        # own == also wants the same class).
        return self.__dict__ == other.__dict__ if isinstance(other, ToolCall) else NotImplemented


class KeptMessage(Message):
    """A message as a store keeps it between reads of a context window and
    hands it to every reader (`Storage.window`): read-only, its tool calls
    `KeptToolCall`s in a `FrozenList`, so one reader cannot change what the
    next one reads. `Message.model_validate(m.model_dump())` is a copy that
    may be changed (`Storage.messages_from` hands out such copies)."""

    model_config = ConfigDict(frozen=True)

    def __eq__(self, other: object) -> bool:
        # As KeptToolCall's: a Message of the same values is equal.
        return self.__dict__ == other.__dict__ if isinstance(other, Message) else NotImplemented
