"""Where the command line's log records go: one line each on standard error,
and everything, tracebacks included, in `$MEMGPT_LITE_HOME/memgpt_lite.log`.

A library logs; only the program decides how. Without this, Python prints the
bare records of any library, tracebacks and all (a custom tool's bug printed
its whole traceback into the chat). `-v` on `send` and `chat` puts the
tracebacks on the terminal too.
"""

from __future__ import annotations

import logging
import traceback
from logging.handlers import RotatingFileHandler
from pathlib import Path

import click

from memgpt_lite.settings.resolve import home_dir

LOG_FILENAME = "memgpt_lite.log"
LOG_FILE_BYTES = 1_000_000
_PACKAGE_LOGGER = "memgpt_lite"


class ConsoleHandler(logging.Handler):
    """Each record as one line on standard error (looked up at each record, as
    click does, so a redirected stderr is honoured). A traceback is shown
    only with `detail`; otherwise the line says where it was written."""

    def __init__(self, log_file: Path | None) -> None:
        super().__init__(logging.INFO)
        self.log_file = log_file
        self.detail = False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = f"{record.levelname.lower()}: {record.getMessage()}"
            if record.exc_info and record.exc_info[1] is not None:
                if self.detail:
                    line += "\n" + "".join(traceback.format_exception(*record.exc_info)).rstrip()
                elif self.log_file is not None:
                    line += f" (traceback in {self.log_file})"
            click.echo(line, err=True)
        except (OSError, ValueError):  # a closed or broken stderr: nowhere to say it
            pass


class QuietFileHandler(RotatingFileHandler):
    """The log file; if it cannot be written (a full disk, a read-only home),
    logging stops quietly instead of printing errors about itself."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        self.close()
        logger = logging.getLogger(_PACKAGE_LOGGER)
        if self in logger.handlers:
            logger.removeHandler(self)


def _log_file() -> Path | None:
    """The log file's path, if its folder exists or can be made."""
    path = home_dir() / LOG_FILENAME
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path if path.parent.is_dir() else None


def configure_logging() -> ConsoleHandler:
    """Send memgpt_lite's records to the console and the log file, replacing
    what an earlier call installed. Returns the console handler."""
    logger = logging.getLogger(_PACKAGE_LOGGER)
    for handler in list(logger.handlers):
        if isinstance(handler, ConsoleHandler | QuietFileHandler):
            logger.removeHandler(handler)
            handler.close()
    logger.setLevel(logging.DEBUG)
    path = _log_file()
    if path is not None:
        file_handler = QuietFileHandler(
            path, maxBytes=LOG_FILE_BYTES, backupCount=1, encoding="utf-8", delay=True
        )
        file_handler.setLevel(logging.DEBUG)
        file_handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
        )
        logger.addHandler(file_handler)
    console = ConsoleHandler(path)
    console.setLevel(logging.WARNING)
    logger.addHandler(console)
    return console


def show_details() -> None:
    """Put tracebacks (and informational records) on the terminal too: `-v`."""
    for handler in logging.getLogger(_PACKAGE_LOGGER).handlers:
        if isinstance(handler, ConsoleHandler):
            handler.detail = True
            handler.setLevel(logging.INFO)


def hide_warnings() -> None:
    """Keep warnings off the terminal (they still reach the log file): `--quiet`."""
    for handler in logging.getLogger(_PACKAGE_LOGGER).handlers:
        if isinstance(handler, ConsoleHandler):
            handler.setLevel(logging.ERROR)
