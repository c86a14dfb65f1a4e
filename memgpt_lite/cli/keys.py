"""`memgpt-lite keys ...`: the API keys of the HTTP server's users.

A key's secret is printed once, when it is made, and never stored: the
database keeps its SHA-256 (see memgpt_lite/agent/keys.py). The workspace
and rich are imported by the commands that use them, so that `--help` stays
fast (see `base.py`).
"""

from __future__ import annotations

import click

from memgpt_lite.cli.base import print_rows, workspace_for


@click.group()
def keys() -> None:
    """Create, list and revoke the API keys of `memgpt-lite serve`'s users.

    Example: KEY=$(memgpt-lite keys create --user alice)
    """


@keys.command(name="create")
@click.option("--user", required=True, help="The user the key belongs to.")
@click.option(
    "--admin",
    is_flag=True,
    help="The key may also run code on the server: add tools from Python source "
    "and stdio MCP servers over HTTP.",
)
@click.pass_context
def keys_create(ctx: click.Context, user: str, admin: bool) -> None:
    """Make a new key for USER and print its secret, alone on stdout.

    The secret is shown this once: only its hash is stored. stderr says
    which key id it has (for `keys revoke`). Over HTTP, adding a tool from
    Python source or a stdio MCP server runs code on the server's machine:
    only an --admin key may, unless the server runs with --allow-user-code.
    """
    key, secret = workspace_for(ctx).create_key(user, admin=admin)
    click.echo(secret)
    kind = "admin key" if key.admin else "key"
    click.echo(
        f"Created {kind} {key.id} for user {key.user!r}; its secret is shown only this once.",
        err=True,
    )


@keys.command(name="list")
@click.pass_context
def keys_list(ctx: click.Context) -> None:
    """List the keys, oldest first: id, user, created, revoked, admin.

    Secrets and hashes are never shown. When the output is piped, each key is
    one tab-separated line.
    """
    stored = workspace_for(ctx).api_keys()
    if not stored:
        click.echo("No API keys yet. Create one with: memgpt-lite keys create --user NAME")
        return
    columns = [
        ("id", "left"),
        ("user", "left"),
        ("created", "left"),
        ("revoked", "left"),
        ("admin", "left"),
    ]
    when = "%Y-%m-%d %H:%M"
    rows = [
        [
            key.id,
            key.user,
            key.created_at.astimezone().strftime(when),
            key.revoked_at.astimezone().strftime(when) if key.revoked_at else "-",
            "yes" if key.admin else "no",
        ]
        for key in stored
    ]
    print_rows(columns, rows)


@keys.command(name="revoke")
@click.argument("key_id")
@click.pass_context
def keys_revoke(ctx: click.Context, key_id: str) -> None:
    """Revoke key KEY_ID: it stops working at once, and stays listed.

    Revoking a key revoked already changes nothing.
    """
    key = workspace_for(ctx).revoke_key(key_id)
    when = key.revoked_at.astimezone().strftime(" at %Y-%m-%d %H:%M") if key.revoked_at else ""
    click.echo(f"Revoked key {key.id} of user {key.user!r}{when}.")
