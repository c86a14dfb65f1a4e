"""The migration that made agent names unique within their owner (SQLite's
m018, PostgreSQL's m012), and the one that let an owner's agents share a
display name (SQLite's m025, PostgreSQL's m019), each on a database rewound
to before it: every agent and what refers to it kept (SQLite makes the
table again: nothing of the tables that refer to it may be deleted), an
agent named like an id renamed."""

from __future__ import annotations

import sqlite3

import psycopg
import pytest
from support.backends import (
    execute_sql,
    open_db,
    undo_agent_names_per_owner,
    undo_display_names_repeat,
)

from memgpt_lite.agent.agent import Agent
from memgpt_lite.errors import AlreadyExistsError
from memgpt_lite.models import Message
from memgpt_lite.storage.copy import copy_database

ID_SHAPED = "agent-0123456789abcdef0123456789abcdef"


def test_the_migration_keeps_every_agent_and_renames_id_shaped_names(db_location):
    sam = Agent.create("sam", "gpt-4o-mini", db=db_location, owner="alice")
    sam.store.add_messages([Message(agent_id=sam.state.id, role="user", content="hello")])
    sam.archival.insert("Alice keeps bees.")
    tricky = Agent.create("tricky", "gpt-4o-mini", store=sam.store, owner="mallory")
    sam.store.close()
    undo_agent_names_per_owner(db_location)
    # As an older version let it be: a name shaped like (another user's) id.
    execute_sql(
        db_location, "UPDATE agents SET name = ? WHERE id = ?", [ID_SHAPED, tricky.state.id]
    )

    with open_db(db_location) as store:  # migrates
        again = store.get_agent(sam.state.id, owner="alice")
        assert (again.name, again.display_name) == ("sam", None)
        contents = [m.content for m in store.messages_from(again.id, 0)]
        assert "hello" in contents
        assert store.agent_stats(again.id).passage_count == 1
        assert [b.label for b in store.get_blocks(again.id)] == ["persona", "human"]
        assert store.get_agent(tricky.state.id).name == f"renamed-{ID_SHAPED}"
        Agent.create("sam", "gpt-4o-mini", store=store, owner="bob")  # now free for bob
        with pytest.raises(AlreadyExistsError):
            Agent.create("sam", "gpt-4o-mini", store=store, owner="alice")


def test_the_migration_lets_display_names_repeat_and_keeps_every_agent(db_location):
    bot = Agent.create("letta-code", "gpt-4o-mini", db=db_location, owner="alice")
    bot.rename("letta-code", "Letta Code")
    other = Agent.create("other", "gpt-4o-mini", store=bot.store, owner="alice")
    bot.store.add_messages([Message(agent_id=bot.state.id, role="user", content="hello")])
    bot.archival.insert("Alice keeps bees.")
    bot.store.close()
    undo_display_names_repeat(db_location)
    share = "UPDATE agents SET display_name = 'Letta Code' WHERE id = ?"
    with pytest.raises((sqlite3.IntegrityError, psycopg.IntegrityError)):  # as it was
        execute_sql(db_location, share, [other.state.id])

    with open_db(db_location) as store:  # migrates
        again = store.get_agent(bot.state.id, owner="alice")
        assert (again.name, again.display_name) == ("letta-code", "Letta Code")
        assert "hello" in [m.content for m in store.messages_from(again.id, 0)]
        assert store.agent_stats(again.id).passage_count == 1
        assert [b.label for b in store.get_blocks(again.id)] == ["persona", "human"]
        renamed = store.rename_agent(other.state.id, "other", "Letta Code")
        assert (renamed.name, renamed.display_name) == ("other", "Letta Code")
        with pytest.raises(AlreadyExistsError):
            store.rename_agent(other.state.id, "letta-code", "Letta Code")
        store.delete_agent(again.id)  # what refers to it still goes with it
        assert store.messages_from(again.id, 0) == []


def test_copy_db_refuses_a_name_of_the_same_owner_only(tmp_path):
    src, dst = str(tmp_path / "src.db"), str(tmp_path / "dst.db")
    with open_db(src) as store:
        Agent.create("sam", "gpt-4o-mini", store=store, owner="alice")
    with open_db(dst) as store:
        Agent.create("sam", "gpt-4o-mini", store=store, owner="bob")
        Agent.create("sam", "gpt-4o-mini", store=store, owner="carol")
    assert [c.name for c in copy_database(src, dst)] == ["sam"]
    with open_db(dst) as store:
        assert sorted(s.owner for s, _ in store.list_agents()) == ["alice", "bob", "carol"]
    with pytest.raises(AlreadyExistsError, match="sam"):
        copy_database(src, dst)
