"""Users' providers (see `ProviderStorage`), for every backend: a row of
`providers` each, its API key sealed (`key_sealer`, set by the backend:
sealed_keys.py), its name unique within its owner."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import utcnow
from memgpt_lite.storage.core.sealed_keys import KeySealer
from memgpt_lite.storage.core.transactions import Transactions, guarded
from memgpt_lite.storage.protocols.providers import Provider

_COLUMNS = (
    "id",
    "owner",
    "name",
    "provider_type",
    "base_url",
    "api_key",
    "region",
    "api_version",
    "created_at",
    "updated_at",
)
_SAVE = (
    f"INSERT INTO providers ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
    "ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS[2:] if c != "created_at")
)


class Providers(Transactions):
    """Users' providers (see `ProviderStorage`)."""

    key_sealer: KeySealer

    @guarded
    def save_provider(self, provider: Provider) -> None:
        provider.updated_at = utcnow()
        values: dict[str, Any] = provider.model_dump(include=set(_COLUMNS), mode="json")
        values["api_key"] = self.key_sealer.stored_key(provider.api_key)
        for column in ("created_at", "updated_at"):
            values[column] = self.dialect.time(getattr(provider, column))
        with self.refusing_duplicates(f"a provider named {provider.name!r} already exists"):
            self._execute(_SAVE, [values[c] for c in _COLUMNS])

    @guarded
    def get_provider(self, provider_id: str, owner: str) -> Provider:
        found = self._providers("id = ? AND owner = ?", [provider_id, owner])
        if not found:
            raise NotFoundError(f"no provider with id {provider_id!r}")
        return found[0]

    @guarded
    def list_providers(self, owner: str | None = None, name: str | None = None) -> list[Provider]:
        where, params = ["1 = 1"], []
        if owner is not None:
            where, params = [*where, "owner = ?"], [*params, owner]
        if name is not None:
            where, params = [*where, "name = ?"], [*params, name]
        return self._providers(" AND ".join(where), params)

    @guarded
    def delete_provider(self, provider_id: str, owner: str) -> None:
        with self.transaction():
            self.get_provider(provider_id, owner)
            self._execute("DELETE FROM providers WHERE id = ?", [provider_id])

    def _providers(self, where: str, params: Sequence[Any]) -> list[Provider]:
        """The providers `where` selects, oldest first, their keys opened
        where this process can."""
        rows = self._all(
            f"SELECT {', '.join(_COLUMNS)} FROM providers WHERE {where} ORDER BY created_at, id",
            params,
        )
        found = []
        for row in rows:
            values = dict(zip(_COLUMNS, row, strict=True))
            values["api_key"] = self.key_sealer.read_key(values["api_key"])
            found.append(Provider(**values))
        return found
