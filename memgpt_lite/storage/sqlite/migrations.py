"""SQLite's schema migrations, applied in order whenever a database is opened.

sqlite-utils records each applied migration in `_sqlite_migrations`. A migration
that has shipped is never edited: change the schema by adding a new function
at the end. What PostgreSQL's migrations create alike is core/schema.py's,
filled with SQLite's column types (`TYPES`); each migration runs the statements
it ran when it shipped (tests/storage/test_storage_schema.py).
"""

import json

from sqlite_utils import Database, Migrations

from memgpt_lite.storage.core.rows import text_hash
from memgpt_lite.storage.core.schema import (
    ADMIN_KEYS,
    AGENT_COLUMNS,
    BLOCK_HISTORY,
    BLOCKS,
    MESSAGE_COLUMNS,
    MESSAGE_INDEXES,
    PASSAGE_COLUMNS,
    PASSAGE_INDEX,
    PASSAGE_SUPERSESSION,
    REFLECTED_SEQ,
    SENT_REQUESTS,
    SENT_REQUESTS_INDEX,
    STEP_LOCKS,
    TOKEN_USAGE,
    TOOL_REGISTRY,
    TOOL_TAGS,
    USERS_AND_API_KEYS,
    ColumnTypes,
    ddl,
)

TYPES = ColumnTypes(
    bigint="INTEGER",
    bool="INTEGER",
    false="0",
    time="TEXT",
    seq="INTEGER PRIMARY KEY",
    real="REAL",
)

migrations = Migrations("memgpt_lite")


@migrations()
def m001_initial(db: Database) -> None:
    """The tables both backends have are core/schema.py's; SQLite's own
    columns are written here."""
    agents_end = """
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            message_count INTEGER NOT NULL DEFAULT 0,
            passage_count INTEGER NOT NULL DEFAULT 0,
            last_active TEXT,
            memory_updated_at TEXT
        );"""
    passages_end = """
            tags TEXT NOT NULL DEFAULT '[]',
            created_at TEXT NOT NULL
        );"""
    agents = "\n        CREATE TABLE agents (\n" + AGENT_COLUMNS + agents_end
    messages = MESSAGE_COLUMNS + "\n        );" + MESSAGE_INDEXES
    passages = PASSAGE_COLUMNS + passages_end + PASSAGE_INDEX
    db.executescript(ddl(agents + BLOCKS + messages + passages + "\n        ", TYPES))


@migrations()
def m002_full_text_search(db: Database) -> None:
    # Porter stemming so "running" finds "run"; remove_diacritics so "cafe" finds "café".
    tokenize = "porter unicode61 remove_diacritics 2"
    db["messages"].enable_fts(
        ["search_text"], fts_version="FTS5", create_triggers=True, tokenize=tokenize
    )
    db["passages"].enable_fts(["text"], fts_version="FTS5", create_triggers=True, tokenize=tokenize)


@migrations()
def m003_counters(db: Database) -> None:
    # Counts kept by triggers, so the memory metadata shown on every call costs
    # O(1) however long the history grows, and stays right across processes.
    db.executescript(
        """
        CREATE TRIGGER messages_count_insert AFTER INSERT ON messages BEGIN
            UPDATE agents SET message_count = message_count + 1, last_active = NEW.created_at
            WHERE id = NEW.agent_id;
        END;
        CREATE TRIGGER messages_count_delete AFTER DELETE ON messages BEGIN
            UPDATE agents SET message_count = message_count - 1 WHERE id = OLD.agent_id;
        END;
        CREATE TRIGGER passages_count_insert AFTER INSERT ON passages BEGIN
            UPDATE agents SET passage_count = passage_count + 1,
                memory_updated_at = NEW.created_at
            WHERE id = NEW.agent_id;
        END;
        CREATE TRIGGER passages_count_delete AFTER DELETE ON passages BEGIN
            UPDATE agents SET passage_count = passage_count - 1 WHERE id = OLD.agent_id;
        END;
        """
    )


@migrations()
def m004_memory_pressure(db: Database) -> None:
    # Whether the one-time memory-pressure alert was given since the last compaction.
    db.execute("ALTER TABLE agents ADD COLUMN pressure_warned INTEGER NOT NULL DEFAULT 0")


@migrations()
def m005_archival_search(db: Database) -> None:
    """Dedupe hashes on passages, stored vectors, and each agent's embedding space."""
    db.executescript(
        """
        ALTER TABLE passages ADD COLUMN text_hash TEXT;
        ALTER TABLE agents ADD COLUMN embedding_model TEXT;
        ALTER TABLE agents ADD COLUMN embedding_dimension INTEGER;
        ALTER TABLE agents ADD COLUMN vector_inserts INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE agents ADD COLUMN vector_deletes INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE vectors (
            rowid INTEGER PRIMARY KEY,
            agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            owner TEXT NOT NULL CHECK (owner IN ('passage', 'message')),
            item_seq INTEGER NOT NULL,
            vector BLOB NOT NULL,
            UNIQUE (owner, item_seq)
        );
        CREATE INDEX vectors_agent ON vectors(agent_id, owner, rowid);
        -- The counters let an in-memory index tell, in O(1), whether it is stale.
        CREATE TRIGGER vectors_insert AFTER INSERT ON vectors BEGIN
            UPDATE agents SET vector_inserts = vector_inserts + 1 WHERE id = NEW.agent_id;
        END;
        CREATE TRIGGER vectors_delete AFTER DELETE ON vectors BEGIN
            UPDATE agents SET vector_deletes = vector_deletes + 1 WHERE id = OLD.agent_id;
        END;
        CREATE TRIGGER passages_vector_delete AFTER DELETE ON passages BEGIN
            DELETE FROM vectors WHERE owner = 'passage' AND item_seq = OLD.seq;
        END;
        CREATE TRIGGER messages_vector_delete AFTER DELETE ON messages BEGIN
            DELETE FROM vectors WHERE owner = 'message' AND item_seq = OLD.seq;
        END;
        """
    )
    for seq, text in db.execute("SELECT seq, text FROM passages").fetchall():
        db.execute("UPDATE passages SET text_hash = ? WHERE seq = ?", [text_hash(text), seq])
    db.execute("CREATE UNIQUE INDEX passages_agent_hash ON passages(agent_id, text_hash)")


@migrations()
def m006_passage_context(db: Database) -> None:
    """A passage's context: text around it when it was written (the previous turn
    of a conversation, the chunk before it in a document), searched with it but
    not part of it. The FTS index gains the column."""
    db.execute("ALTER TABLE passages ADD COLUMN context TEXT NOT NULL DEFAULT ''")
    db["passages"].enable_fts(
        ["text", "context"],
        fts_version="FTS5",
        create_triggers=True,
        tokenize="porter unicode61 remove_diacritics 2",
        replace=True,
    )


@migrations()
def m007_timeout_default(db: Database) -> None:
    """`llm.timeout_seconds` became optional: unset, the agent follows
    $MEMGPT_LITE_TIMEOUT, config.toml or the default. Agents that hold the old
    default (120 s per attempt) were never given one by their user: unset it."""
    for agent_id, llm in db.execute("SELECT id, llm FROM agents").fetchall():
        config = json.loads(llm)
        if isinstance(config, dict) and config.get("timeout_seconds") == 120.0:
            config["timeout_seconds"] = None
            db.execute("UPDATE agents SET llm = ? WHERE id = ?", [json.dumps(config), agent_id])


@migrations()
def m008_step_locks(db: Database) -> None:
    """Step locks (core/schema.py's STEP_LOCKS)."""
    db.execute(ddl(STEP_LOCKS + "\n        ", TYPES))


@migrations()
def m009_message_edits(db: Database) -> None:
    """A stamp per agent that moves on every edit or deletion of one of its
    messages, whichever connection makes it, so a reader holding the window
    in memory can tell in O(1) whether what it holds is still so (see
    window_cache.py; appends need no stamp: `message_count` and the new
    rows' seqs show them). The stamp is a new AUTOINCREMENT value, above
    every one committed before, so it never comes back to a committed value
    a reader saw: not even when the agent is deleted and created again with
    the same id (its row here is kept, and moved on by the deletion).
    Deleted and inserted rather than INSERT OR REPLACE: a trigger's conflict
    policy yields to the statement's."""
    db.executescript(
        """
        CREATE TABLE message_edits (
            stamp INTEGER PRIMARY KEY AUTOINCREMENT,
            agent_id TEXT NOT NULL UNIQUE
        );
        CREATE TRIGGER messages_edit_update AFTER UPDATE ON messages BEGIN
            DELETE FROM message_edits WHERE agent_id IN (OLD.agent_id, NEW.agent_id);
            INSERT INTO message_edits (agent_id) VALUES (OLD.agent_id);
            INSERT INTO message_edits (agent_id) SELECT NEW.agent_id
                WHERE NEW.agent_id IS NOT OLD.agent_id;
        END;
        -- A deleted agent's messages go through its foreign key after its row
        -- is gone: they are left to the agents trigger, one stamp for all
        -- (a stamp per row made deleting a long history 70% slower).
        CREATE TRIGGER messages_edit_delete AFTER DELETE ON messages
        WHEN EXISTS (SELECT 1 FROM agents WHERE id = OLD.agent_id) BEGIN
            DELETE FROM message_edits WHERE agent_id = OLD.agent_id;
            INSERT INTO message_edits (agent_id) VALUES (OLD.agent_id);
        END;
        CREATE TRIGGER agents_edit_delete AFTER DELETE ON agents BEGIN
            DELETE FROM message_edits WHERE agent_id = OLD.id;
            INSERT INTO message_edits (agent_id) VALUES (OLD.id);
        END;
        """
    )


@migrations()
def m010_token_usage(db: Database) -> None:
    """Token usage (core/schema.py's TOKEN_USAGE). Agents that exist
    already keep the model's whole window:
    the default working window is for agents created from now on, so none
    of theirs, with its core memory sized for the larger window, stops
    fitting (`working_window: 0` means the whole window)."""
    db.executescript(ddl(TOKEN_USAGE + "\n        ", TYPES))
    for agent_id, settings in db.execute("SELECT id, settings FROM agents").fetchall():
        values = json.loads(settings)
        if isinstance(values, dict) and values.get("working_window") is None:
            values["working_window"] = 0
            db.execute(
                "UPDATE agents SET settings = ? WHERE id = ?", [json.dumps(values), agent_id]
            )


@migrations()
def m011_users_and_api_keys(db: Database) -> None:
    """Users and their API keys (core/schema.py's USERS_AND_API_KEYS)."""
    db.executescript(ddl(USERS_AND_API_KEYS, TYPES))


@migrations()
def m012_passage_supersession(db: Database) -> None:
    """Facts that change (core/schema.py's PASSAGE_SUPERSESSION)."""
    db.executescript(ddl(PASSAGE_SUPERSESSION, TYPES))


@migrations()
def m013_block_history(db: Database) -> None:
    """Every value a block held (core/schema.py's BLOCK_HISTORY)."""
    db.executescript(ddl(BLOCK_HISTORY, TYPES))


@migrations()
def m014_reflected_seq(db: Database) -> None:
    """The newest message seq a reflection has read (core/schema.py's REFLECTED_SEQ)."""
    db.execute(ddl(REFLECTED_SEQ, TYPES))


@migrations()
def m015_tool_registry(db: Database) -> None:
    """Each user's tools and MCP servers (core/schema.py's TOOL_REGISTRY)."""
    db.executescript(ddl(TOOL_REGISTRY, TYPES))


@migrations()
def m016_admin_keys(db: Database) -> None:
    """Admin keys (core/schema.py's ADMIN_KEYS)."""
    db.execute(ddl(ADMIN_KEYS, TYPES))


@migrations()
def m017_tool_tags(db: Database) -> None:
    """A registered tool's tags (core/schema.py's TOOL_TAGS)."""
    db.execute(TOOL_TAGS)


@migrations()
def m018_sent_requests(db: Database) -> None:
    """The sends answered under an idempotency key (core/schema.py's SENT_REQUESTS)."""
    db.execute(ddl(SENT_REQUESTS, TYPES))
    db.execute(SENT_REQUESTS_INDEX)
