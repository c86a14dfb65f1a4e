"""The PostgreSQL schema, as an ordered list of named migrations.

Each migration is a function run inside the transaction that applies it, and
recorded by name in `memgpt_lite_migrations`. A migration that has shipped is
never edited: change the schema by adding a function at the end. They are
PostgreSQL's own history (SQLite's are in storage/sqlite/migrations.py): the
first one creates the schema SQLite reached in ten steps.

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

from memgpt_lite.errors import ConfigError, StoreError
from memgpt_lite.settings.values import PG_LANGUAGE_ENV, PostgresOptions

Migration = Callable[[psycopg.Connection, PostgresOptions], None]
MIGRATIONS: list[tuple[str, Migration]] = []
# pg_advisory_xact_lock's key for applying migrations: any constant no other
# application on the server is likely to use ("memgpt" in ASCII).
MIGRATION_LOCK = 0x6D656D677074


def migration(function: Migration) -> Migration:
    MIGRATIONS.append((function.__name__, function))
    return function


@migration
def m001_initial(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    conn.execute(
        """
        CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE agents (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            llm TEXT NOT NULL,
            system TEXT NOT NULL,
            tool_names TEXT NOT NULL DEFAULT '[]',
            context_start BIGINT NOT NULL DEFAULT 0,
            summary TEXT NOT NULL DEFAULT '',
            settings TEXT NOT NULL DEFAULT '{}',
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
        );
        CREATE TABLE blocks (
            id TEXT PRIMARY KEY,
            label TEXT NOT NULL,
            value TEXT NOT NULL DEFAULT '',
            char_limit BIGINT NOT NULL,
            description TEXT NOT NULL DEFAULT '',
            read_only BOOLEAN NOT NULL DEFAULT FALSE,
            updated_at TIMESTAMPTZ NOT NULL
        );
        CREATE TABLE agent_blocks (
            agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            block_id TEXT NOT NULL REFERENCES blocks(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            PRIMARY KEY (agent_id, block_id)
        );
        CREATE INDEX agent_blocks_block ON agent_blocks(block_id);
        CREATE TABLE messages (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            role TEXT NOT NULL,
            content TEXT,
            tool_calls TEXT,
            tool_call_id TEXT,
            name TEXT,
            step_id TEXT,
            created_at TIMESTAMPTZ NOT NULL,
            search_text TEXT,
            -- Written by the store from `search_text`, accents removed.
            search_vector TSVECTOR
        );
        CREATE INDEX messages_agent_seq ON messages(agent_id, seq);
        CREATE INDEX messages_agent_created ON messages(agent_id, created_at);
        CREATE INDEX messages_search ON messages USING GIN (search_vector);
        CREATE TABLE passages (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            text TEXT NOT NULL,
            context TEXT NOT NULL DEFAULT '',
            tags TEXT[] NOT NULL DEFAULT '{}',
            text_hash TEXT NOT NULL,
            created_at TIMESTAMPTZ NOT NULL,
            -- The text weighted A, its context D (see fulltext.py).
            search_vector TSVECTOR NOT NULL,
            UNIQUE (agent_id, text_hash)
        );
        CREATE INDEX passages_agent_seq ON passages(agent_id, seq);
        CREATE INDEX passages_agent_created ON passages(agent_id, created_at);
        CREATE INDEX passages_search ON passages USING GIN (search_vector);
        CREATE TABLE step_locks (
            agent_id TEXT PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
            holder TEXT NOT NULL,
            pid INTEGER NOT NULL,
            hostname TEXT NOT NULL,
            host_id TEXT NOT NULL,
            process_start TEXT NOT NULL DEFAULT '',
            acquired_at DOUBLE PRECISION NOT NULL,
            renewed_at DOUBLE PRECISION NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL
        );
        CREATE TABLE token_usage (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            step_id TEXT NOT NULL,
            model TEXT NOT NULL,
            prompt_tokens BIGINT NOT NULL,
            completion_tokens BIGINT NOT NULL,
            total_tokens BIGINT NOT NULL,
            requests BIGINT NOT NULL,
            estimated BOOLEAN NOT NULL DEFAULT FALSE,
            created_at TIMESTAMPTZ NOT NULL
        );
        CREATE INDEX token_usage_agent ON token_usage(agent_id, model);
        CREATE INDEX token_usage_step ON token_usage(agent_id, step_id);
        """
    )
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
    """Users, for the HTTP server: each agent belongs to one (`owner`; the
    agents that exist already belong to the default user 'local'), and
    `api_keys` holds the SHA-256 of each key's secret (see keys.py), kept
    when revoked. Agent names stay unique across users. ("user" is quoted:
    it is a reserved word in PostgreSQL.)"""
    conn.execute(
        """
        ALTER TABLE agents ADD COLUMN owner TEXT NOT NULL DEFAULT 'local';
        CREATE INDEX agents_owner ON agents(owner, name);
        CREATE TABLE api_keys (
            id TEXT PRIMARY KEY,
            "user" TEXT NOT NULL,
            key_hash TEXT NOT NULL UNIQUE,
            created_at TIMESTAMPTZ NOT NULL,
            revoked_at TIMESTAMPTZ
        );
        CREATE INDEX api_keys_created ON api_keys(created_at);
        """
    )


@migration
def m005_passage_supersession(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """Facts that change: a passage replaced by a newer one is kept, with the
    id of the passage that replaced it and when (SQLite's m012). The partial
    index finds what a passage replaced, and whether an agent has any
    replaced passage at all."""
    conn.execute(
        """
        ALTER TABLE passages ADD COLUMN superseded_by TEXT;
        ALTER TABLE passages ADD COLUMN superseded_at TIMESTAMPTZ;
        CREATE INDEX passages_superseded ON passages(agent_id, superseded_by)
            WHERE superseded_by IS NOT NULL;
        """
    )


@migration
def m006_block_history(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """Every value a block held, with when and who set it (`author`, see
    `BlockVersion`), so an edit can be read back as a diff and undone. A
    block's history goes with the block. The blocks that exist already start
    theirs from their current value, by an author no one recorded."""
    conn.execute(
        """
        CREATE TABLE block_history (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            block_id TEXT NOT NULL REFERENCES blocks(id) ON DELETE CASCADE,
            label TEXT NOT NULL,
            value TEXT NOT NULL,
            author TEXT NOT NULL,
            created_at TIMESTAMPTZ NOT NULL
        );
        CREATE INDEX block_history_block ON block_history(block_id, seq);
        INSERT INTO block_history (block_id, label, value, author, created_at)
            SELECT id, label, value, 'unknown', updated_at FROM blocks ORDER BY updated_at;
        """
    )


@migration
def m007_reflected_seq(conn: psycopg.Connection, chosen: PostgresOptions) -> None:
    """The newest message seq a reflection has read (loop/reflection.py)."""
    conn.execute("ALTER TABLE agents ADD COLUMN reflected_seq BIGINT NOT NULL DEFAULT 0")


def applied(conn: psycopg.Connection) -> list[str]:
    """The names of the migrations applied to the database ([] when new)."""
    exists = conn.execute("SELECT to_regclass('memgpt_lite_migrations')").fetchone()
    if exists is None or exists[0] is None:
        return []
    return [row[0] for row in conn.execute("SELECT name FROM memgpt_lite_migrations ORDER BY id")]


def schema_number(names: list[str]) -> int:
    return max((int(n[1:4]) for n in names if n[1:4].isdigit()), default=0)


def check_schema(names: list[str], where: str) -> list[tuple[str, Migration]]:
    """The migrations pending, given those applied. Refuses a database
    written by a newer memgpt_lite (it has migrations we do not know)."""
    known = [name for name, _ in MIGRATIONS]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise StoreError(
            f"{where} was written by a newer memgpt_lite: schema {schema_number(names)}, "
            f"this version knows {schema_number(known)}; upgrade memgpt_lite"
        )
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
