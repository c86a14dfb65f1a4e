"""`memgpt-lite serve`: the HTTP server (memgpt_lite/server/), on uvicorn."""

from __future__ import annotations

import copy
import ipaddress
import os
import shlex
from typing import TYPE_CHECKING, Any

import click

from memgpt_lite.cli.base import db_location, workspace_for
from memgpt_lite.cli.scripting import BadInput

if TYPE_CHECKING:
    from memgpt_lite.models import ApiKey

LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
SERVER_EXTRA = 'the server needs its extra: pip install "memgpt-lite[server]"'
# What tells a worker process started by uvicorn not to ask for keys.
NO_AUTH_VARIABLE = "MEMGPT_LITE_SERVE_NO_AUTH"
# ... and that every key may run code on the server.
ALLOW_USER_CODE_VARIABLE = "MEMGPT_LITE_SERVE_ALLOW_USER_CODE"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8283, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--db",
    type=click.Path(dir_okay=False),
    metavar="FILE|URL",
    help="Database (as the global --db): a SQLite file or a postgresql:// URL.",
)
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Server processes; more than one needs PostgreSQL.",
)
@click.option(
    "--no-auth",
    is_flag=True,
    help="Serve without API keys, every request as user `local` (loopback addresses only).",
)
@click.option(
    "--allow-user-code",
    is_flag=True,
    help="Let every key add tools from Python source and stdio MCP servers, which run "
    "code on this machine (default: admin keys only, `keys create --admin`).",
)
@click.option(
    "--allow-endpoint",
    "allow_endpoints",
    multiple=True,
    metavar="URL",
    help="A model endpoint that agents created over HTTP may use, besides the server's own "
    "(repeatable; also `allow_endpoints` in config.toml).",
)
@click.option(
    "--log-level",
    default="info",
    show_default=True,
    type=click.Choice(LOG_LEVELS, case_sensitive=False),
    help="What the server logs: at info, one access-log line per request "
    "(method, path, status, ms, user; never keys or bodies).",
)
@click.option(
    "--max-body-bytes",
    type=click.IntRange(1),
    help="Refuse request bodies larger than this (413). Default 32 MiB, or [serve] in config.toml.",
)
@click.option(
    "--max-message-bytes",
    type=click.IntRange(1),
    help="Refuse a message whose text is larger than this (413). Default 1 MiB.",
)
@click.option(
    "--rate-limit",
    metavar="N/s|N/min",
    help="Requests each key may make, such as 10/s or 600/min (429 beyond). Default: none.",
)
@click.pass_context
def serve(
    ctx: click.Context,
    host: str,
    port: int,
    db: str | None,
    workers: int,
    no_auth: bool,
    allow_user_code: bool,
    allow_endpoints: tuple[str, ...],
    log_level: str,
    max_body_bytes: int | None,
    max_message_bytes: int | None,
    rate_limit: str | None,
) -> None:
    """Serve agents over HTTP: our API under /api, the routes of Letta's REST
    API that its clients use under /v1, and OpenAI's POST /v1/chat/completions
    (model: an agent's name or id). Every route but /health needs
    `Authorization: Bearer KEY`, a key from `memgpt-lite keys create --user NAME`.
    The API's documentation is served at /docs and /redoc (offline: no CDN),
    and a web app to see and steer agents at / (`memgpt-lite ui` opens it).

    Adding a tool from Python source or a stdio MCP server runs code on this
    machine: only admin keys (`keys create --admin`) may, unless
    --allow-user-code (or --no-auth: one local user) says every key may.

    The model endpoint and its key come from the server's environment
    (OPENAI_BASE_URL, OPENAI_API_KEY), or an agent's own base URL and key.
    An agent created over HTTP may use only the server's endpoint and those
    --allow-endpoint (or `allow_endpoints` in config.toml) allows.

    Example: memgpt-lite serve --port 8283 --db postgresql://localhost/agents --workers 4
    """
    if db is not None:
        ctx.find_root().obj["db"] = db
    _refuse_open_no_auth(no_auth, host)
    try:
        import uvicorn
    except ImportError:
        raise click.ClickException(SERVER_EXTRA) from None
    from memgpt_lite.server.limits import resolve_limits
    from memgpt_lite.settings.resolve import config_path, load_file_config

    limits = resolve_limits(
        max_body_bytes, max_message_bytes, rate_limit, load_file_config().serve, str(config_path())
    )
    location = _checked_location(ctx, workers, allow_endpoints)
    _tell_workers(location, no_auth, allow_user_code, allow_endpoints, limits.model_dump_json())
    for line in start_lines(host, port, location, no_auth, workspace_for(ctx).api_keys()):
        click.echo(line, err=True)
    uvicorn.run(
        "memgpt_lite.server.app:app_from_environment",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level.lower(),
        log_config=logging_config(log_level),
        access_log=False,  # ours instead (server/access_log.py): with the user, no query
        timeout_graceful_shutdown=30,
    )


def _refuse_open_no_auth(no_auth: bool, host: str) -> None:
    if no_auth and not is_loopback(host):
        raise BadInput(
            f"--no-auth serves anyone who can reach {host}: allowed on a loopback address only "
            "(127.0.0.1, ::1, localhost)"
        )


def _checked_location(ctx: click.Context, workers: int, allow_endpoints: tuple[str, ...]) -> str:
    """The database to serve, opened (and upgraded) now, with the allowed
    endpoints read: what is wrong with either fails the command in one line."""
    from memgpt_lite.server.app import allowed_endpoints
    from memgpt_lite.settings.folders import is_postgres

    location = db_location(ctx)
    if workers > 1 and not is_postgres(location):
        raise BadInput(
            "--workers above 1 needs PostgreSQL: SQLite serves one process (--db postgresql://...)"
        )
    workspace_for(ctx)
    allowed_endpoints(allow_endpoints)
    return location


def _tell_workers(
    location: str,
    no_auth: bool,
    allow_user_code: bool,
    allow_endpoints: tuple[str, ...],
    limits_json: str,
) -> None:
    """What the workers, which build the app anew (`app_from_environment`),
    read from the environment."""
    from memgpt_lite.server.app import ALLOW_ENDPOINTS_VARIABLE
    from memgpt_lite.server.limits import LIMITS_VARIABLE

    os.environ["MEMGPT_LITE_DB"] = location
    os.environ[NO_AUTH_VARIABLE] = "1" if no_auth else ""
    os.environ[ALLOW_USER_CODE_VARIABLE] = "1" if allow_user_code else ""
    os.environ[ALLOW_ENDPOINTS_VARIABLE] = "\n".join(allow_endpoints)
    os.environ[LIMITS_VARIABLE] = limits_json


def start_lines(
    host: str, port: int, location: str, no_auth: bool, keys: list[ApiKey]
) -> list[str]:
    """What `serve` says as it starts: where it listens and serves from, how
    to make a key, and a warning when it listens beyond this machine with
    no key that works (every request would be refused)."""
    from memgpt_lite.settings.folders import redacted

    shown = f"[{host}]" if ":" in host else host
    lines = [f"Serving {redacted(location)} on http://{shown}:{port} (API docs: /docs, /redoc)"]
    if no_auth:
        return [*lines, "No API keys (--no-auth): every request is served as user `local`."]
    make = f"memgpt-lite --db {shlex.quote(redacted(location))} keys create --user NAME"
    lines.append(f"Make an API key: {make}  (send it as Authorization: Bearer KEY)")
    if not is_loopback(host) and not any(key.revoked_at is None for key in keys):
        lines.append(
            f"Warning: listening on {host}, beyond this machine, and the database has no API "
            "key: every request but /health gets a 401 until you make one"
        )
    return lines


def logging_config(level: str) -> dict[str, Any]:
    """uvicorn's logging, with our loggers (the access log: server/access_log.py)
    at `level` on its handler (standard error)."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["memgpt_lite"] = {
        "handlers": ["default"],
        "level": level.upper(),
        "propagate": False,
    }
    return config
