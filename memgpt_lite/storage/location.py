"""Where a database is, as people may be shown it: never with its password."""

from __future__ import annotations

import os
import re
from urllib.parse import parse_qsl, urlsplit

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_PASSWORD_IN_QUERY = re.compile(r"(?i)(password=)[^&]*")


def is_url(location: str | os.PathLike[str]) -> bool:
    return bool(_URL.match(os.fspath(location)))


def redacted(location: str | os.PathLike[str]) -> str:
    """`location` with any password replaced by ***; a path unchanged."""
    text = os.fspath(location)
    if not is_url(text):
        return text
    parts = urlsplit(text)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        netloc = f"{userinfo}@{host}"
    query = _PASSWORD_IN_QUERY.sub(r"\1***", parts.query)
    return parts._replace(netloc=netloc, query=query).geturl()


def describe(location: str | os.PathLike[str]) -> str:
    """How an error names the database: `database "mem" on host h:5432`, or the path."""
    text = os.fspath(location)
    if not is_url(text):
        return text
    parts = urlsplit(text)
    query = dict(parse_qsl(parts.query))
    database = parts.path.lstrip("/") or query.get("dbname") or "(default)"
    host = query.get("host") or parts.hostname or "localhost"
    port = query.get("port") or parts.port
    where = f"{host}:{port}" if port else host
    return f'database "{database}" on host {where}'
