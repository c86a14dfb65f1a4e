"""Memory blocks and their history, for every backend.

Blocks are rows of their own, linked to agents in order by `agent_blocks`,
so one block can be shared by several agents. Every value a block held is a
row of `block_history`, written in the same transaction as the block (by
`author`), so an edit can be read back as a diff and undone; a block's
history goes with it. A write that reads a block before writing it locks
the row where writers run at once, so that concurrent edits of one block are
kept in the order they commit, each compared with the value before it.

A backend provides nothing more than what the core runs on (core/sql.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memgpt_lite.errors import AlreadyExistsError, NotFoundError
from memgpt_lite.models import Block, BlockVersion, utcnow
from memgpt_lite.storage.core.errors import unknown_agent
from memgpt_lite.storage.core.transactions import Transactions, guarded
from memgpt_lite.text import clean_text

_COLUMNS = "b.id, b.label, b.value, b.char_limit, b.description, b.read_only, b.updated_at"
_STORED = "id, label, value, char_limit, description, read_only, updated_at"
_INSERT = f"INSERT INTO blocks ({_STORED}) VALUES (?, ?, ?, ?, ?, ?, ?)"
# A new block's value is its first version; a block stored already (shared
# with another agent) is kept as it is, and no row comes back.
_INSERT_NEW = _INSERT + " ON CONFLICT (id) DO NOTHING RETURNING id"
_UPSERT = (
    _INSERT
    + " ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _STORED.split(", ")[1:])
)
_INSERT_VERSION = (
    "INSERT INTO block_history (block_id, label, value, author, created_at) VALUES (?, ?, ?, ?, ?)"
)
_VERSION_KEYS = ("seq", "block_id", "label", "value", "author", "created_at")
# The blocks a user may reach: their standalone blocks and their agents' blocks.
_USER_BLOCKS = (
    f"SELECT {_COLUMNS} FROM blocks b WHERE (b.owner = ? OR EXISTS (SELECT 1 FROM "
    "agent_blocks ab JOIN agents a ON a.id = ab.agent_id WHERE ab.block_id = b.id "
    "AND a.owner = ?))"
)
# An agent's blocks, in order (`block_from_row` reads each row).
AGENT_BLOCKS = (
    f"SELECT {_COLUMNS} FROM blocks b JOIN agent_blocks ab "
    "ON ab.block_id = b.id WHERE ab.agent_id = ? ORDER BY ab.position"
)


def block_from_row(row: Sequence[Any]) -> Block:
    id_, label, value, limit, description, read_only, updated_at = row
    return Block(
        id=id_,
        label=label,
        value=value,
        limit=limit,
        description=description,
        read_only=bool(read_only),
        updated_at=updated_at,
    )


class Blocks(Transactions):
    """Blocks and their history (see `BlockStorage`)."""

    def _block_values(self, block: Block) -> list[Any]:
        """The block as `_STORED`."""
        return [
            block.id,
            block.label,
            block.value,
            block.limit,
            block.description,
            block.read_only,
            self.dialect.time(block.updated_at),
        ]

    def _store_new_block(self, block: Block, author: str) -> None:
        """Store the block unless it is stored already, its value the first
        version of its history, by `author`. Inside a transaction."""
        if self._one(_INSERT_NEW, self._block_values(block)):
            self._add_version(block, author)

    def _add_version(self, block: Block, author: str) -> None:
        """Keep the block's value as a new version. Inside a transaction."""
        self._execute(
            _INSERT_VERSION,
            [
                block.id,
                block.label,
                block.value,
                clean_text(author),
                self.dialect.time(block.updated_at),
            ],
        )

    @guarded
    def get_blocks(self, agent_id: str) -> list[Block]:
        return [block_from_row(r) for r in self._all(AGENT_BLOCKS, [agent_id])]

    @guarded
    def get_block(self, block_id: str) -> Block:
        row = self._one(f"SELECT {_COLUMNS} FROM blocks b WHERE b.id = ?", [block_id])
        if row is None:
            raise NotFoundError(f"no block with id {block_id!r}")
        return block_from_row(row)

    @guarded
    def create_block(self, block: Block, owner: str, author: str = "user") -> None:
        """Store a standalone block of `owner`'s, its value the first version."""
        block.updated_at = utcnow()
        with self.transaction():
            if self._one(f"SELECT 1 FROM blocks WHERE id = ?{self.dialect.for_update}", [block.id]):
                raise AlreadyExistsError(f"a block with id {block.id!r} exists already")
            self._execute(
                f"INSERT INTO blocks ({_STORED}, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [*self._block_values(block), clean_text(owner)],
            )
            self._add_version(block, author)

    @guarded
    def user_block(self, block_id: str, owner: str) -> Block:
        owner = clean_text(owner)
        row = self._one(_USER_BLOCKS + " AND b.id = ?", [owner, owner, block_id])
        if row is None:
            raise NotFoundError(f"no block with id {block_id!r}")
        return block_from_row(row)

    @guarded
    def user_blocks(self, owner: str) -> list[Block]:
        owner = clean_text(owner)
        # Oldest first: a block's first version is written when it is made.
        first = "(SELECT MIN(h.seq) FROM block_history h WHERE h.block_id = b.id)"
        rows = self._all(_USER_BLOCKS + f" ORDER BY COALESCE({first}, 0), b.id", [owner, owner])
        return [block_from_row(row) for row in rows]

    @guarded
    def delete_block(self, block_id: str) -> None:
        with self.transaction():
            if not self._one(
                f"SELECT 1 FROM blocks WHERE id = ?{self.dialect.for_update}", [block_id]
            ):
                raise NotFoundError(f"no block with id {block_id!r}")
            # The agents that held it see their memory change.
            self._execute(
                "UPDATE agents SET memory_updated_at = ? WHERE id IN "
                "(SELECT agent_id FROM agent_blocks WHERE block_id = ?)",
                [self.dialect.time(utcnow()), block_id],
            )
            # Its links and history go with it (ON DELETE CASCADE).
            self._execute("DELETE FROM blocks WHERE id = ?", [block_id])

    @guarded
    def block_owners(self, block_id: str) -> list[str]:
        """The names of the agents a block is attached to, sorted."""
        rows = self._all(
            "SELECT a.name FROM agents a JOIN agent_blocks ab ON ab.agent_id = a.id "
            "WHERE ab.block_id = ? ORDER BY a.name",
            [block_id],
        )
        return [row[0] for row in rows]

    @guarded
    def save_block(self, block: Block, author: str = "user") -> None:
        """Write a block's new value; every agent that shares it sees the edit.
        A new value (or a new block) is kept in its history, by `author`."""
        block.updated_at = utcnow()
        with self.transaction():
            row = self._one(
                f"SELECT value FROM blocks WHERE id = ?{self.dialect.for_update}", [block.id]
            )
            self._execute(_UPSERT, self._block_values(block))
            if row is None or row[0] != block.value:
                self._add_version(block, author)
            self._execute(
                "UPDATE agents SET memory_updated_at = ? WHERE id IN "
                "(SELECT agent_id FROM agent_blocks WHERE block_id = ?)",
                [self.dialect.time(block.updated_at), block.id],
            )

    @guarded
    def attach_block(self, agent_id: str, block: Block, author: str = "user") -> None:
        """Link a block (stored first if new, its first version by `author`)
        to an agent, after its other blocks."""
        with self.transaction():
            if not self._one(
                f"SELECT 1 FROM agents WHERE id = ?{self.dialect.for_update}", [agent_id]
            ):
                raise unknown_agent(agent_id)
            if block.label in {b.label for b in self.get_blocks(agent_id)}:
                raise AlreadyExistsError(f"the agent already has a block labelled {block.label!r}")
            self._store_new_block(block, author)
            self._execute(
                "INSERT INTO agent_blocks (agent_id, block_id, position) SELECT ?, ?, "
                "COALESCE(MAX(position) + 1, 0) FROM agent_blocks WHERE agent_id = ?",
                [agent_id, block.id, agent_id],
            )

    @guarded
    def detach_block(self, agent_id: str, block_id: str) -> None:
        """Unlink a block from an agent; delete it once no agent holds it,
        unless it is a standalone block (it has an owner)."""
        with self.transaction():
            self._execute(
                "DELETE FROM agent_blocks WHERE agent_id = ? AND block_id = ?",
                [agent_id, block_id],
            )
            self._execute(
                "DELETE FROM blocks AS b WHERE b.id = ? AND b.owner IS NULL AND NOT EXISTS "
                "(SELECT 1 FROM agent_blocks ab WHERE ab.block_id = b.id)",
                [block_id],
            )

    @guarded
    def block_history(self, block_id: str, limit: int | None = None) -> list[BlockVersion]:
        newest = "" if limit is None else " LIMIT ?"
        rows = self._all(
            f"SELECT {', '.join(_VERSION_KEYS)} FROM block_history WHERE block_id = ? "
            f"ORDER BY seq DESC{newest}",
            [block_id] if limit is None else [block_id, limit],
        )
        return [
            BlockVersion(**dict(zip(_VERSION_KEYS, row, strict=True))) for row in reversed(rows)
        ]

    @guarded
    def set_block_history(self, block_id: str, versions: Sequence[BlockVersion]) -> None:
        with self.transaction():
            if not self._one(
                f"SELECT 1 FROM blocks WHERE id = ?{self.dialect.for_update}", [block_id]
            ):
                raise NotFoundError(f"no block with id {block_id!r}")
            self._execute("DELETE FROM block_history WHERE block_id = ?", [block_id])
            for version in versions:
                row = self._one(
                    _INSERT_VERSION + " RETURNING seq",
                    [
                        block_id,
                        version.label,
                        version.value,
                        version.author,
                        self.dialect.time(version.created_at),
                    ],
                )
                version.seq = row[0]
