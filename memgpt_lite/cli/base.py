"""What every `memgpt-lite` command shares: error display and the open
workspace (the agents of the command's database, agent/workspace.py: the one
way the commands reach agents and what is stored).

Commands live in `main.py` and in one module per command family; `main.py`
registers them all on its group.

Start-up: `memgpt-lite --help`, and each command's `--help`, import the
modules of `cli/` that define commands, so those import only click, the
standard library, the light modules of `settings` and `errors` at module level. What a command needs
to run (the agent, the workspace, pydantic, rich, openai: about a second of
imports) is imported inside the function that uses it. `tests/project/test_startup.py`
checks this and `benchmarks/startup.py` measures it.
"""

from __future__ import annotations

import logging
import math
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from memgpt_lite.errors import MemGPTError, validation_messages
from memgpt_lite.settings.endpoint import DEFAULT_TIMEOUT_SECONDS
from memgpt_lite.settings.resolve import resolve_db, resolve_settings

if TYPE_CHECKING:
    from memgpt_lite.agent.agent import Agent
    from memgpt_lite.agent.workspace import Workspace
    from memgpt_lite.settings.values import Settings

log = logging.getLogger(__name__)

Column = tuple[str, str]  # header, justify


def loaded_error(module: str, name: str) -> tuple[type[BaseException], ...]:
    """The exception class `module.name` if the module is loaded, else none
    (`except ()` catches nothing). An exception of a module that was never
    imported cannot have been raised, so catching it needs no import: pydantic
    would add about 40 ms to every `--help`."""
    loaded = sys.modules.get(module)
    return (getattr(loaded, name),) if loaded is not None else ()


def _check_timeout(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise click.BadParameter(f"{value:g} is not a positive number of seconds")
    return value


# Shared by the commands that call the model: send, retry and chat.
timeout_option = click.option(
    "--timeout",
    type=float,
    metavar="SECONDS",
    callback=_check_timeout,
    help="Limit on each model request, retries included (default: the agent's own if set, "
    f"then $MEMGPT_LITE_TIMEOUT, then timeout in config.toml, then {DEFAULT_TIMEOUT_SECONDS:g}).",
)

# Shared by send and chat: which of the agent's conversations to talk in.
conversation_option = click.option(
    "--conversation",
    metavar="ID",
    help="Talk in this conversation of the agent (an id `memgpt-lite conversations NAME` "
    "lists); default: its default conversation, its history from before conversations.",
)


class CleanText(click.ParamType):
    """A text argument made valid: Python decodes a byte of `argv` that is not
    UTF-8 as a lone surrogate, which cannot be stored, sent or printed; it
    becomes U+FFFD. File paths are `click.Path` and keep their bytes."""

    name = "text"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        try:
            value.encode("utf-8")  # valid already, as nearly always: nothing to load
        except UnicodeEncodeError:
            from memgpt_lite.text import clean_text  # it loads pydantic

            return clean_text(value)
        return value


class TextOrFile(CleanText):
    """TEXT, or @FILE whose path is kept as given (LABEL=TEXT and LABEL=@FILE
    too): `read_text_arg` (block_options.py) reads the file, whatever bytes its name holds."""

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
        except loaded_error("pydantic_core", "ValidationError") as exc:
            raise click.ClickException(validation_messages(exc)) from None  # type: ignore[arg-type]
        except OSError as exc:
            # A file or folder the user named that cannot be used (too long a
            # name, no permission, ...): one line here, the traceback in the log.
            log.debug("%s failed", ctx.info_name, exc_info=True)
            raise click.ClickException(os_error_text(exc)) from None


def os_error_text(exc: OSError) -> str:
    """An OSError in one line, a long file name shortened."""
    from memgpt_lite.text import clean_text  # it loads pydantic

    if exc.filename is None:
        return str(exc.strerror or exc)
    name = os.fsdecode(exc.filename) if isinstance(exc.filename, bytes) else str(exc.filename)
    shown = name if len(name) <= 80 else name[:79] + "…"
    return f"cannot use {clean_text(shown)}: {exc.strerror or exc}"


def confirm_or_stop(question: str) -> None:
    """Ask a yes/no question (no by default); on no, say that nothing was done
    and exit with status 1."""
    if not click.confirm(question, default=False):
        click.echo("Nothing was deleted.", err=True)
        click.get_current_context().exit(1)


def print_rows(columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> None:
    """A table on a terminal; tab-separated lines, without a header, when piped."""
    if not sys.stdout.isatty():
        for row in rows:
            click.echo("\t".join(row))
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(show_edge=False)
    for header, justify in columns:
        table.add_column(header, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    Console(highlight=False).print(table)


def db_location(ctx: click.Context) -> str:
    """Where the command's agents are: `--db`, else $MEMGPT_LITE_DB, else `db`
    in config.toml, else the default file. Show it with `redacted()`."""
    root = ctx.find_root()
    root.ensure_object(dict)
    if "location" not in root.obj:
        root.obj["location"] = str(resolve_db(root.obj.get("db")).value)
    return root.obj["location"]


def settings_for(ctx: click.Context) -> Settings:
    """The process's settings (the environment's), resolved once per command
    and handed to the workspace and the agents it opens."""
    root = ctx.find_root()
    root.ensure_object(dict)
    if "settings" not in root.obj:
        root.obj["settings"] = resolve_settings()
    return root.obj["settings"]


def workspace_for(ctx: click.Context) -> Workspace:
    """The agents of the database at `db_location`, opened once per command."""
    from memgpt_lite.agent.workspace import Workspace

    root = ctx.find_root()
    root.ensure_object(dict)
    if "workspace" not in root.obj:
        root.obj["workspace"] = Workspace.open(db_location(ctx), settings_for(ctx))
        root.call_on_close(root.obj["workspace"].close)
    return root.obj["workspace"]


def say_waiting(message: str) -> None:
    """How the CLI tells that a step waits for another one of its agent."""
    click.echo(f"{message} (Ctrl-C stops waiting)", err=True)


def load_agent(
    ctx: click.Context, name: str, timeout: float | None = None, conversation: str | None = None
) -> Agent:
    """Agent NAME from the command's database, in its `conversation` if
    given; `timeout` limits each model request."""
    agent = workspace_for(ctx).load_agent(name, timeout=timeout)
    if conversation is not None:
        agent = agent.conversations.open(conversation)
    agent.on_wait = say_waiting
    return agent
