"""The models of the settings: what `config.toml` may hold, and each effective
setting with where it came from. `resolve.py` resolves them.

Apart from `resolve.py` because pydantic takes tens of milliseconds to import
and build these: every command reads paths from `resolve.py`, and only the
ones that resolve settings load this module.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

SettingValue = str | int | float | None


class ServeFileConfig(BaseModel):
    """config.toml's `[serve]` table: the limits of `memgpt-lite serve`
    (server/limits.py), under its flags of the same names."""

    model_config = ConfigDict(extra="forbid", strict=True)

    max_body_bytes: int | None = Field(default=None, gt=0)
    max_message_bytes: int | None = Field(default=None, gt=0)
    rate_limit: str | None = Field(default=None, min_length=1)  # "10/s" or "600/min"


class FileConfig(BaseModel):
    """What `config.toml` may hold. Unknown keys are refused, so a typo is
    reported instead of silently ignored; strict, because TOML has real types."""

    model_config = ConfigDict(extra="forbid", strict=True)

    model: str | None = Field(default=None, min_length=1)
    base_url: str | None = Field(default=None, min_length=1)
    embedder: str | None = Field(default=None, min_length=1)
    context_window: int | None = Field(default=None, gt=0)
    timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    db: str | None = Field(default=None, min_length=1)  # a SQLite file or a postgresql:// URL
    # `memgpt-lite serve`: model endpoints that agents made over HTTP may use,
    # besides the server's own (server/endpoints.py); `--allow-endpoint` adds more.
    allow_endpoints: list[str] | None = None
    serve: ServeFileConfig = Field(default_factory=ServeFileConfig)


class ConfigValue(BaseModel):
    """One effective setting and where it came from: a flag such as
    "--model", an environment variable such as "$MEMGPT_LITE_MODEL", the
    config file's path, or "default"."""

    value: SettingValue
    source: str


class EffectiveConfig(BaseModel):
    """The settings a new agent gets, each with its source."""

    path: Path  # the config file consulted (it may not exist)
    model: ConfigValue
    base_url: ConfigValue
    embedder: ConfigValue
    context_window: ConfigValue
    timeout: ConfigValue
    db: ConfigValue  # may hold a password: shown with settings.folders.redacted

    def settings(self) -> dict[str, ConfigValue]:
        # In the order `memgpt-lite config` shows them: the order of the fields.
        return {key: getattr(self, key) for key in type(self).model_fields if key != "path"}
