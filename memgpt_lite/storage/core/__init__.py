"""The storage core: what SQLite and PostgreSQL say alike, written once."""
