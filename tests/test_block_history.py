"""Block history: every change of a core memory block, by the agent's tools,
the user or an import, kept with its time and author, shown as diffs and
undone by a revert. Through the real Agent and tools with the scripted
model, on both backends (`db_location`)."""

from __future__ import annotations

from backends import execute_sql, is_postgres

from memgpt_lite import Agent, Block
from memgpt_lite.storage.open import open_storage


def _as_before_history(location: str) -> None:
    """Put the database back as the version before block history left it."""
    execute_sql(location, "DROP TABLE block_history")
    if is_postgres(location):
        execute_sql(
            location, "DELETE FROM memgpt_lite_migrations WHERE name = 'm006_block_history'"
        )
        from memgpt_lite.storage.postgres import store as store_module
        from memgpt_lite.storage.postgres.connect import close_pool

        store_module._prepared.pop(location, None)  # this process opened it: open anew
        close_pool(location)
        return
    execute_sql(location, "DELETE FROM _sqlite_migrations WHERE name = 'm013_block_history'")


def test_the_migration_gives_existing_blocks_their_current_value_as_history(db_location):
    sam = Agent.create("sam", "gpt-4o-mini", db=db_location, blocks=[Block(label="notes")])
    sam.set_block("notes", "kept from before")
    block = sam.block("notes")
    sam.store.close()
    _as_before_history(db_location)
    with open_storage(db_location) as store:
        [version] = store.block_history(block.id)
    assert (version.label, version.value, version.author) == (
        "notes",
        "kept from before",
        "unknown",
    )
    assert version.created_at == block.updated_at
