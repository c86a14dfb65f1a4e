"""What every `memgpt-lite` command shares: error display and the open store.

Commands live in `cli.py` and in one `cli_*.py` module per command family;
each module registers its commands on the group defined in `cli.py`.
"""

from __future__ import annotations

from typing import Any

import click
from pydantic import ValidationError

from .agent import Agent
from .config import default_db_path
from .errors import MemGPTError
from .store import Store
from .text import clean_text


class CleanText(click.ParamType):
    """A text argument made valid: Python decodes a byte of `argv` that is not
    UTF-8 as a lone surrogate, which cannot be stored, sent or printed; it
    becomes U+FFFD. File paths are `click.Path` and keep their bytes."""

    name = "text"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return clean_text(value) if isinstance(value, str) else value


class TextOrFile(CleanText):
    """TEXT, or @FILE whose path is kept as given (LABEL=TEXT and LABEL=@FILE
    too): `read_text_arg` reads the file, whatever bytes its name holds."""

    def __init__(self, labelled: bool = False) -> None:
        self.labelled = labelled

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = value.partition("=")[2] if self.labelled and isinstance(value, str) else value
        if isinstance(text, str) and text.startswith("@") and not text.startswith("@@"):
            return value
        return super().convert(value, param, ctx)


TEXT = CleanText()


def clean_text_params(command: click.Command) -> None:
    """Give every plain text parameter of `command` and its subcommands the
    CleanText type, so no command, present or added later, sees a lone surrogate."""
    for param in command.params:
        if param.type is click.STRING:
            param.type = TEXT
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            clean_text_params(sub)


class FriendlyGroup(click.Group):
    """Turns our errors into one-line messages instead of tracebacks, and
    cleans text arguments (see CleanText)."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        clean_text_params(self)  # here, once every command is registered
        return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemGPTError as exc:
            raise click.ClickException(str(exc)) from None
        except ValidationError as exc:
            problems = "; ".join(e["msg"] for e in exc.errors(include_url=False))
            raise click.ClickException(problems) from None


def store_for(ctx: click.Context) -> Store:
    """The store named by `--db` (or the default), opened once per command."""
    root = ctx.find_root()
    root.ensure_object(dict)
    if "store" not in root.obj:
        root.obj["store"] = Store(root.obj.get("db") or default_db_path())
        root.call_on_close(root.obj["store"].close)
    return root.obj["store"]


def load_agent(ctx: click.Context, name: str) -> Agent:
    return Agent.load(name, store=store_for(ctx))
