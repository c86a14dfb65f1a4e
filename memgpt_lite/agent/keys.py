"""API keys for the HTTP server (`memgpt-lite serve`): made here, checked here.

A key is `mlk_` and 32 random bytes from `secrets`, URL-safe base64. Its
secret is shown once, when made; the store keeps only its SHA-256 (`hash_key`),
so a copy of the database holds no key that works. A revoked key is kept, with
the time of its revocation, and never works again. Pure library: no web
framework here; the server calls `user_for_key` on each request.
"""

from __future__ import annotations

import hashlib
import re
import secrets

from pydantic import ValidationError

from memgpt_lite.errors import ConfigError, validation_messages
from memgpt_lite.models import ApiKey
from memgpt_lite.storage.protocol import Storage

KEY_PREFIX = "mlk_"
_SECRET_BYTES = 32
# What `create_key` makes: the prefix, then 43 characters of URL-safe base64.
_KEY_PATTERN = re.compile(rf"^{KEY_PREFIX}[A-Za-z0-9_-]{{43}}$")


def hash_key(secret: str) -> str:
    """The SHA-256 of `secret`, in hex: what the store keeps of a key.

    A fast hash is right here, unlike for passwords: a key is 256 random bits,
    so there is no dictionary to try and a brute force of the hash is as
    hopeless as guessing the key; a slow hash (bcrypt, scrypt) would only make
    every request slow. Being deterministic and unsalted, it also lets the
    store find a key by its hash through an index."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def create_key(store: Storage, user: str, *, admin: bool = False) -> tuple[ApiKey, str]:
    """Make and store a new key of `user` (an admin key with `admin`: see
    `ApiKey`). Returns the stored key and its secret, which is not stored:
    show it to the user once. ConfigError for a user name that is not valid."""
    secret = KEY_PREFIX + secrets.token_urlsafe(_SECRET_BYTES)
    try:
        key = ApiKey(user=user, key_hash=hash_key(secret), admin=admin)
    except ValidationError as exc:
        raise ConfigError(f"cannot create a key for {user!r}: {validation_messages(exc)}") from None
    store.add_api_key(key)
    return key, secret


def key_for_secret(store: Storage, secret: str) -> ApiKey | None:
    """The key whose secret is `secret`, or None for a secret that is not of
    our form, unknown, or revoked. Found by hash: comparing hashes is no
    timing oracle, since an attacker cannot choose a hash's bytes."""
    if not isinstance(secret, str) or not _KEY_PATTERN.match(secret):
        return None
    key = store.api_key_by_hash(hash_key(secret))
    if key is None or key.revoked_at is not None:
        return None
    return key


def user_for_key(store: Storage, secret: str) -> str | None:
    """The user whose key `secret` is (see `key_for_secret`), or None."""
    key = key_for_secret(store, secret)
    return None if key is None else key.user
