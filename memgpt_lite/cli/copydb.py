"""`memgpt-lite copy-db SRC DST`: move every agent from one database to
another (SQLite to PostgreSQL, back, or between two files). The copying is
`storage/copy.py`, which speaks only the `Storage` protocol, reached through
the application layer (`agent.workspace.copy_database`); this module prints.
Locations are shown with `redacted`: a URL's password never is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from memgpt_lite.cli.base import print_rows

if TYPE_CHECKING:
    from memgpt_lite.agent.workspace import AgentCopy

_COLUMNS = [
    ("agent", "left"),
    ("blocks", "right"),
    ("messages", "right"),
    ("passages", "right"),
    ("message vectors", "right"),
    ("passage vectors", "right"),
    ("usage records", "right"),
]


def _row(copied: AgentCopy) -> list[str]:
    counts = (
        copied.blocks,
        copied.messages,
        copied.passages,
        copied.message_vectors,
        copied.passage_vectors,
        copied.usage_records,
    )
    return [copied.name, *(str(count) for count in counts)]


@click.command(name="copy-db")
# Text kept as given (click.Path keeps a file name's bytes): each is a file or a URL.
@click.argument("src", type=click.Path(dir_okay=False), metavar="SRC")
@click.argument("dst", type=click.Path(dir_okay=False), metavar="DST")
def copy_db(src: str, dst: str) -> None:
    """Copy every agent from database SRC to database DST: each a SQLite file
    or a postgresql://user@host:5432/db URL, in either direction.

    Each agent keeps its id and name, its state, its blocks (a block shared
    by several agents stays shared), every message, archival passage, vector
    and token usage record, and the user it belongs to; every API key comes
    along too (revoked ones included). DST gets everything in one transaction, checked
    by counts read back from it before it commits: on any error, or if DST
    already has an agent with the same id or name (or one of the keys), DST
    is left as it was.
    SRC is only read (an older SQLite file is upgraded first, as by every
    command). A table shows what was copied. The global --db option is not
    used here.

    Example: memgpt-lite copy-db agents.db postgresql://sam@localhost/agents
    """
    from memgpt_lite.agent.workspace import copy_database
    from memgpt_lite.settings.folders import redacted

    keys: list[int] = []
    copied = copy_database(src, dst, on_keys=keys.append)
    if not copied and not keys[0]:
        click.echo(f"{redacted(src)} holds no agents; nothing was copied.")
        return
    if copied:
        print_rows(_COLUMNS, [_row(agent) for agent in copied])
    click.echo(
        f"Copied {len(copied)} agent(s) and {keys[0]} API key(s) from {redacted(src)} to "
        f"{redacted(dst)}; the counts in the destination match the source.",
        err=True,
    )
