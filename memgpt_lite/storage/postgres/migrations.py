"""The PostgreSQL schema, as an ordered list of named migrations.

Each migration is a function run inside the transaction that applies it, and
recorded by name in `memgpt_lite_migrations`. A migration that has shipped is
never edited: change the schema by adding a function at the end. They are
PostgreSQL's own history (SQLite's are in storage/sqlite/migrations.py): the
first one creates the schema SQLite reached in ten steps. What both create
alike is core/schema.py's, filled with PostgreSQL's column types (`TYPES`);
each migration runs the statements it ran when it shipped
(tests/storage/test_storage_schema.py).

Every opening checks the list; the first process to find migrations pending
applies them under an advisory lock, so ten processes opening a new database
at once migrate it once and the other nine wait, then find nothing to do.

A new database's choices (its search language, pgvector or not) come from the
`PostgresOptions` the store was opened with (`chosen`): the edge that
resolved the settings passes them, and each migration receives them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import psycopg
from psycopg import sql

from memgpt_lite.errors import ConfigError
from memgpt_lite.names import is_id_shaped
from memgpt_lite.settings.values import PG_LANGUAGE_ENV, PostgresOptions
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
    refuse_newer,
)

Migration = Callable[[psycopg.Connection, PostgresOptions], None]
MIGRATIONS: list[tuple[str, Migration]] = []
# pg_advisory_xact_lock's key for applying migrations: any constant no other
# application on the server is likely to use ("memgpt" in ASCII).
MIGRATION_LOCK = 0x6D656D677074


TYPES = ColumnTypes(
    bigint="BIGINT",
    bool="BOOLEAN",
    false="FALSE",
    time="TIMESTAMPTZ",
    seq="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    real="DOUBLE PRECISION",
)


def migration(function: Migration) -> Migration:
    MIGRATIONS.append((function.__name__, function))
    return function


_AGENTS_END = """
            pressure_warned BOOLEAN NOT NULL DEFAULT FALSE,
            embedding_model TEXT,
            embedding_dimension INTEGER,
            created_at TIMESTAMPTZ NOT NULL,
            updated_at TIMESTAMPTZ NOT NULL,
            -- Kept by the store's writes (which lock this row first, so one
            -- agent's items are numbered and committed in the same order).
            message_count BIGINT NOT NULL DEFAULT 0,
            passage_count BIGINT NOT NULL DEFAULT 0,
            vector_inserts BIGINT NOT NULL DEFAULT 0,
            vector_deletes BIGINT NOT NULL DEFAULT 0,
            last_active TIMESTAMPTZ,
            memory_updated_at TIMESTAMPTZ
        );"""
_MESSAGES_END = """,
            -- Written by the store from `search_text`, accents removed.
            search_vector TSVECTOR
        );"""
_PASSAGES_END = """
            context TEXT NOT NULL DEFAULT '',
            tags TEXT[] NOT NULL DEFAULT '{}',
            text_hash TEXT NOT NULL,
            created_at TIMESTAMPTZ NOT NULL,
            -- The text weighted A, its context D (see fulltext.py).
            search_vector TSVECTOR NOT NULL,
            UNIQUE (agent_id, text_hash)
        );"""


@migration
def m001_initial(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """The tables both backends have are core/schema.py's; PostgreSQL's own
    columns, the settings and the search indexes are written here."""
    agents = (
        "\n        CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "\n        CREATE TABLE agents (\n" + AGENT_COLUMNS + _AGENTS_END
    )
    messages = (
        MESSAGE_COLUMNS
        + _MESSAGES_END
        + MESSAGE_INDEXES
        + "\n        CREATE INDEX messages_search ON messages USING GIN (search_vector);"
    )
    passages = (
        PASSAGE_COLUMNS
        + _PASSAGES_END
        + PASSAGE_INDEX
        + "\n        CREATE INDEX passages_agent_created ON passages(agent_id, created_at);"
        "\n        CREATE INDEX passages_search ON passages USING GIN (search_vector);"
    )
    usage = (
        STEP_LOCKS
        + ";"
        + TOKEN_USAGE
        + "\n        CREATE INDEX token_usage_step ON token_usage(agent_id, step_id);\n        "
    )
    conn.execute(ddl(agents + BLOCKS + messages + passages + usage, TYPES))
    language = chosen.search_language
    if not conn.execute("SELECT 1 FROM pg_ts_config WHERE cfgname = %s", [language]).fetchone():
        raise ConfigError(
            f"${PG_LANGUAGE_ENV}: PostgreSQL has no text search language {language!r}"
        )
    conn.execute("INSERT INTO settings VALUES ('search_language', %s)", [language])


@migration
def m002_vectors(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """One vector per passage or searchable message: pgvector's `vector` when
    the server has the extension (searched there, by an HNSW index per
    dimension, made when the first vectors of that dimension arrive), else
    float32 bytes read into the same in-process index as SQLite's."""
    available = conn.execute(
        "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
    ).fetchone()
    kind = "bytea"
    if available and chosen.server_vectors:
        try:
            with conn.transaction():  # a savepoint: a role that may not create it goes on
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            kind = "vector"
        except psycopg.errors.InsufficientPrivilege:
            pass
    conn.execute(
        sql.SQL(
            """
            CREATE TABLE vectors (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
                owner TEXT NOT NULL CHECK (owner IN ('passage', 'message')),
                item_seq BIGINT NOT NULL,
                dimension INTEGER NOT NULL,
                vector {} NOT NULL,
                UNIQUE (owner, item_seq)
            );
            CREATE INDEX vectors_agent ON vectors(agent_id, owner, id);
            """
        ).format(sql.SQL(kind))
    )


@migration
def m003_text_search(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """What BM25 needs that a tsvector lacks, and stop words kept.

    FTS5 indexes every word; PostgreSQL's language configurations drop stop
    words, so a query made only of them ("the is") found nothing. The
    configuration `memgpt_lite_search` copies the database's search language
    with its Snowball stemmer made again without a stop-word list. BM25 also
    needs each row's length in words and the agent's total, which PostgreSQL
    does not keep: `search_length` and the agents' `*_tokens` counters, kept by
    the store's writes (see fulltext.py)."""
    language = conn.execute("SELECT value FROM settings WHERE key = 'search_language'").fetchone()[
        0
    ]
    conn.execute(
        sql.SQL("CREATE TEXT SEARCH CONFIGURATION memgpt_lite_search (COPY = {})").format(
            sql.Identifier(language)
        )
    )
    stemmers = conn.execute(
        "SELECT DISTINCT d.dictname, d.dictinitoption FROM pg_ts_config_map m "
        "JOIN pg_ts_config c ON c.oid = m.mapcfg JOIN pg_ts_dict d ON d.oid = m.mapdict "
        "JOIN pg_ts_template t ON t.oid = d.dicttemplate "
        "WHERE c.cfgname = %s AND t.tmplname = 'snowball'",
        [language],
    ).fetchall()
    for number, (name, options) in enumerate(stemmers):
        found = re.search(r"language\s*=\s*'?([a-z_]+)", options or "")
        if not found:
            continue
        stemmer = sql.Identifier(f"memgpt_lite_stem_{number}")
        conn.execute(
            sql.SQL("CREATE TEXT SEARCH DICTIONARY {} (TEMPLATE = snowball, LANGUAGE = {})").format(
                stemmer, sql.Identifier(found.group(1))
            )
        )
        conn.execute(
            sql.SQL(
                "ALTER TEXT SEARCH CONFIGURATION memgpt_lite_search "
                "ALTER MAPPING REPLACE {} WITH {}"
            ).format(sql.Identifier(name), stemmer)
        )
    conn.execute(
        """
        ALTER TABLE messages ADD COLUMN search_length INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE passages ADD COLUMN search_length INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE agents ADD COLUMN message_tokens BIGINT NOT NULL DEFAULT 0;
        ALTER TABLE agents ADD COLUMN passage_tokens BIGINT NOT NULL DEFAULT 0;
        """
    )


@migration
def m004_users_and_api_keys(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """SQLite's m011: users and API keys (core/schema.py's USERS_AND_API_KEYS)."""
    conn.execute(ddl(USERS_AND_API_KEYS, TYPES))


@migration
def m005_passage_supersession(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """SQLite's m012: facts that change (core/schema.py's PASSAGE_SUPERSESSION)."""
    conn.execute(ddl(PASSAGE_SUPERSESSION, TYPES))


@migration
def m006_block_history(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """SQLite's m013: every value a block held (core/schema.py's BLOCK_HISTORY)."""
    conn.execute(ddl(BLOCK_HISTORY, TYPES))


@migration
def m007_reflected_seq(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """SQLite's m014: the newest message seq a reflection has read (REFLECTED_SEQ)."""
    conn.execute(ddl(REFLECTED_SEQ, TYPES))


@migration
def m008_tool_registry(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """SQLite's m015: each user's tools and MCP servers (TOOL_REGISTRY)."""
    conn.execute(ddl(TOOL_REGISTRY, TYPES))


@migration
def m009_admin_keys(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """SQLite's m016: admin keys (ADMIN_KEYS)."""
    conn.execute(ddl(ADMIN_KEYS, TYPES))


@migration
def m010_tool_tags(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """SQLite's m017: a registered tool's tags (TOOL_TAGS)."""
    conn.execute(TOOL_TAGS)


@migration
def m011_message_edits(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """A stamp of each agent's message edits and deletions, which the store's
    edits and deletions move (as they move the counters): a kept window
    (core/window_cache.py) is read again once it moved."""
    conn.execute("ALTER TABLE agents ADD COLUMN message_edits BIGINT NOT NULL DEFAULT 0")


@migration
def m012_agent_names_per_owner(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """SQLite's m018: an agent's name is unique within its owner, not across
    users, and an agent may have a display name (unique within its owner
    too); agents named like an agent id are renamed `renamed-<name>`."""
    conn.execute(
        """
        ALTER TABLE agents DROP CONSTRAINT agents_name_key;
        DROP INDEX agents_owner;
        ALTER TABLE agents ADD COLUMN display_name TEXT;
        ALTER TABLE agents ADD CONSTRAINT agents_owner_name_key UNIQUE (owner, name);
        ALTER TABLE agents ADD CONSTRAINT agents_owner_display_name_key
            UNIQUE (owner, display_name);
        CREATE INDEX agents_name ON agents(name);
        """
    )
    for agent_id, name in conn.execute("SELECT id, name FROM agents").fetchall():
        if is_id_shaped(name):
            conn.execute("UPDATE agents SET name = %s WHERE id = %s", [f"renamed-{name}", agent_id])


@migration
def m013_letta_runs(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """SQLite's m019: the runs of Letta's asynchronous sends (LETTA_RUNS)."""
    conn.execute(ddl(LETTA_RUNS, TYPES))


@migration
def m014_sent_requests(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """SQLite's m020: the sends answered under an idempotency key (SENT_REQUESTS)."""
    conn.execute(ddl(SENT_REQUESTS, TYPES))
    conn.execute(SENT_REQUESTS_INDEX)


@migration
def m015_block_owner(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """SQLite's m021: a standalone block's owner (BLOCK_OWNER)."""
    conn.execute(BLOCK_OWNER)
    conn.execute(BLOCK_OWNER_INDEX)


@migration
def m016_conversations(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """SQLite's m022: an agent's conversations (CONVERSATIONS)."""
    conn.execute(ddl(CONVERSATIONS, TYPES))


@migration
def m017_letta_run_streams(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """SQLite's m023: Letta's runs background and renewed, and a background
    run's chunks (LETTA_RUN_STREAMS). m016 is the conversations'."""
    conn.execute(ddl(LETTA_RUN_STREAMS, TYPES))


@migration
def m018_agent_groups(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """SQLite's m024: groups of agents (AGENT_GROUPS)."""
    conn.execute(ddl(AGENT_GROUPS, TYPES))


@migration
def m019_display_names_repeat(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """SQLite's m025: an owner's agents may share a display name (Letta's
    names are free text); the name stays unique within the owner."""
    conn.execute("ALTER TABLE agents DROP CONSTRAINT agents_owner_display_name_key")


@migration
def m020_identities(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """SQLite's m026: Letta's identities and their links (IDENTITIES)."""
    conn.execute(ddl(IDENTITIES, TYPES))


@migration
def m021_providers(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """SQLite's m027: users' providers, their keys sealed (PROVIDERS)."""
    conn.execute(ddl(PROVIDERS, TYPES))


@migration
def m022_archives(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """SQLite's m028: Letta's archives and the archive attached to an agent
    besides its own (ARCHIVES). m021 is the providers'."""
    conn.execute(ddl(ARCHIVES, TYPES))


@migration
def m023_group_members(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """SQLite's m029: groups that talk, a group's main agent NULL for a
    round-robin one (GROUP_MEMBERS). m022 is the archives'."""
    conn.execute("ALTER TABLE agent_groups ALTER COLUMN manager_agent_id DROP NOT NULL")
    conn.execute(ddl(GROUP_MEMBERS, TYPES))


@migration
def m024_step_feedback(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """SQLite's m030: Letta's feedback on steps, and token usage indexed by
    step id (STEP_FEEDBACK). m023 is the groups'."""
    conn.execute(ddl(STEP_FEEDBACK, TYPES))


def applied(conn: psycopg.Connection) -> list[str]:
    """The names of the migrations applied to the database ([] when new)."""
    exists = conn.execute("SELECT to_regclass('memgpt_lite_migrations')").fetchone()
    if exists is None or exists[0] is None:
        return []
    return [row[0] for row in conn.execute("SELECT name FROM memgpt_lite_migrations ORDER BY id")]


def check_schema(names: list[str], where: str) -> list[tuple[str, Migration]]:
    """The migrations pending, given those applied. Refuses a database
    written by a newer memgpt_lite (it has migrations we do not know)."""
    refuse_newer(names, [name for name, _ in MIGRATIONS], where)
    return [(name, function) for name, function in MIGRATIONS if name not in names]


def migrate(conn: psycopg.Connection, where: str, chosen: PostgresOptions) -> list[str]:
    """Apply the pending migrations in one transaction, under the advisory
    lock, checking again once it is held (another process may have applied
    them while this one waited); returns the names this call applied.
    `conn` is in autocommit mode; `chosen`: a new database's choices."""
    done: list[str] = []
    if not check_schema(applied(conn), where):
        return done
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", [MIGRATION_LOCK])
        conn.execute(
            "CREATE TABLE IF NOT EXISTS memgpt_lite_migrations ("
            "id INTEGER GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name TEXT NOT NULL UNIQUE, "
            "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        for name, function in check_schema(applied(conn), where):
            function(conn, chosen)
            conn.execute("INSERT INTO memgpt_lite_migrations (name) VALUES (%s)", [name])
            done.append(name)
    return done
