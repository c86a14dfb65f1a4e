"""Providers (Letta's bring-your-own-key providers): the part of `Storage`
that keeps a user's model endpoints with the API keys they brought, each
under a name of theirs, the part before the slash of its models' handles
(`lc-openai/gpt-4o-mini`). What a provider may be, and how an agent uses
one, is agent/providers.py's."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from memgpt_lite.models import UserName, new_id, utcnow
from memgpt_lite.text import CleanStr

# The part before the slash of a handle: no slash, and no colon either, which
# the server's allowed endpoints' names (HOST:PORT) have.
ProviderName = Annotated[CleanStr, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]


class Provider(BaseModel):
    """A provider of user `owner`'s, its `name` unique among theirs:
    `base_url` is the OpenAI-compatible endpoint its models are asked at,
    with `api_key` (None: none was given). The store keeps the key sealed
    (storage/core/sealed_keys.py); read back, it is the plain key, or still
    the sealed token when this process cannot open it."""

    model_config = ConfigDict(validate_assignment=True)

    id: str = Field(default_factory=lambda: new_id("provider"))
    owner: UserName
    name: ProviderName
    provider_type: CleanStr
    base_url: CleanStr
    api_key: SecretStr | None = None
    region: CleanStr | None = None
    api_version: CleanStr | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


@runtime_checkable
class ProviderStorage(Protocol):
    """Users' providers."""

    def save_provider(self, provider: Provider) -> None:
        """Store the provider, or its new state if stored already; sets
        `updated_at`. AlreadyExistsError if another provider of the owner
        has its name."""
        ...

    def get_provider(self, provider_id: str, owner: str) -> Provider:
        """The owner's provider; NotFoundError if there is none of that id,
        word for word for another owner's."""
        ...

    def list_providers(self, owner: str | None = None, name: str | None = None) -> list[Provider]:
        """The providers (of `owner`; with `name`, that one), oldest first."""
        ...

    def delete_provider(self, provider_id: str, owner: str) -> None:
        """Delete the owner's provider; NotFoundError as `get_provider`."""
        ...
