"""Letta's cursor paging: `after` and `before` are ids of items in the
list's order, `limit` how many to return.

letta-client's pages follow on with `after=<the last item's id>` until a
page comes back empty, so an `after` past the end (or unknown: an item
deleted meanwhile) is an empty page, never the first page again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, TypeVar

T = TypeVar("T")

Order = Literal["asc", "desc"]


def window(
    items: Sequence[T],
    ident: Callable[[T], str],
    after: str | None,
    before: str | None,
) -> list[T]:
    """The items strictly between the cursors (in the list's order)."""
    ids = [ident(item) for item in items]
    start, end = 0, len(items)
    if after is not None:
        start = ids.index(after) + 1 if after in ids else len(items)
    if before is not None:
        end = ids.index(before) if before in ids else 0
    return list(items[start:end])


def page(
    items: Sequence[T],
    ident: Callable[[T], str],
    *,
    after: str | None = None,
    before: str | None = None,
    limit: int | None = None,
) -> list[T]:
    """One page: the first `limit` items after `after`, or with only
    `before`, the `limit` items just before it (for paging backwards)."""
    found = window(items, ident, after, before)
    if limit is None:
        return found
    if before is not None and after is None:
        return found[-limit:] if limit else []
    return found[:limit]


def effective_order(order: Order | None, ascending: bool | None, default: Order) -> Order:
    """Letta's `order`, or its older `ascending` flag when only that is given."""
    if order is not None:
        return order
    if ascending is not None:
        return "asc" if ascending else "desc"
    return default
