"""The SQLite backend, the embedded default. All SQL lives in this package."""
