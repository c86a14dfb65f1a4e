"""Named archives and the archive attached to each agent (see
`ArchiveStorage`), for every backend: a row of `archives` beside the row
of `agents` that holds the archive's passages, and one row of
`agent_archives` per agent with an archive attached.

An archive's row of `agents` is stored and read as an agent's (`Agents`,
which `CoreStore` joins with this: `create_agent`, `_with_blocks`,
`_agent_from_row`), and deleted with its archive, its passages, vectors,
archive row and links going with it (ON DELETE CASCADE, as an agent's do).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from memgpt_lite.errors import ConflictError
from memgpt_lite.models import AgentState, Block, utcnow
from memgpt_lite.storage.core.errors import unknown_agent
from memgpt_lite.storage.core.transactions import Transactions, guarded
from memgpt_lite.storage.protocols.archives import Archive, no_archive

_COLUMNS = ("id", "owner", "name", "description", "created_at", "updated_at")
_SAVE = (
    f"INSERT INTO archives ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
    "ON CONFLICT (id) DO UPDATE SET name = excluded.name, description = excluded.description, "
    "updated_at = excluded.updated_at"
)
_READ = f"SELECT {', '.join(_COLUMNS)} FROM archives"


class Archives(Transactions):
    """Named archives and attached archives (see `ArchiveStorage`)."""

    # Agents' (see the module's doc).
    create_agent: Callable[[AgentState, Sequence[Block]], None]
    _with_blocks: Callable[[], str]
    _agent_from_row: Callable[[Sequence[Any]], AgentState]

    @guarded
    def create_archive(self, archive: Archive, store: AgentState) -> None:
        with self.transaction():
            self.create_agent(store, [])
            self.save_archive(archive)

    @guarded
    def save_archive(self, archive: Archive) -> None:
        with self.transaction():
            if not self._one("SELECT 1 FROM agents WHERE id = ?", [archive.id]):
                raise no_archive(archive.id)
            archive.updated_at = utcnow()
            values = archive.model_dump(include=set(_COLUMNS))
            for column in ("created_at", "updated_at"):
                values[column] = self.dialect.time(values[column])
            self._execute(_SAVE, [values[c] for c in _COLUMNS])

    @guarded
    def get_archive(self, archive_id: str, owner: str) -> Archive:
        row = self._one(f"{_READ} WHERE id = ? AND owner = ?", [archive_id, owner])
        if row is None:
            raise no_archive(archive_id)
        return Archive(**dict(zip(_COLUMNS, row, strict=True)))

    @guarded
    def list_archives(self, owner: str | None = None) -> list[Archive]:
        where, params = ("", []) if owner is None else (" WHERE owner = ?", [owner])
        rows = self._all(f"{_READ}{where} ORDER BY created_at, id", params)
        return [Archive(**dict(zip(_COLUMNS, row, strict=True))) for row in rows]

    @guarded
    def delete_archive(self, archive_id: str, owner: str) -> None:
        with self.transaction():
            self.get_archive(archive_id, owner)
            self._execute("DELETE FROM agents WHERE id = ?", [archive_id])

    @guarded
    def archive_store(self, store_id: str) -> AgentState:
        row = self._one(f"SELECT {self._with_blocks()} FROM agents WHERE id = ?", [store_id])
        if row is None:
            raise no_archive(store_id)
        return self._agent_from_row(row)

    @guarded
    def attach_archive(self, agent_id: str, store_id: str) -> None:
        with self.transaction():
            owners = dict(
                self._all("SELECT id, owner FROM agents WHERE id IN (?, ?)", [agent_id, store_id])
            )
            if agent_id not in owners:
                raise unknown_agent(agent_id)
            if owners.get(store_id) != owners[agent_id]:
                raise no_archive(store_id)
            if store_id == agent_id:
                return
            self._execute(
                "INSERT INTO agent_archives (agent_id, archive_id, created_at) VALUES (?, ?, ?) "
                "ON CONFLICT (agent_id) DO NOTHING",
                [agent_id, store_id, self.dialect.time(utcnow())],
            )
            held = self._one("SELECT archive_id FROM agent_archives WHERE agent_id = ?", [agent_id])
            if held is not None and held[0] != store_id:
                raise ConflictError(
                    f"agent {agent_id!r} has another archive attached already: detach it "
                    "first (an agent has one archive besides its own)"
                )

    @guarded
    def detach_archive(self, agent_id: str, store_id: str) -> None:
        with self.transaction():
            self._execute(
                "DELETE FROM agent_archives WHERE agent_id = ? AND archive_id = ?",
                [agent_id, store_id],
            )

    @guarded
    def archive_agents(self, store_id: str) -> list[str]:
        rows = self._all(
            "SELECT agent_id FROM agent_archives WHERE archive_id = ? "
            "ORDER BY created_at, agent_id",
            [store_id],
        )
        return [row[0] for row in rows]
