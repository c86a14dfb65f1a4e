"""The settings as the edges hand them down: typed, frozen, resolved.

The command line, the server and `Agent` resolve one `Settings` from the
environment (resolve.py `resolve_settings`) and pass its parts to what they
build: `storage` to `open_storage`, `cache_dir` to `TokenCounter`,
`embedding_model_dir` to the local embedder. A part left out means the
built-in default, never a look at the environment.

The model endpoint and its timeout are resolved apart (resolve.py
`resolve_endpoint`, `resolve_timeout`): an agent's own base URL and timeout
come first, and config.toml is read only when they are missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from memgpt_lite.settings.folders import FolderNames

# The variables that set what follows (read by resolve.py; named here for the
# errors that tell which one to change).
PG_LANGUAGE_ENV = "MEMGPT_LITE_PG_LANGUAGE"  # PostgresOptions.search_language
PG_VECTORS_ENV = "MEMGPT_LITE_PG_VECTORS"  # "off": PostgresOptions.server_vectors False
EMBEDDING_MODEL_DIR_ENV = "MEMGPT_LITE_EMBEDDING_MODEL_DIR"  # Settings.embedding_model_dir
TOOL_TIMEOUT_ENV = "MEMGPT_LITE_TOOL_TIMEOUT"  # ToolRunSettings.timeout_seconds
TOOL_MEMORY_ENV = "MEMGPT_LITE_TOOL_MEMORY_MB"  # ToolRunSettings.memory_mb
SECRET_ENV = "MEMGPT_LITE_SECRET"  # SecretSource.value
SECRET_FILENAME = "secret.key"  # SecretSource.file, in the home folder
# The only variables of the caller's environment a tool's process is given:
# never a key, a database URL or a MEMGPT_LITE_* setting.
TOOL_ENVIRONMENT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")


@dataclass(frozen=True)
class PostgresOptions:
    """How a new PostgreSQL database is made; a database keeps its choices."""

    search_language: str = "english"  # the text search configuration for stemming
    # Vectors in pgvector's type when the server has it; False: float32 bytes,
    # searched in each process as with SQLite (for tests, and for servers whose
    # pgvector should not be used).
    server_vectors: bool = True


@dataclass(frozen=True)
class SecretSource:
    """Where the secret that seals agents' API keys at rest comes from
    (storage/core/sealed_keys.py): `value` ($MEMGPT_LITE_SECRET) if set,
    else the file `file`, made when a key is first sealed."""

    file: Path
    value: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class StorageSettings:
    """What opening a store takes from the settings."""

    folder_names: FolderNames = field(default_factory=FolderNames)
    postgres: PostgresOptions = field(default_factory=PostgresOptions)
    # None: keys already sealed are kept as they are, and a new key cannot be stored.
    secret: SecretSource | None = None


@dataclass(frozen=True)
class ToolRunSettings:
    """How a registered tool's call runs, in a process of its own
    (tools/source/): its limits, and the variables of the caller's
    environment it gets (of TOOL_ENVIRONMENT only; HOME is its own folder)."""

    timeout_seconds: float = 30.0
    memory_mb: int = 1024  # its address space (RLIMIT_AS)
    result_max_chars: int = 100_000  # a longer result is cut, saying so
    output_max_bytes: int = 1_000_000  # what it prints; more stops it
    environment: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Settings:
    """The settings of a process that are not an agent's own."""

    home: Path  # holds the default database and config.toml
    cache_dir: Path  # data derived from installed packages (the token vocabularies)
    folder_names: FolderNames = field(default_factory=FolderNames)
    postgres: PostgresOptions = field(default_factory=PostgresOptions)
    embedding_model_dir: Path | None = None  # the local embedder's model folder, if chosen
    tools: ToolRunSettings = field(default_factory=ToolRunSettings)
    secret: SecretSource | None = None  # what seals agents' API keys at rest

    @property
    def storage(self) -> StorageSettings:
        return StorageSettings(self.folder_names, self.postgres, self.secret)
