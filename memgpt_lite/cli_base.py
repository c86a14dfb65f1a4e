"""What every `memgpt-lite` command shares: error display and the open store.

Commands live in `cli.py` and in one `cli_*.py` module per command family;
each module registers its commands on the group defined in `cli.py`.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from .agent import Agent
from .config import default_db_path
from .errors import MemGPTError
from .store import Store
from .store_connect import file_problem


class FriendlyGroup(click.Group):
    """Turns our errors into one-line messages instead of tracebacks."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemGPTError as exc:
            raise click.ClickException(str(exc)) from None
        except ValidationError as exc:
            problems = "; ".join(e["msg"] for e in exc.errors(include_url=False))
            raise click.ClickException(problems) from None
        except sqlite3.Error as exc:
            # A read that failed for the file's sake (a write is a StoreError
            # already); an SQL bug is not translated and keeps its traceback.
            problem = file_problem(_db_path(ctx), exc)
            if problem is None:
                raise
            raise click.ClickException(str(problem)) from None


def _db_path(ctx: click.Context) -> Path:
    obj = ctx.find_root().obj or {}
    return obj["store"].path if "store" in obj else Path(obj.get("db") or default_db_path())


def store_for(ctx: click.Context) -> Store:
    """The store named by `--db` (or the default), opened once per command."""
    root = ctx.find_root()
    root.ensure_object(dict)
    if "store" not in root.obj:
        root.obj["store"] = Store(root.obj.get("db") or default_db_path())
        root.call_on_close(root.obj["store"].close)
    return root.obj["store"]


def say_waiting(message: str) -> None:
    """How the CLI tells that a step waits for another one of its agent."""
    click.echo(f"{message} (Ctrl-C stops waiting)", err=True)


def load_agent(ctx: click.Context, name: str) -> Agent:
    agent = Agent.load(name, store=store_for(ctx))
    agent.on_wait = say_waiting
    return agent
