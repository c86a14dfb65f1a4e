"""Read-only request messages, and request bodies encoded from their JSON.

A long context window sends the same thousands of messages on every turn. A
`RequestMessage` is one of them as the request carries it, built once for a
stored message (see `TokenCounter.sent`) and sent again on later turns; it
cannot be changed in place (a model that did would change what every later
request sends), so its JSON is encoded once and kept with it, and a body is
mostly a join of those pieces (`encode_request`).

A copy (`dict(message)`, `copy.deepcopy`, pickling) is an ordinary dict that
may be changed.

A model's `BodyEncoder` also keeps the last body's pieces: a turn sends
mostly the very `RequestMessage` objects of the last one, so their pieces
are taken over in runs found in C (llm/object_runs.py), and only the other
messages are walked in Python.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from memgpt_lite.frozen import FrozenList, refuse_change
from memgpt_lite.llm.object_runs import find, run_length


class RequestMessage(dict):  # type: ignore[type-arg]
    """One message of a chat request, read-only (nested values too), with
    its JSON encoded once. Equal to the plain dict of the same content."""

    __slots__ = ("_json",)
    __setitem__ = __delitem__ = __ior__ = refuse_change
    clear = pop = popitem = setdefault = update = refuse_change

    def __init__(self, message: Mapping[str, Any]) -> None:
        super().__init__((key, frozen(value)) for key, value in message.items())
        self._json: bytes | None = None

    def json(self) -> bytes:
        """The message as compact JSON, encoded on the first call."""
        if self._json is None:
            self._json = compact_json(self)
        return self._json

    def __reduce__(self) -> tuple[type, tuple[dict[str, Any]]]:
        return dict, (dict(self),)


_ATOMS = frozenset({str, int, float, bool, type(None)})


def frozen(value: Any) -> Any:
    """`value` with its dicts and lists made read-only, all the way down."""
    if type(value) in _ATOMS or isinstance(value, RequestMessage | FrozenList):
        return value  # the common cases first: this runs for every value of the window
    if isinstance(value, Mapping):
        return RequestMessage(value)
    if isinstance(value, list | tuple):
        return FrozenList(frozen(item) for item in value)
    return value


def _jsonable(value: Any) -> Any:
    # What the openai client's own encoder also accepts in a body.
    if isinstance(value, datetime):
        return value.isoformat()
    if callable(model_dump := getattr(value, "model_dump", None)):  # pydantic, not imported
        return model_dump(mode="json", exclude_unset=True, by_alias=True)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def compact_json(value: Any) -> bytes:
    """`value` as the openai client encodes a body: UTF-8 JSON, no spaces,
    no NaN or infinity."""
    text = json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_jsonable
    )
    return text.encode()


def encode_request(request: Mapping[str, Any]) -> bytes:
    """The body of `request` (a chat completions request) as `compact_json`
    encodes it, but with the JSON each `RequestMessage` keeps: only the other
    messages and fields are encoded now."""
    messages = request.get("messages")
    if not isinstance(messages, list):
        return compact_json(request)
    pieces = [m.json() if type(m) is RequestMessage else compact_json(m) for m in messages]
    return _body(request, pieces)


def _body(request: Mapping[str, Any], pieces: list[bytes]) -> bytes:
    """`request` encoded, with `pieces` the JSON of its messages."""
    rest = compact_json({key: value for key, value in request.items() if key != "messages"})
    head, tail = b'{"messages":[', b"]}" if rest == b"{}" else b"]," + rest[1:]
    if len(pieces) < 2:
        return head + b"".join(pieces) + tail
    # One join: the long body is copied once (each `+` copied it again).
    return b",".join([head + pieces[0], *pieces[1:-1], pieces[-1] + tail])


class BodyEncoder:
    """`encode_request` for one model, keeping the pieces of the last body's
    messages to take over (see the module's docstring). Safe to share
    between threads: what is kept is read and replaced whole."""

    def __init__(self) -> None:
        # The last body's RequestMessages (None in the place of others, which
        # are encoded anew each time: a plain dict may have changed), and the
        # JSON of each of its messages: lists never changed once kept.
        self._last: tuple[list[RequestMessage | None], list[bytes]] = ([], [])

    def encode(self, request: Mapping[str, Any]) -> bytes:
        messages = request.get("messages")
        if not isinstance(messages, list):
            return compact_json(request)
        return _body(request, self._pieces(messages))

    def _pieces(self, messages: list[Any]) -> list[bytes]:
        """The JSON of each of `messages`. The first RequestMessage is looked
        for in the last body; from there on, runs that agree with it are
        taken over, and a message in between (one clipped anew each turn) is
        encoded on its own without losing the thread."""
        kept, kept_pieces = self._last
        frozen: list[RequestMessage | None] = []
        pieces: list[bytes] = []
        i, at, searched = 0, 0, False
        while i < len(messages):
            run = run_length(kept, at, messages, i) if searched else 0
            if run:
                frozen += kept[at : at + run]
                pieces += kept_pieces[at : at + run]
                i, at = i + run, at + run
                continue
            message = messages[i]
            is_frozen = type(message) is RequestMessage
            if is_frozen and not searched:
                searched, at = True, find(kept, message)
                if at >= 0:
                    continue
                at = len(kept)  # not there: nothing further agrees
            frozen.append(message if is_frozen else None)
            pieces.append(message.json() if is_frozen else compact_json(message))
            i, at = i + 1, at + 1
        self._last = (frozen, pieces)
        return pieces
