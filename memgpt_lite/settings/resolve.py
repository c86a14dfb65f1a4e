"""Where state lives, and the defaults new agents start from.

`$MEMGPT_LITE_HOME` (or `~/.memgpt_lite`) holds the database and `config.toml`:

    model = "llama3.2"
    base_url = "http://localhost:11434/v1"
    embedder = "local"
    context_window = 8192
    timeout = 600
    db = "postgresql://sam@db.example.com:5432/agents"

Each setting comes from a command-line flag, else its environment variable,
else `config.toml`, else the built-in default. API keys never go in the file:
they stay in the environment (`OPENAI_API_KEY`).

`timeout` is the limit, in seconds, on one model request as a whole (retries,
backoff and a slowly dripping answer included). It is read each time an agent
runs, unless the agent was created with its own (`llm.timeout_seconds`).

`db` is where agents are stored: a SQLite file (`~` expanded; in config.toml
a relative path is relative to the file's folder) or a `postgresql://` URL.
Default: `$MEMGPT_LITE_HOME/memgpt_lite.db`. Show it with `redacted()`
(storage/location.py): a URL may hold a password.

Data derived from installed packages (the token vocabularies) is cached in
`$MEMGPT_LITE_HOME/cache` when `$MEMGPT_LITE_HOME` is set, else in
`$XDG_CACHE_HOME/memgpt_lite` (`~/.cache/memgpt_lite`); deleting it is safe.

This is the one module that reads the environment and config.toml: the
edges (the command line, the server, `Agent`) call it and hand the layers
below what it resolved (values.py, endpoint.py). Every command imports it, so
it stays light: the pydantic models of the settings are in `effective.py`,
imported by the functions that build them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memgpt_lite.errors import ConfigError, validation_message
from memgpt_lite.settings.endpoint import (
    DEFAULT_TIMEOUT_SECONDS,
    OPENAI_DEFAULT_BASE_URL,
    Endpoint,
    check_base_url,
    check_timeout,
    choose_endpoint,
    choose_timeout,
)
from memgpt_lite.settings.folders import (
    CACHE_DIRNAME,
    CONFIG_FILENAME,
    DB_FILENAME,
    FolderNames,
    is_url,
)
from memgpt_lite.settings.values import (
    EMBEDDING_MODEL_DIR_ENV,
    PG_LANGUAGE_ENV,
    PG_VECTORS_ENV,
    SECRET_ENV,
    SECRET_FILENAME,
    TOOL_ENVIRONMENT,
    TOOL_MEMORY_ENV,
    TOOL_TIMEOUT_ENV,
    PostgresOptions,
    SecretSource,
    Settings,
    ToolRunSettings,
)

if TYPE_CHECKING:
    from memgpt_lite.models import LLMConfig
    from memgpt_lite.settings.effective import (
        ConfigValue,
        EffectiveConfig,
        FileConfig,
        SettingValue,
    )

HOME_ENV = "MEMGPT_LITE_HOME"

# The environment variable of each setting, in the order `memgpt-lite config` shows them.
ENV_VARS = {
    "model": "MEMGPT_LITE_MODEL",
    "base_url": "OPENAI_BASE_URL",  # the name the openai package and other tools use
    "embedder": "MEMGPT_LITE_EMBEDDER",
    "context_window": "MEMGPT_LITE_CONTEXT_WINDOW",
    "timeout": "MEMGPT_LITE_TIMEOUT",
    "db": "MEMGPT_LITE_DB",
}
# The keys of config.toml's [serve] table (settings/effective.py's ServeFileConfig).
SERVE_KEYS = ("max_body_bytes", "max_message_bytes", "rate_limit")
DEFAULT_SOURCE = "default"
DEFAULTS: dict[str, SettingValue] = {"timeout": DEFAULT_TIMEOUT_SECONDS}


def home_dir() -> Path:
    """The directory for memgpt_lite's files: `$MEMGPT_LITE_HOME` or `~/.memgpt_lite`."""
    configured = os.environ.get(HOME_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".memgpt_lite"


def cache_dir() -> Path:
    """The folder for caches: `$MEMGPT_LITE_HOME/cache` when the home is set
    (a custom home keeps everything, as tests and sandboxes want), else
    `$XDG_CACHE_HOME/memgpt_lite`, where backups and cleaners expect caches."""
    if os.environ.get(HOME_ENV):
        return home_dir() / CACHE_DIRNAME
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    # The XDG spec ignores a relative path: it would depend on the working folder.
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "memgpt_lite"


def folder_names() -> FolderNames:
    """How errors name our folders: the home folder with the variable that
    chose it, when one did, so the user knows what to change."""
    return FolderNames(((home_dir(), HOME_ENV),) if os.environ.get(HOME_ENV) else ())


def ensure_folder(folder: Path) -> None:
    """Create `folder` if needed; a ConfigError naming it if it cannot be."""
    folder_names().ensure(folder)


def resolve_settings() -> Settings:
    """The settings of this process that are not an agent's own, from the
    environment: what an edge hands down (values.py)."""
    model_dir = os.environ.get(EMBEDDING_MODEL_DIR_ENV)
    return Settings(
        home=home_dir(),
        cache_dir=cache_dir(),
        folder_names=folder_names(),
        postgres=PostgresOptions(
            search_language=os.environ.get(PG_LANGUAGE_ENV, "english"),
            server_vectors=os.environ.get(PG_VECTORS_ENV, "").strip().lower() != "off",
        ),
        embedding_model_dir=Path(model_dir).expanduser() if model_dir else None,
        tools=tool_run_settings(),
        secret=SecretSource(
            file=home_dir() / SECRET_FILENAME, value=os.environ.get(SECRET_ENV) or None
        ),
    )


def tool_run_settings() -> ToolRunSettings:
    """The limits of registered tools' calls ($MEMGPT_LITE_TOOL_TIMEOUT in
    seconds, $MEMGPT_LITE_TOOL_MEMORY_MB), and the few variables of this
    environment their processes get (TOOL_ENVIRONMENT)."""
    defaults = ToolRunSettings()
    timeout = os.environ.get(TOOL_TIMEOUT_ENV)
    memory = os.environ.get(TOOL_MEMORY_ENV, "").strip()
    if memory and not (memory.isascii() and memory.isdigit() and int(memory) >= 64):
        raise ConfigError(f"${TOOL_MEMORY_ENV} must be a whole number of MB, 64 or more")
    return ToolRunSettings(
        timeout_seconds=check_timeout(timeout, f"${TOOL_TIMEOUT_ENV}")
        if timeout
        else defaults.timeout_seconds,
        memory_mb=int(memory) if memory else defaults.memory_mb,
        environment=tuple((n, os.environ[n]) for n in TOOL_ENVIRONMENT if n in os.environ),
    )


def default_db_path() -> Path:
    return home_dir() / DB_FILENAME


def config_path() -> Path:
    return home_dir() / CONFIG_FILENAME


def _default(key: str) -> SettingValue:
    # The database's default follows $MEMGPT_LITE_HOME, read at each call.
    return str(default_db_path()) if key == "db" else DEFAULTS.get(key)


def _db_location(setting: ConfigValue, path: Path) -> ConfigValue:
    """The `db` setting as `open_storage` takes it: a URL as written, a path
    with `~` expanded and, when it comes from config.toml, relative to it."""
    text = str(setting.value)
    if is_url(text):
        return setting
    location = Path(text).expanduser()
    if setting.source == str(path) and not location.is_absolute():
        location = path.parent / location
    return setting.model_copy(update={"value": str(location)})


def resolve_db(flag: str | os.PathLike[str] | None = None, path: Path | None = None) -> ConfigValue:
    """Where agents are stored, with its source: `flag` (--db or `db=`), else
    $MEMGPT_LITE_DB, else `db` in config.toml (read only if needed), else the
    default file. A path or a URL; show it with `redacted()`."""
    path = path or config_path()
    given = None if flag is None else os.fspath(flag)
    setting = _setting("db", given, path, lambda: load_file_config(path))
    return _db_location(setting, path)


def _describe(error: Any) -> str:
    key = ".".join(str(part) for part in error["loc"]) or "(file)"
    if error["type"] == "extra_forbidden":
        from memgpt_lite.settings.effective import FileConfig

        nested = error["loc"][0] == "serve" and len(error["loc"]) > 1
        known = SERVE_KEYS if nested else tuple(FileConfig.model_fields)
        return f"unknown key {key!r} (the keys are: {', '.join(known)})"
    return f"{key}: {validation_message(error)}"


def load_file_config(path: Path | None = None) -> FileConfig:
    """The settings in `config.toml` (none if the file does not exist)."""
    import tomllib  # here, like pydantic: only the commands that read settings need it

    from pydantic import ValidationError

    from memgpt_lite.settings.effective import FileConfig

    path = path or config_path()
    try:
        text = path.read_bytes().decode("utf-8")
    except (FileNotFoundError, NotADirectoryError):  # no file, or a home that is a file
        return FileConfig()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    try:
        return FileConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(_describe(e) for e in exc.errors(include_url=False))
        raise ConfigError(f"{path}: {problems}") from None


def configured_base_url() -> str | None:
    """The `base_url` in config.toml: the endpoint's last fallback, after the
    agent's own and $OPENAI_BASE_URL."""
    return load_file_config().base_url


def server_endpoint_url() -> str:
    """The base URL of this process's own endpoint, what an agent without a
    base URL of its own uses: $OPENAI_BASE_URL, else `base_url` in
    config.toml, else OpenAI's. A malformed URL is a ConfigError naming it."""
    variable = os.environ.get("OPENAI_BASE_URL")
    if variable:
        return check_base_url(variable, "$OPENAI_BASE_URL")
    configured = configured_base_url()
    if configured:
        return check_base_url(configured, f"base_url in {config_path()}")
    return OPENAI_DEFAULT_BASE_URL


def configured_allowed_endpoints() -> tuple[str, ...]:
    """The `allow_endpoints` of config.toml: the endpoints `serve` allows
    besides its own and those of `--allow-endpoint` (server/endpoints.py)."""
    return tuple(load_file_config().allow_endpoints or ())


def configured_model() -> str | None:
    """The model from $MEMGPT_LITE_MODEL, else config.toml: what new agents
    use when none is named, and what the server maps Letta's hosted model
    names to (server/model_list.py); None when neither names one."""
    path = config_path()
    value = _setting("model", None, path, lambda: load_file_config(path)).value
    return None if value is None else str(value)


def configured_timeout() -> ConfigValue:
    """The request timeout from $MEMGPT_LITE_TIMEOUT, else config.toml, else the
    default, with its source: what an agent without its own uses."""
    path = config_path()
    return _setting("timeout", None, path, lambda: load_file_config(path))


def resolve_endpoint(
    config: LLMConfig, base_url: str | None = None, api_key: str | None = None
) -> Endpoint:
    """The base URL and API key to use: from the arguments, then the agent's
    config (its own key, if it has one), then OPENAI_BASE_URL /
    OPENAI_API_KEY, then (the URL only) `base_url` in config.toml, read only
    if needed. A malformed URL is a ConfigError naming where it came from."""
    return choose_endpoint(
        config,
        base_url,
        api_key,
        url_fallbacks=(
            lambda: (os.environ.get("OPENAI_BASE_URL"), "$OPENAI_BASE_URL"),
            lambda: (configured_base_url(), f"base_url in {config_path()}"),
        ),
        key_fallback=os.environ.get("OPENAI_API_KEY"),
    )


def resolve_timeout(config: LLMConfig, timeout: float | None = None) -> float:
    """The limit on one request, in seconds: the argument, then the agent's own
    (`llm.timeout_seconds`), then $MEMGPT_LITE_TIMEOUT, config.toml, the default."""

    def configured() -> float:
        setting = configured_timeout()
        return check_timeout(setting.value, setting.source)

    return choose_timeout(config, timeout, configured)


def _from_env(key: str) -> SettingValue:
    variable = ENV_VARS[key]
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return None
    if key == "timeout":
        return check_timeout(raw, f"${variable}")
    if key != "context_window":
        return raw
    try:
        tokens = int(raw)
    except ValueError:
        tokens = 0
    if tokens <= 0:
        raise ConfigError(f"${variable} must be a positive whole number of tokens, got {raw!r}")
    return tokens


def _setting(
    key: str, flag: SettingValue, path: Path, from_file: Callable[[], FileConfig]
) -> ConfigValue:
    """One setting: `flag` (None: not given), else the environment, else the
    config file at `path` (read by `from_file` only if needed), else the default."""
    from memgpt_lite.settings.effective import ConfigValue

    if flag is not None:
        return ConfigValue(value=flag, source="--" + key.replace("_", "-"))
    if (from_env := _from_env(key)) is not None:
        return ConfigValue(value=from_env, source=f"${ENV_VARS[key]}")
    if (in_file := getattr(from_file(), key)) is not None:
        return ConfigValue(value=in_file, source=str(path))
    return ConfigValue(value=_default(key), source=DEFAULT_SOURCE)


def effective_config(
    flags: dict[str, SettingValue] | None = None, path: Path | None = None
) -> EffectiveConfig:
    """Each setting from `flags` (None: not given), else the environment, else
    the config file, else the default. A bad file or variable is a ConfigError."""
    from memgpt_lite.settings.effective import EffectiveConfig

    flags = flags or {}
    path = path or config_path()
    from_file = load_file_config(path)
    resolved = {key: _setting(key, flags.get(key), path, lambda: from_file) for key in ENV_VARS}
    resolved["db"] = _db_location(resolved["db"], path)
    return EffectiveConfig(path=path, **resolved)
