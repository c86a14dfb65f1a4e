"""`memgpt-lite ui`: the web app (memgpt_lite/server/webapp/) on this
machine: `serve` on 127.0.0.1, and the browser opened there once it answers."""

from __future__ import annotations

import socket
import threading
import time
import webbrowser

import click

from memgpt_lite.cli.base import workspace_for
from memgpt_lite.cli.serve import serve

HOST = "127.0.0.1"
# How long the browser waits for the server to listen before it is opened anyway.
START_SECONDS = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((HOST, port)) == 0


def open_when_listening(url: str, port: int) -> None:
    """Open `url` in the user's browser ($BROWSER, else the system's) once
    the server listens on `port`; say where to go if no browser opens."""
    deadline = time.monotonic() + START_SECONDS
    while not _listening(port) and time.monotonic() < deadline:
        time.sleep(0.1)
    if not webbrowser.open(url):
        click.echo(f"No browser could be opened: go to {url}", err=True)


@click.command()
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    help="Port on 127.0.0.1 (default: a free one).",
)
@click.option(
    "--db",
    type=click.Path(dir_okay=False),
    metavar="FILE|URL",
    help="Database (as the global --db): a SQLite file or a postgresql:// URL.",
)
@click.option("--no-open", is_flag=True, help="Do not open a browser; only say the address.")
@click.pass_context
def ui(ctx: click.Context, port: int | None, db: str | None, no_open: bool) -> None:
    """Open the web app: see and steer your agents (chat, core memory and
    its history, the context window, archival memory, tools, settings) in
    the browser. Serves on 127.0.0.1 only, until Ctrl-C. Without API keys in
    the database nothing asks for one, as `serve --no-auth`; with keys, the
    app asks for one once and keeps it in the browser.

    Example: memgpt-lite ui --port 8283
    """
    if db is not None:
        ctx.find_root().obj["db"] = db
    keys = workspace_for(ctx).api_keys()
    no_auth = not any(key.revoked_at is None for key in keys)
    port = port or free_port()
    url = f"http://{HOST}:{port}/"
    click.echo(f"The web app: {url}", err=True)
    if not no_open:
        opener = threading.Thread(target=open_when_listening, args=(url, port), daemon=True)
        opener.start()
    ctx.invoke(serve, host=HOST, port=port, no_auth=no_auth, log_level="warning")
