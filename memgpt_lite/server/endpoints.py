"""Which model endpoints an agent created or changed over HTTP may use.

A key holder who could point an agent at any URL could make the server
connect to any host it reaches (its own network, a cloud's metadata
address) and read the answer back through the errors of a send, or learn
which ports are open. So a URL that comes with a request (our API's
`base_url`, Letta's `llm_config.model_endpoint`, an imported file's base URL,
an HTTP MCP server's URL) is checked before anything is stored, and before anything connects to it:
it must be the server's own endpoint ($OPENAI_BASE_URL, or `base_url` in
config.toml) or one its operator allows (`serve --allow-endpoint URL`,
`allow_endpoints` in config.toml). Anything else is a 403 naming the rule.

URLs are compared as the HTTP client that connects will read them (httpx2,
which the openai client uses: llm/endpoint.py): scheme, host, port (the scheme's default
made explicit) and path without its trailing slash. A URL written another
way that reaches the same place (`127.1` for `127.0.0.1`) is refused, never
let through: the list says exactly what may be reached.

The command line is not a client: agents it creates keep any endpoint.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import httpx2  # not httpx, whose import brings its command line (rich): 0.1 s

from memgpt_lite.errors import ConfigError, MemGPTError
from memgpt_lite.settings.endpoint import check_base_url

ENDPOINT_RULE = (
    "an agent may use the server's own model endpoint, or one the server's operator "
    "allows with `memgpt-lite serve --allow-endpoint URL` (or `allow_endpoints` in config.toml)"
)
_DEFAULT_PORTS = {"http": 80, "https": 443}


class EndpointNotAllowed(MemGPTError):
    """A model endpoint the server does not allow: a 403 naming the rule
    (app.py STATUS_BY_ERROR)."""


def endpoint_identity(url: str, where: str) -> tuple[str, str, int, str]:
    """Where a request to `url` goes, as httpx2 reads it: (scheme, host,
    port, path without its trailing slash). A URL that is not http(s) or
    cannot be read is a ConfigError naming `where` (a 422)."""
    text = check_base_url(url, where)
    try:
        parsed = httpx2.URL(text)
    except httpx2.InvalidURL as exc:
        raise ConfigError(f"{where} {url!r} is not a valid URL ({exc})") from None
    scheme = parsed.scheme.lower()
    port = parsed.port or _DEFAULT_PORTS[scheme]
    return scheme, parsed.host.lower(), port, parsed.raw_path.decode("ascii").rstrip("/")


Identity = tuple[str, str, int, str]


@dataclass(frozen=True)
class AllowedEndpoints:
    """The endpoints agents made over HTTP may use, each as
    `endpoint_identity` reads it: the server's own (`own`, what an agent
    without a base URL of its own uses) and those the operator allowed."""

    own: Identity
    identities: frozenset[Identity]
    # The URLs as given, the server's own first, one per identity: where the
    # model list (model_list.py) asks each endpoint for its models.
    urls: tuple[str, ...] = ()

    @classmethod
    def of(cls, own: str, extra: Iterable[str] = ()) -> AllowedEndpoints:
        """The server's endpoint `own` and the `extra` ones allowed, each
        checked (a bad one is a ConfigError naming it: the server stops)."""
        own_identity = endpoint_identity(own, "the server's endpoint")
        by_identity = {own_identity: own.strip()}
        for url in extra:
            by_identity.setdefault(endpoint_identity(url, "the allowed endpoint"), url.strip())
        return cls(own_identity, frozenset(by_identity), tuple(by_identity.values()))

    def is_own(self, url: str) -> bool:
        """Whether `url` is the server's own endpoint, written any way httpx2
        reads as the same."""
        return endpoint_identity(url, "the URL") == self.own

    def check(self, url: object, where: str) -> str | None:
        """`url` (stripped) if an agent made over HTTP may use it, None for
        None (the server's own endpoint); else a 403 naming the rule, or a
        422 for a URL that is not http(s). `where` names the field."""
        if url is None:
            return None
        if not isinstance(url, str):
            raise ConfigError(f"{where}: give a URL, for example http://localhost:11434/v1")
        if endpoint_identity(url, where) not in self.identities:
            raise EndpointNotAllowed(f"{where} {url.strip()!r} is not allowed: {ENDPOINT_RULE}")
        return url.strip()
