"""What the tests share besides conftest.py's fixtures and hooks: helpers for
running once per backend (backends.py), the PostgreSQL server of a test run
(postgres_server.py), a chat on a pseudo-terminal (chat_terminal.py), a live
server (serving.py), the docs' text (docs_text.py), the `alone` marker
(turns.py), the storage contract (contract/), the schema snapshots and old
databases of tests/data/storage (storage_schema.py, old_databases.py), and
where the repository's files are (paths.py).

Tests import them as `support.<module>`: pyproject.toml's pytest settings put
tests/ on sys.path (`pythonpath = ["tests"]`).
"""
