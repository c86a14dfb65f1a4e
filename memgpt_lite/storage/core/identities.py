"""Identities and their links (see `IdentityStorage`), for every backend: a
row of `identities`, its agents in `identity_agents` and its blocks in
`identity_blocks`, in the order linked.

A link joins an identity and an agent or block of the identity's owner: an
agent whose `owner` it is, or a block the owner may reach (theirs, or one
of their agents'); anything else is not found, word for word as an id that
does not exist. Links go with their identity, agent or block (ON DELETE
CASCADE)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import utcnow
from memgpt_lite.storage.core.errors import unknown_agent
from memgpt_lite.storage.core.transactions import Transactions, guarded
from memgpt_lite.storage.protocols.identities import Identity, LinkKind

_COLUMNS = (
    "id",
    "owner",
    "identifier_key",
    "name",
    "identity_type",
    "project_id",
    "properties",
    "created_at",
    "updated_at",
)
_SAVE = (
    f"INSERT INTO identities ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
    "ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS[2:] if c != "created_at")
)
# Each kind of link: its table and the column naming the agent or block.
_LINKS: dict[LinkKind, tuple[str, str]] = {
    "agent": ("identity_agents", "agent_id"),
    "block": ("identity_blocks", "block_id"),
}
# Whether the agent or block (the parameter after the owner) is the owner's.
_OWNED: dict[LinkKind, str] = {
    "agent": "SELECT 1 FROM agents WHERE owner = ? AND id = ?",
    "block": (
        "SELECT 1 FROM blocks b WHERE (b.owner = ? OR EXISTS (SELECT 1 FROM agent_blocks ab "
        "JOIN agents a ON a.id = ab.agent_id WHERE ab.block_id = b.id AND a.owner = ?)) "
        "AND b.id = ?"
    ),
}


class Identities(Transactions):
    """Identities and their links (see `IdentityStorage`)."""

    @guarded
    def save_identity(self, identity: Identity) -> None:
        with self.transaction():
            identity.updated_at = utcnow()
            values = identity.model_dump(include=set(_COLUMNS), mode="json")
            values["properties"] = json.dumps(values["properties"])
            for column in ("created_at", "updated_at"):
                values[column] = self.dialect.time(getattr(identity, column))
            taken = f"an identity with identifier_key {identity.identifier_key!r} already exists"
            with self.refusing_duplicates(taken):
                self._execute(_SAVE, [values[c] for c in _COLUMNS])
            for kind, item_ids in (("agent", identity.agent_ids), ("block", identity.block_ids)):
                table, _ = _LINKS[kind]
                self._execute(f"DELETE FROM {table} WHERE identity_id = ?", [identity.id])
                for item_id in item_ids:  # each once (`Identity`)
                    self._add_link(identity.id, identity.owner, kind, item_id)

    @guarded
    def get_identity(self, identity_id: str, owner: str) -> Identity:
        found = self._identities("i.id = ? AND i.owner = ?", [identity_id, owner])
        if not found:
            raise NotFoundError(f"no identity with id {identity_id!r}")
        return found[0]

    @guarded
    def list_identities(
        self,
        owner: str | None = None,
        identifier_key: str | None = None,
        agent_id: str | None = None,
    ) -> list[Identity]:
        where, params = ["1 = 1"], []
        if owner is not None:
            where, params = [*where, "i.owner = ?"], [*params, owner]
        if identifier_key is not None:
            where, params = [*where, "i.identifier_key = ?"], [*params, identifier_key]
        if agent_id is not None:
            linked = "i.id IN (SELECT identity_id FROM identity_agents WHERE agent_id = ?)"
            where, params = [*where, linked], [*params, agent_id]
        return self._identities(" AND ".join(where), params)

    @guarded
    def delete_identity(self, identity_id: str, owner: str) -> None:
        with self.transaction():
            self.get_identity(identity_id, owner)
            self._execute("DELETE FROM identities WHERE id = ?", [identity_id])

    @guarded
    def link_identity(self, identity_id: str, kind: LinkKind, item_id: str, linked: bool) -> None:
        with self.transaction():
            row = self._one("SELECT owner FROM identities WHERE id = ?", [identity_id])
            if row is None:
                raise NotFoundError(f"no identity with id {identity_id!r}")
            if linked:
                self._add_link(identity_id, row[0], kind, item_id)
                return
            table, column = _LINKS[kind]
            self._execute(
                f"DELETE FROM {table} WHERE identity_id = ? AND {column} = ?",
                [identity_id, item_id],
            )

    @guarded
    def set_agent_identities(self, agent_id: str, identity_ids: Sequence[str]) -> None:
        with self.transaction():
            row = self._one("SELECT owner FROM agents WHERE id = ?", [agent_id])
            if row is None:
                raise unknown_agent(agent_id)
            self._execute("DELETE FROM identity_agents WHERE agent_id = ?", [agent_id])
            for identity_id in dict.fromkeys(identity_ids):
                if not self._one(
                    "SELECT 1 FROM identities WHERE id = ? AND owner = ?", [identity_id, row[0]]
                ):
                    raise NotFoundError(f"no identity with id {identity_id!r}")
                self._add_link(identity_id, row[0], "agent", agent_id)

    def _add_link(self, identity_id: str, owner: str, kind: LinkKind, item_id: str) -> None:
        """Link the identity to the owner's agent or block, after its others
        (a link there already stays where it is). Inside a transaction."""
        if not self._one(_OWNED[kind], _owned_params(kind, owner, item_id)):
            raise NotFoundError(f"no {kind} with id {item_id!r}")
        table, column = _LINKS[kind]
        self._execute(
            f"INSERT INTO {table} (identity_id, {column}, position) VALUES (?, ?, "
            f"(SELECT COALESCE(MAX(position), -1) + 1 FROM {table} WHERE identity_id = ?)) "
            f"ON CONFLICT (identity_id, {column}) DO NOTHING",
            [identity_id, item_id, identity_id],
        )

    def _identities(self, where: str, params: Sequence[Any]) -> list[Identity]:
        """The identities `where` selects (on `i`), oldest first, with their
        links, read together."""
        chosen = f"SELECT i.id FROM identities i WHERE {where}"
        rows, agents, blocks = self._all_together(
            (
                f"SELECT {', '.join('i.' + c for c in _COLUMNS)} FROM identities i "
                f"WHERE {where} ORDER BY i.created_at, i.id",
                params,
            ),
            (
                "SELECT identity_id, agent_id FROM identity_agents "
                f"WHERE identity_id IN ({chosen}) ORDER BY identity_id, position",
                params,
            ),
            (
                "SELECT identity_id, block_id FROM identity_blocks "
                f"WHERE identity_id IN ({chosen}) ORDER BY identity_id, position",
                params,
            ),
        )
        found: dict[str, Identity] = {}
        for row in rows:
            values = dict(zip(_COLUMNS, row, strict=True))
            values["properties"] = json.loads(values["properties"])
            found[row[0]] = Identity(**values)
        for identity_id, agent_id in agents:
            if identity_id in found:
                found[identity_id].agent_ids.append(agent_id)
        for identity_id, block_id in blocks:
            if identity_id in found:
                found[identity_id].block_ids.append(block_id)
        return list(found.values())


def _owned_params(kind: LinkKind, owner: str, item_id: str) -> list[str]:
    """The parameters of `_OWNED[kind]` (a block's names the owner twice)."""
    return [owner, item_id] if kind == "agent" else [owner, owner, item_id]
