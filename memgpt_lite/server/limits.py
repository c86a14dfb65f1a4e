"""The server's limits: the size of a request body and of a message sent,
and an optional rate limit per key.

- A body over `max_body_bytes` is a 413 before it is read whole (app.py's
  `BodyLimit`); a message whose text is over `max_message_bytes` (UTF-8) is
  a 413 before its step starts (`check_message`). Either way nothing is
  stored.
- `rate_limit` ("N/s" or "N/min"): each key may make N requests in the
  period, in bursts of up to N (a token bucket per key, refilled evenly);
  one more is a 429 with `Retry-After` (whole seconds) and
  `x-should-retry: true`. The bucket is this process's: with `--workers W`
  a key may make up to W times N. /health is never limited, nor the web
  app's page and files (`/`, `/app/...`: files from the package, which no
  key asks for, loaded a dozen at once).

`memgpt-lite serve` resolves them from its flags and config.toml's `[serve]`
table (cli/serve.py) and hands them to the workers' apps as JSON
(`limits_to_environment`).
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Self

from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.types import ASGIApp, Receive, Scope, Send

from memgpt_lite.errors import ConfigError, TooLargeError
from memgpt_lite.models import Approval, StepInput
from memgpt_lite.server.webapp.mount import FILES_PATH
from memgpt_lite.settings.effective import ServeFileConfig
from memgpt_lite.step_input import GroupTurn, plain_input

# Request bodies larger than this are refused (agent files are the largest).
DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024
# A message's text larger than this is refused.
DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024
# Keys whose buckets are kept; the least recently seen are forgotten (a
# forgotten key starts again with a full bucket).
KEPT_BUCKETS = 10_000

_PERIODS = {"s": 1.0, "sec": 1.0, "second": 1.0, "m": 60.0, "min": 60.0, "minute": 60.0}
_RATE = re.compile(r"^\s*(\d+)\s*/\s*([a-z]+)\s*$")


class RateLimit(BaseModel):
    """At most `requests` per `period_seconds` per key."""

    model_config = ConfigDict(frozen=True)

    requests: int = Field(gt=0)
    period_seconds: float = Field(gt=0)

    @classmethod
    def parse(cls, text: str, source: str) -> Self:
        """ "10/s" or "600/min"; a ConfigError naming `source` otherwise."""
        match = _RATE.match(text.lower())
        if match is None or match.group(2) not in _PERIODS or int(match.group(1)) == 0:
            raise ConfigError(
                f"{source}: {text!r} is not a rate: give requests per second or per minute, "
                'such as "10/s" or "600/min"'
            )
        return cls(requests=int(match.group(1)), period_seconds=_PERIODS[match.group(2)])

    def __str__(self) -> str:
        return f"{self.requests}/{'s' if self.period_seconds == 1 else 'min'}"


class ServerLimits(BaseModel):
    """The limits one server applies (see the module's doc)."""

    model_config = ConfigDict(frozen=True)

    max_body_bytes: int = Field(default=DEFAULT_MAX_BODY_BYTES, gt=0)
    max_message_bytes: int = Field(default=DEFAULT_MAX_MESSAGE_BYTES, gt=0)
    rate_limit: RateLimit | None = None

    def check_message(self, message: StepInput) -> None:
        """A 413 (TooLargeError) for a message, an approval's reason or a
        client-side tool's result over `max_message_bytes`."""
        message = plain_input(message)
        if isinstance(message, str):
            texts = [message]
        elif isinstance(message, GroupTurn):
            texts = [said.content for said in message.said]
        else:
            answers = [message] if isinstance(message, Approval) else message
            texts = [a.reason if isinstance(a, Approval) else a.content for a in answers]
        for text in texts:
            size = len(text.encode("utf-8", "surrogatepass"))
            if size > self.max_message_bytes:
                raise TooLargeError(
                    f"the message is {size} bytes, over the server's limit of "
                    f"{self.max_message_bytes} (serve --max-message-bytes)"
                )


class RateLimiter:
    """Refuses a key's requests over `limit` with 429 (see the module's doc).
    The key is told apart by a hash of its `Authorization` header, before
    any look-up: a refused request costs no database work."""

    def __init__(self, app: ASGIApp, limit: RateLimit) -> None:
        self.app, self.limit = app, limit
        self.refill_per_second = limit.requests / limit.period_seconds
        # Per key: the tokens left and when they were counted.
        self.buckets: OrderedDict[bytes, tuple[float, float]] = OrderedDict()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _unlimited(scope["path"]):
            await self.app(scope, receive, send)
            return
        wait = self._take(dict(scope["headers"]).get(b"authorization", b""))
        if wait <= 0:
            await self.app(scope, receive, send)
            return
        retry_after = max(1, math.ceil(wait))
        detail = (
            f"the rate limit of {self.limit} requests per key is reached: "
            f"retry after {retry_after} s"
        )
        headers = {"Retry-After": str(retry_after), "x-should-retry": "true"}
        await JSONResponse({"detail": detail}, status_code=429, headers=headers)(
            scope, receive, send
        )

    def _take(self, authorization: bytes) -> float:
        """Takes a token from the key's bucket: 0, or the seconds until one is there."""
        key = hashlib.sha256(authorization).digest()
        now = time.monotonic()
        tokens, counted = self.buckets.pop(key, (float(self.limit.requests), now))
        tokens = min(float(self.limit.requests), tokens + (now - counted) * self.refill_per_second)
        wait = 0.0 if tokens >= 1 else (1 - tokens) / self.refill_per_second
        self.buckets[key] = (tokens - 1 if wait == 0 else tokens, now)
        while len(self.buckets) > KEPT_BUCKETS:
            self.buckets.popitem(last=False)
        return wait


def _unlimited(path: str) -> bool:
    return path in ("/health", "/") or path.startswith(f"{FILES_PATH}/")


# What hands the limits `serve` resolved to the apps of its workers, as JSON.
LIMITS_VARIABLE = "MEMGPT_LITE_SERVE_LIMITS"


def resolve_limits(
    max_body_bytes: int | None,
    max_message_bytes: int | None,
    rate_limit: str | None,
    configured: ServeFileConfig,
    config_source: str,
) -> ServerLimits:
    """The limits from `serve`'s flags, else config.toml's [serve] table
    (`configured`, read from `config_source`), else the defaults."""
    rate_text, rate_source = rate_limit, "--rate-limit"
    if rate_text is None:
        rate_text, rate_source = configured.rate_limit, f"{config_source}: serve.rate_limit"
    body = max_body_bytes or configured.max_body_bytes or DEFAULT_MAX_BODY_BYTES
    message = max_message_bytes or configured.max_message_bytes or DEFAULT_MAX_MESSAGE_BYTES
    return ServerLimits(
        max_body_bytes=body,
        max_message_bytes=message,
        rate_limit=None if rate_text is None else RateLimit.parse(rate_text, rate_source),
    )


def limits_from_environment(environ: Mapping[str, str]) -> ServerLimits:
    """The limits `serve` handed its workers (the defaults if none)."""
    return ServerLimits.model_validate_json(environ.get(LIMITS_VARIABLE) or "{}")
