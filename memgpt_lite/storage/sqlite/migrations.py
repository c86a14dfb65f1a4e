"""SQLite's schema migrations, applied in order whenever a database is opened.

sqlite-utils records each applied migration in `_sqlite_migrations`. A migration
that has shipped is never edited: change the schema by adding a new function
at the end. What PostgreSQL's migrations create alike is core/schema.py's,
filled with SQLite's column types (`TYPES`); each migration runs the statements
it ran when it shipped (tests/storage/test_storage_schema.py).
"""

import json
import sqlite3

from sqlite_utils import Database, Migrations

from memgpt_lite.names import is_id_shaped
from memgpt_lite.storage.core.rows import text_hash
from memgpt_lite.storage.core.schema import (
    ADMIN_KEYS,
    AGENT_COLUMNS,
    AGENT_GROUPS,
    ARCHIVES,
    BLOCK_HISTORY,
    BLOCK_OWNER,
    BLOCK_OWNER_INDEX,
    BLOCKS,
    CONVERSATIONS,
    GROUP_MEMBERS,
    IDENTITIES,
    LETTA_RUN_STREAMS,
    LETTA_RUNS,
    MESSAGE_COLUMNS,
    MESSAGE_INDEXES,
    PASSAGE_COLUMNS,
    PASSAGE_INDEX,
    PASSAGE_SUPERSESSION,
    PROVIDERS,
    REFLECTED_SEQ,
    SENT_REQUESTS,
    SENT_REQUESTS_INDEX,
    STEP_FEEDBACK,
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


def run_script(db: Database, script: str) -> None:
    """Run the statements of `script` inside the migration's transaction, as
    `db.executescript` does there, but split at each `;` that ends a
    statement: sqlite-utils tests every character, which took a third of
    opening a new database."""
    statement = ""
    for piece in script.split(";"):
        statement += piece + ";"
        if sqlite3.complete_statement(statement):
            if statement.strip(" \n;"):
                db.execute(statement.strip())
            statement = ""


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
    run_script(db, ddl(agents + BLOCKS + messages + passages + "\n        ", TYPES))


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
    run_script(
        db,
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
        """,
    )


@migrations()
def m004_memory_pressure(db: Database) -> None:
    # Whether the one-time memory-pressure alert was given since the last compaction.
    db.execute("ALTER TABLE agents ADD COLUMN pressure_warned INTEGER NOT NULL DEFAULT 0")


@migrations()
def m005_archival_search(db: Database) -> None:
    """Dedupe hashes on passages, stored vectors, and each agent's embedding space."""
    run_script(
        db,
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
        """,
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
    run_script(
        db,
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
        """,
    )


@migrations()
def m010_token_usage(db: Database) -> None:
    """Token usage (core/schema.py's TOKEN_USAGE). Agents that exist
    already keep the model's whole window:
    the default working window is for agents created from now on, so none
    of theirs, with its core memory sized for the larger window, stops
    fitting (`working_window: 0` means the whole window)."""
    run_script(db, ddl(TOKEN_USAGE + "\n        ", TYPES))
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
    run_script(db, ddl(USERS_AND_API_KEYS, TYPES))


@migrations()
def m012_passage_supersession(db: Database) -> None:
    """Facts that change (core/schema.py's PASSAGE_SUPERSESSION)."""
    run_script(db, ddl(PASSAGE_SUPERSESSION, TYPES))


@migrations()
def m013_block_history(db: Database) -> None:
    """Every value a block held (core/schema.py's BLOCK_HISTORY)."""
    run_script(db, ddl(BLOCK_HISTORY, TYPES))


@migrations()
def m014_reflected_seq(db: Database) -> None:
    """The newest message seq a reflection has read (core/schema.py's REFLECTED_SEQ)."""
    db.execute(ddl(REFLECTED_SEQ, TYPES))


@migrations()
def m015_tool_registry(db: Database) -> None:
    """Each user's tools and MCP servers (core/schema.py's TOOL_REGISTRY)."""
    run_script(db, ddl(TOOL_REGISTRY, TYPES))


@migrations()
def m016_admin_keys(db: Database) -> None:
    """Admin keys (core/schema.py's ADMIN_KEYS)."""
    db.execute(ddl(ADMIN_KEYS, TYPES))


@migrations()
def m017_tool_tags(db: Database) -> None:
    """A registered tool's tags (core/schema.py's TOOL_TAGS)."""
    db.execute(TOOL_TAGS)


@migrations()
def m018_agent_names_per_owner(db: Database) -> None:
    """An agent's name is unique within its owner, not across users; an
    agent may have a display name (unique within its owner too). SQLite
    cannot drop a UNIQUE constraint: the table is made again from its own
    statement (whatever columns migrations gave it), rows, indexes and
    triggers kept, while foreign keys are off (the store migrates so), so
    dropping the old table fires no ON DELETE of the tables that refer to it.
    Agents named like an agent id (refused from now on: ids are looked up
    first) are renamed `renamed-<name>`."""
    statement = db.execute("SELECT sql FROM sqlite_master WHERE name = 'agents'").fetchone()[0]
    unique_name = "name TEXT NOT NULL UNIQUE,"
    if statement.count(unique_name) != 1 or not statement.endswith(")"):
        raise RuntimeError(f"m018: unexpected agents table: {statement}")
    statement = statement.replace(unique_name, "name TEXT NOT NULL,")
    statement = (
        statement[:-1]
        + ", display_name TEXT, UNIQUE (owner, name), "
        + ("UNIQUE (owner, display_name))")
    )
    kept = db.execute(
        "SELECT sql FROM sqlite_master WHERE tbl_name = 'agents' AND type IN ('index', 'trigger') "
        "AND sql IS NOT NULL AND name != 'agents_owner' ORDER BY type, name"
    ).fetchall()
    # One statement at a time: executescript would commit the migration's transaction.
    for step in (
        "CREATE TEMP TABLE agents_before AS SELECT * FROM agents",
        "DROP TABLE agents",
        statement,
        "INSERT INTO agents SELECT *, NULL FROM temp.agents_before",
        "DROP TABLE temp.agents_before",
        # The UNIQUE constraint's index serves lookups by owner and name.
        "CREATE INDEX agents_name ON agents(name)",
    ):
        db.execute(step)
    for (made,) in kept:
        db.execute(made)
    rename_id_shaped(db)


def rename_id_shaped(db: Database) -> None:
    """m018's renaming of agents named like an agent id."""
    for agent_id, name in db.execute("SELECT id, name FROM agents").fetchall():
        if is_id_shaped(name):
            db.execute("UPDATE agents SET name = ? WHERE id = ?", [f"renamed-{name}", agent_id])


@migrations()
def m019_letta_runs(db: Database) -> None:
    """The runs of Letta's asynchronous sends (core/schema.py's LETTA_RUNS)."""
    run_script(db, ddl(LETTA_RUNS, TYPES))


@migrations()
def m020_sent_requests(db: Database) -> None:
    """The sends answered under an idempotency key (core/schema.py's SENT_REQUESTS)."""
    db.execute(ddl(SENT_REQUESTS, TYPES))
    db.execute(SENT_REQUESTS_INDEX)


@migrations()
def m021_block_owner(db: Database) -> None:
    """A standalone block's owner (core/schema.py's BLOCK_OWNER)."""
    db.execute(BLOCK_OWNER)
    db.execute(BLOCK_OWNER_INDEX)


@migrations()
def m022_conversations(db: Database) -> None:
    """An agent's conversations (core/schema.py's CONVERSATIONS)."""
    run_script(db, ddl(CONVERSATIONS, TYPES))


@migrations()
def m023_letta_run_streams(db: Database) -> None:
    """Letta's runs: background, renewed, and a background run's chunks
    (core/schema.py's LETTA_RUN_STREAMS). m022 is the conversations'."""
    run_script(db, ddl(LETTA_RUN_STREAMS, TYPES))


@migrations()
def m024_agent_groups(db: Database) -> None:
    """Groups of agents: sleep-time agents and the main agent they look
    after (core/schema.py's AGENT_GROUPS)."""
    run_script(db, ddl(AGENT_GROUPS, TYPES))


@migrations()
def m025_display_names_repeat(db: Database) -> None:
    """An owner's agents may share a display name (Letta's names are free
    text: each `letta --new-agent` makes one named "Letta Code"); the name,
    the CLI's identifier, stays unique within the owner. As in m018, the
    table is made again from its own statement without the constraint, its
    rows, indexes and triggers kept, foreign keys off."""
    statement = db.execute("SELECT sql FROM sqlite_master WHERE name = 'agents'").fetchone()[0]
    unique_display = ", UNIQUE (owner, display_name)"
    if statement.count(unique_display) != 1:
        raise RuntimeError(f"m025: unexpected agents table: {statement}")
    kept = db.execute(
        "SELECT sql FROM sqlite_master WHERE tbl_name = 'agents' AND type IN ('index', 'trigger') "
        "AND sql IS NOT NULL ORDER BY type, name"
    ).fetchall()
    # One statement at a time: executescript would commit the migration's transaction.
    for step in (
        "CREATE TEMP TABLE agents_before AS SELECT * FROM agents",
        "DROP TABLE agents",
        statement.replace(unique_display, ""),
        "INSERT INTO agents SELECT * FROM temp.agents_before",
        "DROP TABLE temp.agents_before",
    ):
        db.execute(step)
    for (made,) in kept:
        db.execute(made)


@migrations()
def m026_identities(db: Database) -> None:
    """Letta's identities and their links to agents and blocks
    (core/schema.py's IDENTITIES)."""
    run_script(db, ddl(IDENTITIES, TYPES))


@migrations()
def m027_providers(db: Database) -> None:
    """Users' providers (Letta's bring-your-own-key providers), their keys
    sealed (core/schema.py's PROVIDERS)."""
    run_script(db, ddl(PROVIDERS, TYPES))


@migrations()
def m028_archives(db: Database) -> None:
    """Letta's archives: a named archive's name, and the archive attached to
    an agent besides its own (core/schema.py's ARCHIVES)."""
    run_script(db, ddl(ARCHIVES, TYPES))


@migrations()
def m029_group_members(db: Database) -> None:
    """Groups that talk (core/schema.py's GROUP_MEMBERS): the table of groups
    made again, as in m025, with a main agent that may be NULL; then the new
    columns. m028 is the archives'."""
    table = "SELECT sql FROM sqlite_master WHERE name = 'agent_groups'"
    statement = db.execute(table).fetchone()[0]
    required = "manager_agent_id TEXT NOT NULL UNIQUE"
    if statement.count(required) != 1:
        raise RuntimeError(f"m029: unexpected agent_groups table: {statement}")
    its_own = (
        "SELECT sql FROM sqlite_master WHERE tbl_name = 'agent_groups' "
        "AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY type, name"
    )
    kept = db.execute(its_own).fetchall()
    for step in (
        "CREATE TEMP TABLE agent_groups_before AS SELECT * FROM agent_groups",
        "DROP TABLE agent_groups",
        statement.replace(required, "manager_agent_id TEXT UNIQUE"),
        "INSERT INTO agent_groups SELECT * FROM temp.agent_groups_before",
        "DROP TABLE temp.agent_groups_before",
    ):
        db.execute(step)
    for (made,) in kept:
        db.execute(made)
    run_script(db, ddl(GROUP_MEMBERS, TYPES))


@migrations()
def m030_step_feedback(db: Database) -> None:
    """Letta's feedback on steps, and token usage indexed by step id
    (core/schema.py's STEP_FEEDBACK)."""
    run_script(db, ddl(STEP_FEEDBACK, TYPES))
