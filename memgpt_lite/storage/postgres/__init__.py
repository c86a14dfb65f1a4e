"""The PostgreSQL backend: `PostgresStore` (store.py) implements `storage.protocol.Storage`."""
