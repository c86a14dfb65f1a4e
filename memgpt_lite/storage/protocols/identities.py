"""Identities (Letta's identities): the part of `Storage` that keeps the end
users (or organisations) of a user's app, each under the app's own key
(`identifier_key`), and the agents and blocks that serve each. An app that
many people use makes one identity per person, gives each person's agent
that identity, and finds the person's agents by it (server/letta/identities.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memgpt_lite.models import UserName, new_id, utcnow
from memgpt_lite.text import CleanStr

IdentityType = Literal["org", "user", "other"]
PropertyType = Literal["string", "number", "boolean", "json"]
# What an identity is linked to: agents, or blocks.
LinkKind = Literal["agent", "block"]


class IdentityProperty(BaseModel):
    """A value an app keeps about an identity, under its key (Letta's
    IdentityProperty): the type is the app's word for it, kept as given."""

    key: CleanStr = Field(min_length=1)
    value: str | int | float | bool | dict[str, Any]
    type: PropertyType


class Identity(BaseModel):
    """An identity of user `owner`'s: `identifier_key` is the app's own key
    for it, unique among the owner's identities. `agent_ids` and `block_ids`
    are the owner's agents and blocks linked to it, in the order linked,
    each once."""

    model_config = ConfigDict(validate_assignment=True)

    id: str = Field(default_factory=lambda: new_id("identity"))
    owner: UserName
    identifier_key: CleanStr = Field(min_length=1)
    name: CleanStr
    identity_type: IdentityType
    project_id: CleanStr | None = None
    properties: list[IdentityProperty] = Field(default_factory=list)
    agent_ids: list[str] = Field(default_factory=list)
    block_ids: list[str] = Field(default_factory=list)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)

    @field_validator("agent_ids", "block_ids")
    @classmethod
    def _once_each(cls, ids: list[str]) -> list[str]:
        return list(dict.fromkeys(ids))


@runtime_checkable
class IdentityStorage(Protocol):
    """Identities and their links. A link joins an identity and an agent or
    block of the identity's owner only, and goes with either of them."""

    def save_identity(self, identity: Identity) -> None:
        """Store the identity, or its new state if stored already (its links
        replaced by `agent_ids` and `block_ids`); sets `updated_at`.
        AlreadyExistsError if another identity of the owner has its
        `identifier_key`; NotFoundError for an agent or block the owner does
        not have (another user's is not found, word for word)."""
        ...

    def get_identity(self, identity_id: str, owner: str) -> Identity:
        """The owner's identity; NotFoundError if there is none of that id,
        word for word for another owner's."""
        ...

    def list_identities(
        self,
        owner: str | None = None,
        identifier_key: str | None = None,
        agent_id: str | None = None,
    ) -> list[Identity]:
        """The identities (of `owner`; with `identifier_key`, that key's; with
        `agent_id`, those linked to that agent), oldest first."""
        ...

    def delete_identity(self, identity_id: str, owner: str) -> None:
        """Delete the owner's identity and its links (its agents and blocks
        stay); NotFoundError as `get_identity`."""
        ...

    def link_identity(self, identity_id: str, kind: LinkKind, item_id: str, linked: bool) -> None:
        """Link the identity to the agent or block `item_id` (`linked`), or
        unlink them; a link that is (or is not) there already stays so.
        NotFoundError for an unknown identity, or an agent or block its owner
        does not have."""
        ...

    def set_agent_identities(self, agent_id: str, identity_ids: Sequence[str]) -> None:
        """Make `identity_ids` the agent's identities, each linked to it and
        no other. NotFoundError for an unknown agent, or an identity that is
        not its owner's."""
        ...
