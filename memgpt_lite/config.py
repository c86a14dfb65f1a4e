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

Every command imports this module, so it stays light: the pydantic models of
the settings are in `settings.py`, imported by the functions that build them.
"""

from __future__ import annotations

import errno
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memgpt_lite.errors import ConfigError, validation_message

if TYPE_CHECKING:
    from memgpt_lite.settings import ConfigValue, EffectiveConfig, FileConfig, SettingValue

DB_FILENAME = "memgpt_lite.db"
CONFIG_FILENAME = "config.toml"

# The environment variable of each setting, in the order `memgpt-lite config` shows them.
ENV_VARS = {
    "model": "MEMGPT_LITE_MODEL",
    "base_url": "OPENAI_BASE_URL",  # the name the openai package and other tools use
    "embedder": "MEMGPT_LITE_EMBEDDER",
    "context_window": "MEMGPT_LITE_CONTEXT_WINDOW",
    "timeout": "MEMGPT_LITE_TIMEOUT",
    "db": "MEMGPT_LITE_DB",
}
DEFAULT_SOURCE = "default"
# One model request as a whole may take this long: local models on a CPU and
# reasoning models can take minutes to answer, and nothing arrives before the
# whole answer is ready.
DEFAULT_TIMEOUT_SECONDS = 300.0
DEFAULTS: dict[str, SettingValue] = {"timeout": DEFAULT_TIMEOUT_SECONDS}
CACHE_DIRNAME = "cache"


def home_dir() -> Path:
    """The directory for memgpt_lite's files: `$MEMGPT_LITE_HOME` or `~/.memgpt_lite`."""
    configured = os.environ.get("MEMGPT_LITE_HOME")
    return Path(configured).expanduser() if configured else Path.home() / ".memgpt_lite"


def cache_dir() -> Path:
    """The folder for caches: `$MEMGPT_LITE_HOME/cache` when the home is set
    (a custom home keeps everything, as tests and sandboxes want), else
    `$XDG_CACHE_HOME/memgpt_lite`, where backups and cleaners expect caches."""
    if os.environ.get("MEMGPT_LITE_HOME"):
        return home_dir() / CACHE_DIRNAME
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    # The XDG spec ignores a relative path: it would depend on the working folder.
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "memgpt_lite"


def folder_label(folder: Path) -> str:
    """How an error names `folder`: with the variable that chose it, when it is
    the home folder, so the user knows what to change."""
    if os.environ.get("MEMGPT_LITE_HOME") and folder == home_dir():
        return f"$MEMGPT_LITE_HOME ({folder})"
    return str(folder)


def folder_problem(folder: Path, exc: OSError) -> str:
    """Why `folder` cannot hold our files, in one line that names it (or the
    file in its way: the home folder, when it is a file)."""
    label = folder_label(folder)
    if isinstance(exc, FileExistsError | NotADirectoryError):
        in_the_way = next((p for p in (folder, *folder.parents) if p.exists()), folder)
        return f"{folder_label(in_the_way)} is a file, not a folder"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"{label} is read-only"
    return f"cannot use the folder {label}: {exc.strerror or exc}"


def ensure_folder(folder: Path) -> None:
    """Create `folder` if needed; a ConfigError naming it if it cannot be."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(folder_problem(folder, exc)) from None


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
    from memgpt_lite.storage.location import is_url

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
        return f"unknown key {key!r} (the keys are: {', '.join(ENV_VARS)})"
    return f"{key}: {validation_message(error)}"


def load_file_config(path: Path | None = None) -> FileConfig:
    """The settings in `config.toml` (none if the file does not exist)."""
    import tomllib  # here, like pydantic: only the commands that read settings need it

    from pydantic import ValidationError

    from memgpt_lite.settings import FileConfig

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


def check_timeout(value: object, source: str) -> float:
    """`value` as a number of seconds, or a ConfigError naming `source`."""
    seconds = value
    if isinstance(value, str):
        try:
            seconds = float(value)
        except ValueError:
            seconds = None
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not (math.isfinite(seconds) and seconds > 0)
    ):
        raise ConfigError(f"{source} must be a positive number of seconds, got {value!r}")
    return float(seconds)


def configured_timeout() -> ConfigValue:
    """The request timeout from $MEMGPT_LITE_TIMEOUT, else config.toml, else the
    default, with its source: what an agent without its own uses."""
    path = config_path()
    return _setting("timeout", None, path, lambda: load_file_config(path))


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
    from memgpt_lite.settings import ConfigValue

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
    from memgpt_lite.settings import EffectiveConfig

    flags = flags or {}
    path = path or config_path()
    from_file = load_file_config(path)
    resolved = {key: _setting(key, flags.get(key), path, lambda: from_file) for key in ENV_VARS}
    resolved["db"] = _db_location(resolved["db"], path)
    return EffectiveConfig(path=path, **resolved)
