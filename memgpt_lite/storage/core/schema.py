"""The schema both dialects share, written once, and how a database's
migrations are checked.

Each backend's migrations (storage/sqlite/migrations.py,
storage/postgres/migrations.py) are its own ordered list, applied on open;
a migration that shipped is never edited. Where both create the same tables,
the statements are these templates, filled with the backend's column types
(`ColumnTypes`), so that each migration runs, word for word, the statement
it ran when it shipped (SQLite keeps that text in `sqlite_master`):
tests/storage/test_storage_schema.py compares a new database with a snapshot of the
schema the shipped migrations made. The indentation is part of that text.
"""

from __future__ import annotations

import re
from string import Template
from typing import TypedDict

from memgpt_lite.errors import StoreError


class ColumnTypes(TypedDict):
    """A backend's words for the columns the templates leave open."""

    bigint: str  # a count or a seq
    bool: str
    false: str  # the boolean's default
    time: str
    seq: str  # the column and key a database numbers itself
    real: str  # Unix seconds


def ddl(template: str, types: ColumnTypes) -> str:
    """`template` with the backend's column types."""
    return Template(template).substitute(types)


# The agent's own columns, the first of its table in both.
AGENT_COLUMNS = """\
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            llm TEXT NOT NULL,
            system TEXT NOT NULL,
            tool_names TEXT NOT NULL DEFAULT '[]',
            context_start $bigint NOT NULL DEFAULT 0,
            summary TEXT NOT NULL DEFAULT '',
            settings TEXT NOT NULL DEFAULT '{}',"""

# Blocks, linked to agents in order: one block may belong to several agents.
BLOCKS = """
        CREATE TABLE blocks (
            id TEXT PRIMARY KEY,
            label TEXT NOT NULL,
            value TEXT NOT NULL DEFAULT '',
            char_limit $bigint NOT NULL,
            description TEXT NOT NULL DEFAULT '',
            read_only $bool NOT NULL DEFAULT $false,
            updated_at $time NOT NULL
        );
        CREATE TABLE agent_blocks (
            agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            block_id TEXT NOT NULL REFERENCES blocks(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            PRIMARY KEY (agent_id, block_id)
        );
        CREATE INDEX agent_blocks_block ON agent_blocks(block_id);"""

# A message's columns, up to those a backend adds for its search.
MESSAGE_COLUMNS = """
        CREATE TABLE messages (
            seq $seq,
            id TEXT NOT NULL UNIQUE,
            agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            role TEXT NOT NULL,
            content TEXT,
            tool_calls TEXT,
            tool_call_id TEXT,
            name TEXT,
            step_id TEXT,
            created_at $time NOT NULL,
            search_text TEXT"""
MESSAGE_INDEXES = """
        CREATE INDEX messages_agent_seq ON messages(agent_id, seq);
        CREATE INDEX messages_agent_created ON messages(agent_id, created_at);"""
# A passage's first columns.
PASSAGE_COLUMNS = """
        CREATE TABLE passages (
            seq $seq,
            id TEXT NOT NULL UNIQUE,
            agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            text TEXT NOT NULL,"""
PASSAGE_INDEX = """
        CREATE INDEX passages_agent_seq ON passages(agent_id, seq);"""

# The lock that serializes one agent's steps across threads, processes and
# hosts: one row per agent while a step holds it (see core/locks.py). Times
# are Unix seconds; `host_id` says where `pid` means something,
# `process_start` tells a reused pid from the holder.
STEP_LOCKS = """
        CREATE TABLE step_locks (
            agent_id TEXT PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
            holder TEXT NOT NULL,
            pid INTEGER NOT NULL,
            hostname TEXT NOT NULL,
            host_id TEXT NOT NULL,
            process_start TEXT NOT NULL DEFAULT '',
            acquired_at $real NOT NULL,
            renewed_at $real NOT NULL,
            expires_at $real NOT NULL
        )"""

# The tokens each model answer cost, one row per answer, kept with its step
# (`step_id`) and model, so an agent's totals and their price come from the
# store. `estimated` marks rows the endpoint reported no usage for (our own
# count). Rows stay when messages are popped: those tokens were spent.
TOKEN_USAGE = """
        CREATE TABLE token_usage (
            seq $seq,
            agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            step_id TEXT NOT NULL,
            model TEXT NOT NULL,
            prompt_tokens $bigint NOT NULL,
            completion_tokens $bigint NOT NULL,
            total_tokens $bigint NOT NULL,
            requests $bigint NOT NULL,
            estimated $bool NOT NULL DEFAULT $false,
            created_at $time NOT NULL
        );
        CREATE INDEX token_usage_agent ON token_usage(agent_id, model);"""

# Users, for the HTTP server: each agent belongs to one (`owner`; the agents
# that exist already, made by the command line or the library, belong to
# the default user 'local'), and `api_keys` holds the SHA-256 of each key's
# secret (see memgpt_lite/agent/keys.py), kept when revoked. Agent names stay
# unique across users. ("user" is quoted: a reserved word in PostgreSQL.)
USERS_AND_API_KEYS = """
        ALTER TABLE agents ADD COLUMN owner TEXT NOT NULL DEFAULT 'local';
        CREATE INDEX agents_owner ON agents(owner, name);
        CREATE TABLE api_keys (
            id TEXT PRIMARY KEY,
            "user" TEXT NOT NULL,
            key_hash TEXT NOT NULL UNIQUE,
            created_at $time NOT NULL,
            revoked_at $time
        );
        CREATE INDEX api_keys_created ON api_keys(created_at);
        """

# Facts that change: a passage replaced by a newer one is kept, with the id
# of the passage that replaced it and when. The partial index finds what a
# passage replaced, and tells in O(1) whether an agent has any replaced
# passage at all (search looks, to rank them after the current ones).
PASSAGE_SUPERSESSION = """
        ALTER TABLE passages ADD COLUMN superseded_by TEXT;
        ALTER TABLE passages ADD COLUMN superseded_at $time;
        CREATE INDEX passages_superseded ON passages(agent_id, superseded_by)
            WHERE superseded_by IS NOT NULL;
        """

# Every value a block held, with when and who set it (`author`, see
# `BlockVersion`), so an edit can be read back as a diff and undone. A
# block's history goes with the block. The blocks that exist already start
# theirs from their current value, by an author no one recorded.
BLOCK_HISTORY = """
        CREATE TABLE block_history (
            seq $seq,
            block_id TEXT NOT NULL REFERENCES blocks(id) ON DELETE CASCADE,
            label TEXT NOT NULL,
            value TEXT NOT NULL,
            author TEXT NOT NULL,
            created_at $time NOT NULL
        );
        CREATE INDEX block_history_block ON block_history(block_id, seq);
        INSERT INTO block_history (block_id, label, value, author, created_at)
            SELECT id, label, value, 'unknown', updated_at FROM blocks ORDER BY updated_at;
        """

# The newest message seq a reflection has read (loop/reflection.py).
REFLECTED_SEQ = "ALTER TABLE agents ADD COLUMN reflected_seq $bigint NOT NULL DEFAULT 0"

# The tool registry: each user's tools (`ToolDefinition`) and MCP servers
# (`MCPServer`), a name unique per owner. Lists and mappings are JSON text.
# Agents use tools by name (their `tool_names`), so no foreign key links them.
TOOL_REGISTRY = """
        CREATE TABLE tools (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            name TEXT NOT NULL,
            description TEXT NOT NULL DEFAULT '',
            json_schema TEXT NOT NULL,
            kind TEXT NOT NULL,
            source_code TEXT,
            module TEXT,
            mcp_server TEXT,
            requirements TEXT NOT NULL DEFAULT '[]',
            trusted $bool NOT NULL DEFAULT $false,
            created_at $time NOT NULL,
            updated_at $time NOT NULL,
            UNIQUE (owner, name)
        );
        CREATE TABLE mcp_servers (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            name TEXT NOT NULL,
            transport TEXT NOT NULL,
            command TEXT,
            args TEXT NOT NULL DEFAULT '[]',
            env TEXT NOT NULL DEFAULT '{}',
            url TEXT,
            headers TEXT NOT NULL DEFAULT '{}',
            created_at $time NOT NULL,
            UNIQUE (owner, name)
        );
        """

# Admin keys: a key that may also do over HTTP what runs code on the
# server's machine (memgpt_lite/server/context.py). Keys made before are not.
ADMIN_KEYS = "ALTER TABLE api_keys ADD COLUMN admin $bool NOT NULL DEFAULT $false"

# A registered tool's tags (Letta's tool tags), a JSON list.
TOOL_TAGS = "ALTER TABLE tools ADD COLUMN tags TEXT NOT NULL DEFAULT '[]'"

# The runs of Letta's asynchronous sends (server/letta/runs.py), kept so that
# any server process on the database answers a client polling one. A run's
# `message_ids` (a JSON list) are the messages its step stored.
LETTA_RUNS = """
        CREATE TABLE letta_runs (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            status TEXT NOT NULL,
            stop_reason TEXT,
            message_ids TEXT NOT NULL DEFAULT '[]',
            error TEXT,
            created_at $time NOT NULL,
            completed_at $time
        );
        CREATE INDEX letta_runs_owner ON letta_runs(owner, created_at);"""
# Every send of Letta's is a run (server/letta/run_life.py). `background`:
# a streamed send whose chunks are kept (`letta_run_chunks`), so a client
# that lost its stream reads it again from any server process on the
# database. `renewed_at`: the server running the run's step renews it while
# the step runs; an open run not renewed for long lost its server.
# `conversation_id`: the agent's conversation the run's step ran in (NULL:
# its default one), as Letta's Run names it.
# A background run's stream, chunk by chunk (`seq_id` from 1, `data` the
# chunk's JSON), kept a few hours (by `created_at`), gone with its run.
LETTA_RUN_STREAMS = """
        ALTER TABLE letta_runs ADD COLUMN background $bool NOT NULL DEFAULT $false;
        ALTER TABLE letta_runs ADD COLUMN renewed_at $time;
        ALTER TABLE letta_runs ADD COLUMN conversation_id TEXT;
        UPDATE letta_runs SET renewed_at = created_at;
        CREATE INDEX letta_runs_open ON letta_runs (renewed_at) WHERE completed_at IS NULL;
        CREATE TABLE letta_run_chunks (
            run_id TEXT NOT NULL REFERENCES letta_runs(id) ON DELETE CASCADE,
            seq_id $bigint NOT NULL,
            data TEXT NOT NULL,
            created_at $time NOT NULL,
            PRIMARY KEY (run_id, seq_id)
        );
        CREATE INDEX letta_run_chunks_created ON letta_run_chunks (created_at);"""
# The sends the server answered under a client's Idempotency-Key (or Letta's
# otid), per owner and agent, with their answer once it is known (NULL while
# the first still runs): server/sendonce.py. Kept for a bounded time, found
# by that key; old ones deleted by `created_at`.
SENT_REQUESTS = """
        CREATE TABLE sent_requests (
            owner TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            request_key TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            outcome TEXT,
            created_at $time NOT NULL,
            PRIMARY KEY (owner, agent_id, request_key)
        )"""
SENT_REQUESTS_INDEX = "CREATE INDEX sent_requests_created ON sent_requests (created_at)"

# A standalone block's owner (Letta's POST /v1/blocks): a block made on its
# own belongs to a user while no agent holds it, and is kept when detached
# from its last agent. NULL for an agent's own blocks, which go with their
# last agent as before.
BLOCK_OWNER = "ALTER TABLE blocks ADD COLUMN owner TEXT"
BLOCK_OWNER_INDEX = "CREATE INDEX blocks_owner ON blocks (owner)"

# An agent's conversations (`Conversation`): each its own message history,
# window and recursive summary (`window_summary`), over the agent's memory;
# `summary` is Letta's (a title its user gives). The owner is the agent's.
# A message's `conversation_id`: NULL for the agent's default conversation,
# so that adding the column rewrites no row of a long history, and the
# partial index holds only the other conversations' messages. No foreign
# key: a conversation's messages are deleted by the store's own deletes,
# which keep the counters (PostgreSQL) in step. A conversation's step lock
# has a row of its own, as an agent's default conversation has in
# `step_locks` (core/locks.py).
CONVERSATIONS = """
        CREATE TABLE conversations (
            id TEXT PRIMARY KEY,
            agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            summary TEXT,
            context_start $bigint NOT NULL DEFAULT 0,
            window_summary TEXT NOT NULL DEFAULT '',
            pressure_warned $bool NOT NULL DEFAULT $false,
            created_at $time NOT NULL,
            updated_at $time NOT NULL
        );
        CREATE INDEX conversations_agent ON conversations(agent_id, created_at);
        ALTER TABLE messages ADD COLUMN conversation_id TEXT;
        CREATE INDEX messages_conversation ON messages(conversation_id, seq)
            WHERE conversation_id IS NOT NULL;
        CREATE TABLE conversation_step_locks (
            conversation_id TEXT PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
            holder TEXT NOT NULL,
            pid INTEGER NOT NULL,
            hostname TEXT NOT NULL,
            host_id TEXT NOT NULL,
            process_start TEXT NOT NULL DEFAULT '',
            acquired_at $real NOT NULL,
            renewed_at $real NOT NULL,
            expires_at $real NOT NULL
        );
        """
# Groups of agents (Letta's multi-agent groups; storage/protocols/groups.py):
# a main agent, one group each, and its sleep-time agents, in order, which
# read its messages up to `processed_seq` (agent/sleeptime.py). A group goes
# with its main agent; a member deleted leaves the group without it.
AGENT_GROUPS = """
        CREATE TABLE agent_groups (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            manager_type TEXT NOT NULL,
            manager_agent_id TEXT NOT NULL UNIQUE REFERENCES agents(id) ON DELETE CASCADE,
            description TEXT NOT NULL DEFAULT '',
            frequency $bigint NOT NULL,
            max_message_buffer_length $bigint,
            min_message_buffer_length $bigint,
            processed_seq $bigint NOT NULL DEFAULT 0,
            last_run_at $time,
            last_error TEXT,
            created_at $time NOT NULL,
            updated_at $time NOT NULL
        );
        CREATE INDEX agent_groups_owner ON agent_groups(owner, created_at);
        CREATE TABLE agent_group_members (
            group_id TEXT NOT NULL REFERENCES agent_groups(id) ON DELETE CASCADE,
            agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            PRIMARY KEY (group_id, agent_id)
        );
        CREATE INDEX agent_group_members_agent ON agent_group_members(agent_id);"""

# Identities (Letta's; storage/protocols/identities.py): the people or
# organisations a user's app serves, each under the app's own key, unique
# within the owner. An identity's agents and blocks, in the order linked;
# a link goes with its identity, agent or block (ON DELETE CASCADE), so no
# identity names an agent or block that is gone.
IDENTITIES = """
        CREATE TABLE identities (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            identifier_key TEXT NOT NULL,
            name TEXT NOT NULL,
            identity_type TEXT NOT NULL,
            project_id TEXT,
            properties TEXT NOT NULL DEFAULT '[]',
            created_at $time NOT NULL,
            updated_at $time NOT NULL,
            UNIQUE (owner, identifier_key)
        );
        CREATE INDEX identities_owner ON identities(owner, created_at);
        CREATE TABLE identity_agents (
            identity_id TEXT NOT NULL REFERENCES identities(id) ON DELETE CASCADE,
            agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            PRIMARY KEY (identity_id, agent_id)
        );
        CREATE INDEX identity_agents_agent ON identity_agents(agent_id);
        CREATE TABLE identity_blocks (
            identity_id TEXT NOT NULL REFERENCES identities(id) ON DELETE CASCADE,
            block_id TEXT NOT NULL REFERENCES blocks(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            PRIMARY KEY (identity_id, block_id)
        );
        CREATE INDEX identity_blocks_block ON identity_blocks(block_id);"""

# Providers (Letta's bring-your-own-key providers; storage/protocols/providers.py):
# a user's model endpoints with the API keys they brought (sealed:
# core/sealed_keys.py), each under a name unique within the owner.
PROVIDERS = """
        CREATE TABLE providers (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            name TEXT NOT NULL,
            provider_type TEXT NOT NULL,
            base_url TEXT NOT NULL,
            api_key TEXT,
            region TEXT,
            api_version TEXT,
            created_at $time NOT NULL,
            updated_at $time NOT NULL,
            UNIQUE (owner, name)
        );"""

# Letta's archives (storage/protocols/archives.py). A named archive's passages
# are kept as an agent's are (the archival tier keeps a store's counters,
# embedding space and its passages' foreign key in a row of `agents`): under
# a row of `agents` of its own, of the archive's id, which is no agent (no
# agent list or lookup shows it: its id starts "archive-"). `archives` holds
# its name and owner, and goes with that row. `agent_archives` attaches to an
# agent the one archive it has besides its own: `archive_id` is the row that
# holds the archive's passages (a named archive's, or another agent's, whose
# own archive it then shares); a link goes with either row.
ARCHIVES = """
        CREATE TABLE archives (
            id TEXT PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
            owner TEXT NOT NULL,
            name TEXT NOT NULL,
            description TEXT,
            created_at $time NOT NULL,
            updated_at $time NOT NULL
        );
        CREATE INDEX archives_owner ON archives(owner, created_at);
        CREATE TABLE agent_archives (
            agent_id TEXT PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
            archive_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            created_at $time NOT NULL
        );
        CREATE INDEX agent_archives_archive ON agent_archives(archive_id, created_at);"""

# Groups that talk (Letta's round-robin, supervisor and dynamic groups;
# agent/groups.py): a round-robin group has no main agent (the column takes
# NULL: SQLite makes the table again for that, PostgreSQL drops the
# constraint), how many turns a send takes, what ends a dynamic group's
# round, and the conversation each of a group's agents talks in there, the
# main agent's on the group's row; a conversation deleted leaves NULL (the
# group's next send makes another).
GROUP_MEMBERS = """
        ALTER TABLE agent_groups ADD COLUMN max_turns $bigint;
        ALTER TABLE agent_groups ADD COLUMN termination_token TEXT;
        ALTER TABLE agent_groups ADD COLUMN conversation_id TEXT
            REFERENCES conversations(id) ON DELETE SET NULL;
        ALTER TABLE agent_group_members ADD COLUMN conversation_id TEXT
            REFERENCES conversations(id) ON DELETE SET NULL;"""

# Letta's feedback on a step (`PATCH /v1/steps/{id}/feedback`): "positive",
# "negative" or NULL, and its tags (a JSON list), one row per step given
# any, gone with its agent. And the index a step found by its id reads
# (a Letta client's `steps.retrieve`, a run's steps), which scanned every
# usage row before.
STEP_FEEDBACK = """
        CREATE TABLE step_feedback (
            agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            step_id TEXT NOT NULL,
            feedback TEXT,
            tags TEXT NOT NULL DEFAULT '[]',
            PRIMARY KEY (agent_id, step_id)
        );
        CREATE INDEX token_usage_step_id ON token_usage(step_id);"""

_NUMBER = re.compile(r"^m(\d+)_")


def schema_number(names: list[str]) -> int:
    """The number of the last of these migrations (`m014_...`: 14)."""
    numbers = [int(m.group(1)) for name in names if (m := _NUMBER.match(name))]
    return max(numbers, default=0)


def refuse_newer(applied: list[str], known: list[str], where: str) -> None:
    """Refuse a database written by a newer memgpt_lite: it has migrations
    this version does not know (the code that reads it would be older than
    its schema)."""
    if any(name not in known for name in applied):
        raise StoreError(
            f"{where} was written by a newer memgpt_lite: schema {schema_number(applied)}, "
            f"this version knows {schema_number(known)}; upgrade memgpt_lite"
        )
