"""Agents' own API keys sealed at rest, and those of users' providers: a
row's `llm` never holds the plain key (`llm.api_key`), nor a provider's row
its `api_key`, only `sealed:` and a token of Fernet (AES-128-CBC with
an HMAC-SHA256, from the `cryptography` package) under the server secret.

The secret (settings/values.py `SecretSource`, resolved at the edge) is
$MEMGPT_LITE_SECRET when set (every process of a deployment gets the same
one: several servers on one PostgreSQL), else the file
`$MEMGPT_LITE_HOME/secret.key`, made (mode 0600) the first time a key is
sealed, and read by the command line and the server of that home alike.

Reading never needs the secret to succeed: a key this process cannot open
(no secret, another secret, no `cryptography`) stays sealed in memory and is
written back as it was, so nothing is lost; only a model request with it
fails, in one line (settings/endpoint.py `check_usable_key`). A row written
before keys were sealed holds the plain key until the agent is next written.
"""

from __future__ import annotations

import base64
import hashlib
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from memgpt_lite.errors import ConfigError
from memgpt_lite.models import STORED, LLMConfig
from memgpt_lite.settings.endpoint import SEALED_PREFIX
from memgpt_lite.settings.values import SECRET_ENV, SecretSource

if TYPE_CHECKING:
    from cryptography.fernet import Fernet

CRYPTOGRAPHY_NEEDED = (
    'sealing an agent\'s API key needs the server extra: pip install "memgpt-lite[server]"'
)
_CACHE_SIZE = 1024  # tokens and keys kept, so an unchanged key is not sealed anew at each write


class KeySealer:
    """Seals and opens the API keys of one store's agents."""

    def __init__(self, source: SecretSource | None) -> None:
        self.source = source
        self._fernet: Fernet | None = None
        self._lock = threading.Lock()
        self._sealed: dict[str, str] = {}  # plain key -> its token
        self._opened: dict[str, str] = {}  # token -> plain key

    def stored_llm(self, llm: LLMConfig) -> str:
        """`llm` as its row holds it: with the key sealed."""
        dumped: dict[str, Any] = llm.model_dump(mode="json", context=STORED)
        key = dumped.get("api_key")
        if key is not None and not key.startswith(SEALED_PREFIX):
            dumped["api_key"] = self._seal(key)
        return LLMConfig.model_validate(dumped).model_dump_json(context=STORED)

    def read_llm(self, text: str) -> LLMConfig:
        """A row's `llm`, its key opened if this process can open it."""
        llm = LLMConfig.model_validate_json(text)
        if llm.api_key is not None:
            token = llm.api_key.get_secret_value()
            if token.startswith(SEALED_PREFIX):
                plain = self._open(token)
                if plain is not None:
                    llm.api_key = SecretStr(plain)
        return llm

    def stored_key(self, key: SecretStr | None) -> str | None:
        """A key as its row holds it: sealed (a token still sealed stays as it is)."""
        if key is None:
            return None
        plain = key.get_secret_value()
        return plain if plain.startswith(SEALED_PREFIX) else self._seal(plain)

    def read_key(self, stored: str | None) -> SecretStr | None:
        """A row's key, opened if this process can open it, else still sealed."""
        if stored is None:
            return None
        opened = self._open(stored) if stored.startswith(SEALED_PREFIX) else None
        return SecretStr(stored if opened is None else opened)

    def _seal(self, key: str) -> str:
        with self._lock:
            token = self._sealed.get(key)
        if token is None:
            fernet = self._cipher(create=True)
            assert fernet is not None  # made when asked to create
            token = SEALED_PREFIX + fernet.encrypt(key.encode()).decode("ascii")
            self._remember(self._sealed, key, token)
            self._remember(self._opened, token, key)
        return token

    def _open(self, token: str) -> str | None:
        with self._lock:
            plain = self._opened.get(token)
        if plain is not None:
            return plain
        fernet = self._cipher(create=False)
        if fernet is None:
            return None
        from cryptography.fernet import InvalidToken

        try:
            plain = fernet.decrypt(token.removeprefix(SEALED_PREFIX).encode("ascii")).decode()
        except (InvalidToken, UnicodeError, ValueError):
            return None  # another secret's: kept sealed, refused at use
        self._remember(self._opened, token, plain)
        self._remember(self._sealed, plain, token)  # written back unchanged, the same token
        return plain

    def _remember(self, cache: dict[str, str], key: str, value: str) -> None:
        with self._lock:
            if len(cache) >= _CACHE_SIZE:
                cache.clear()
            cache[key] = value

    def _cipher(self, *, create: bool) -> Fernet | None:
        """The cipher of the secret; None if there is none (and `create` is
        false) or `cryptography` is missing and nothing need be sealed."""
        if self._fernet is not None:
            return self._fernet
        try:
            from cryptography.fernet import Fernet
        except ImportError:
            if create:
                raise ConfigError(CRYPTOGRAPHY_NEEDED) from None
            return None
        secret = self._secret(create)
        if secret is None:
            return None
        # Any text may be the secret: its SHA-256 is the cipher's key.
        self._fernet = Fernet(base64.urlsafe_b64encode(hashlib.sha256(secret).digest()))
        return self._fernet

    def _secret(self, create: bool) -> bytes | None:
        source = self.source
        if source is None:
            if create:
                raise ConfigError(
                    f"no secret to seal the agent's API key with: set ${SECRET_ENV}, or open "
                    "the database with the settings of this process"
                )
            return None
        if source.value:
            return source.value.encode()
        try:
            return _read_secret(source.file)
        except FileNotFoundError:
            return _make_secret(source.file) if create else None


def _read_secret(path: Path) -> bytes:
    try:
        text = path.read_bytes().strip()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ConfigError(f"cannot read the secret file {path}: {exc.strerror}") from None
    if not text:
        raise ConfigError(f"the secret file {path} is empty: delete it, or set ${SECRET_ENV}")
    return text


def _make_secret(path: Path) -> bytes:
    """A new random secret in `path`, readable by its owner only; if another
    process made it first, theirs (the link below never replaces a file)."""
    from cryptography.fernet import Fernet

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        draft = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(Fernet.generate_key() + b"\n")
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(draft, path)
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    except OSError as exc:
        raise ConfigError(f"cannot make the secret file {path}: {exc.strerror}") from None
    return _read_secret(path)
