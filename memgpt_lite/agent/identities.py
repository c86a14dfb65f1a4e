"""The identities of users' apps (Letta's identities; see
storage/protocols/identities.py): what the server does with them, as
Letta does it.

An app that many people use makes one identity per person (its
`identifier_key` is the app's own id for them), gives each person's agent
that identity, and finds the person's agents by it. Every identity is one
user's (the API key's); another user's is not found, word for word as an
unknown id, and so is another user's agent or block named in a link.

Letta's three ways to change one differ, and are kept: a create of a key
the user has is a 409; an upsert (by key) replaces the identity's fields,
and its properties, agents and blocks where it gives them; a modify merges
properties by key and adds agents and blocks to those it has.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from memgpt_lite.errors import ConfigError, validation_message
from memgpt_lite.storage.protocol import Storage
from memgpt_lite.storage.protocols.identities import (
    Identity,
    IdentityProperty,
    IdentityType,
    LinkKind,
)

__all__ = ["Identities", "Identity", "IdentityProperty", "IdentityType", "LinkKind"]

# The fields a request may give (the rest are the store's).
GIVEN = frozenset(
    {
        "identifier_key",
        "name",
        "identity_type",
        "project_id",
        "properties",
        "agent_ids",
        "block_ids",
    }
)


def _valid(fields: dict[str, Any]) -> Identity:
    """An Identity of these fields, or a one-line ConfigError (422)."""
    try:
        return Identity.model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'])}: {validation_message(error)}"
            for error in exc.errors(include_url=False)
        )
        raise ConfigError(f"identity: {problems}") from None


class Identities:
    """The identities of every user of one database."""

    def __init__(self, store: Storage) -> None:
        self.store = store

    def get(self, identity_id: str, owner: str) -> Identity:
        """The owner's identity; NotFoundError for another's, word for word."""
        return self.store.get_identity(identity_id, owner)

    def list(
        self, owner: str, identifier_key: str | None = None, agent_id: str | None = None
    ) -> list[Identity]:
        """The owner's identities (of that key, or linked to that agent), oldest first."""
        return self.store.list_identities(owner, identifier_key=identifier_key, agent_id=agent_id)

    def of_agent(self, agent_id: str) -> list[Identity]:
        """The identities linked to the agent (its owner's), oldest first."""
        return self.store.list_identities(agent_id=agent_id)

    def create(self, owner: str, fields: dict[str, Any]) -> Identity:
        """A new identity of the owner's; AlreadyExistsError for a key they have."""
        identity = _valid({**_given(fields), "owner": owner})
        self.store.save_identity(identity)
        return identity

    def upsert(self, owner: str, fields: dict[str, Any]) -> Identity:
        """The owner's identity of that key, made or replaced (it keeps its
        id; properties, agents and blocks not given stay as they are)."""
        with self.store.transaction():
            key = str(fields.get("identifier_key", ""))
            found = self.store.list_identities(owner, identifier_key=key)
            if not found:
                return self.create(owner, fields)
            replaced = {"name", "identity_type", "project_id"}  # the others stay unless given
            kept = found[0].model_dump(exclude=replaced)
            identity = _valid({**kept, **_given(fields)})
            self.store.save_identity(identity)
            return identity

    def modify(self, identity_id: str, owner: str, fields: dict[str, Any]) -> Identity:
        """Change the owner's identity: the fields given, its properties
        merged by key, the agents and blocks given added to its own."""
        with self.store.transaction():
            stored = self.get(identity_id, owner).model_dump()
            given = _given(fields)
            merged = {p["key"]: p for p in [*stored["properties"], *given.get("properties", [])]}
            given["properties"] = list(merged.values())
            for links in ("agent_ids", "block_ids"):
                given[links] = [*stored[links], *given.get(links, [])]
            identity = _valid(stored | given)
            self.store.save_identity(identity)
            return identity

    def set_properties(
        self, identity_id: str, owner: str, properties: Sequence[IdentityProperty]
    ) -> Identity:
        """Replace the owner's identity's properties with these."""
        with self.store.transaction():
            identity = self.get(identity_id, owner)
            identity.properties = list(properties)
            self.store.save_identity(identity)
            return identity

    def delete(self, identity_id: str, owner: str) -> None:
        """Delete the owner's identity (its agents and blocks stay)."""
        self.store.delete_identity(identity_id, owner)

    def link(
        self, identity_id: str, owner: str, kind: LinkKind, item_id: str, linked: bool
    ) -> None:
        """Link the owner's identity to their agent or block, or unlink them."""
        with self.store.transaction():
            self.get(identity_id, owner)
            self.store.link_identity(identity_id, kind, item_id, linked)

    def set_for_agent(self, agent_id: str, identity_ids: Sequence[str]) -> None:
        """Make these (of the agent's owner) the agent's identities."""
        self.store.set_agent_identities(agent_id, identity_ids)


def _given(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields of a request the identity takes, those given (not None)."""
    return {k: v for k, v in fields.items() if k in GIVEN and v is not None}
