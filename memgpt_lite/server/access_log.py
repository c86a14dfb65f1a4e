"""One access-log line per request: method, path, status, milliseconds and
the user its key names, logged at INFO by `memgpt_lite.access` when the
response ends (a streamed one too, so its time is the stream's):

    GET /v1/agents 200 3.1ms user=alice

Never a key, a query string or a body: the path alone (as sent, still
percent-encoded, so no character of it can break the line), and `user=-`
for a request that named no known key. The user is noted by whatever
checks the key (`note_user`: context.py's dependency, /mcp's guard).
`serve --log-level` sets the level (cli/serve.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import MutableMapping
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

ACCESS_LOGGER = "memgpt_lite.access"
# Where the request's entry is kept in its ASGI scope (copies of the scope,
# made by mounts, keep the same entry).
_ENTRY_KEY = "memgpt_lite.access"
_log = logging.getLogger(ACCESS_LOGGER)


@dataclass
class _Entry:
    user: str = "-"
    status: int = 500  # what the client gets if the app raises before answering


def note_user(scope: MutableMapping[str, object], user: str) -> None:
    """Record the user a request's key names, for its access-log line."""
    entry = scope.get(_ENTRY_KEY)
    if isinstance(entry, _Entry):
        entry.user = user


def _printable(text: str) -> str:
    """`text` with anything but printable ASCII (and spaces) as `?`: one line, always."""
    return "".join(c if c.isascii() and c.isprintable() and c != " " else "?" for c in text)


def _path(scope: Scope) -> str:
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if isinstance(raw, bytes) else str(scope.get("path", ""))
    return _printable(path.partition("?")[0]) or "/"


class AccessLog:
    """The ASGI middleware that writes the lines; outermost, so a request
    refused by another middleware (a body over the limit) is logged too."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _log.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        entry = _Entry()
        scope[_ENTRY_KEY] = entry
        started = time.perf_counter()

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                entry.status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            method = _printable(str(scope.get("method", "-")))
            user = _printable(entry.user)
            _log.info("%s %s %d %.1fms user=%s", method, _path(scope), entry.status, elapsed, user)
