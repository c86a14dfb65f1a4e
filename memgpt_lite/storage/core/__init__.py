"""The storage core: what SQLite and PostgreSQL say alike, written once.

The seam has three tiers:

1. Protocols (storage/protocol.py, storage/protocols/): what the rest of
   memgpt_lite needs from a database, one small protocol per concern,
   composed into `Storage`, with the rules every method keeps.
2. The core (this package): every method of `Storage`, on any database, in
   `CoreStore` (store.py): the transaction rules (transactions.py), agents
   (agents.py), blocks and their history (blocks.py), reads of messages
   (messages.py) and of passages and vectors (archival.py), step locks
   (locks.py), token usage and API keys (accounts.py), the tool registry
   and MCP servers (tools.py), rows as models
   (rows.py), the schema both dialects create (schema.py) and the words of
   errors (errors.py). Its statements are written once (sql.py), with `?`
   placeholders and SQL both dialects read alike; a `Dialect` says the rest.
3. A backend (storage/sqlite/, storage/postgres/): only what differs, as the
   methods the core leaves to it (each core module names them): its
   connection and transaction primitives, its driver's errors worded in one
   line, a `Dialect` (time encoding, row locks, lists, tags, block ids), the
   writes of messages and passages with what it keeps beside them (SQLite's
   triggers and FTS5 index, PostgreSQL's counters and tsvectors), its
   full-text ranking, how it stores vectors, and its migrations.

A backend's store class lists its own parts first and `CoreStore` last, so
that its methods take the place of the core's stubs. To add a backend: a
package with a `Dialect`, a primitives class (as sqlite/primitives.py: run a
statement, BEGIN, COMMIT and savepoints, errors, busy timeout),
the write, ranking and vector methods of core/messages.py and
core/archival.py, migrations that fill core/schema.py's templates with its
column types, and a branch in storage/open.py; the contract suite
(tests/support/contract/) then runs against it unchanged.

The core imports no database driver and no backend (tests/storage/test_storage_seam.py).
"""
