"""Editing text in the user's editor: $VISUAL, else $EDITOR, else vi.

Used by `memgpt-lite blocks NAME LABEL --edit` and the chat's `/edit`. Whatever
goes wrong after the user has typed something (the editor fails, the text
breaks a block's rules), the text is kept in a file under the home folder and
the error names it: nothing typed is lost. Ctrl-C while the editor runs is the
editor's business: it does not stop this process, which would kill the editor.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from memgpt_lite.errors import ConfigError
from memgpt_lite.settings.resolve import ensure_folder, home_dir

if TYPE_CHECKING:
    from memgpt_lite.agent import Agent
    from memgpt_lite.models import Block

log = logging.getLogger(__name__)

UNSAVED_DIRNAME = "unsaved"


def editor_command() -> list[str]:
    """The editor to run, split like a shell would ("code --wait" works)."""
    for variable in ("VISUAL", "EDITOR"):
        value = os.environ.get(variable, "").strip()
        if value:
            return shlex.split(value)
    return ["vi"]


def keep_text(text: str | bytes, stem: str, suffix: str = ".md") -> Path:
    """Save text that could not be used in `HOME/unsaved/`, under a new name;
    returns the file's path. If the home folder cannot hold it (it is a file,
    read-only, or full), the text goes to the system's temporary folder and a
    warning says why; a ConfigError if neither can."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    stem = stem.replace("/", "_")[:100]  # a path-style block label names one file
    prefix = f"{stem}-{datetime.now().strftime('%Y%m%d-%H%M%S')}-"
    folder = home_dir() / UNSAVED_DIRNAME
    try:
        ensure_folder(folder)
        return _write_new(folder, prefix, suffix, data)
    except (ConfigError, OSError) as exc:
        problem = str(exc) if isinstance(exc, ConfigError) else f"{folder}: {exc.strerror}"
    try:
        kept = _write_new(Path(tempfile.gettempdir()), prefix, suffix, data)
    except OSError as exc:
        raise ConfigError(
            f"your text could not be kept ({problem}; {tempfile.gettempdir()}: {exc.strerror})"
        ) from None
    log.warning("%s; unsaved text goes to %s", problem, kept.parent)
    return kept


def _write_new(folder: Path, prefix: str, suffix: str, data: bytes) -> Path:
    fd, name = tempfile.mkstemp(suffix=suffix, prefix=prefix, dir=folder)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
    except OSError:
        Path(name).unlink(missing_ok=True)  # a full disk: no empty file left behind
        raise
    return Path(name)


@contextmanager
def ctrl_c_left_to_the_editor() -> Iterator[None]:
    """Ctrl-C reaches every process at the terminal, and editors use it (vim
    leaves insert mode with it). Raising KeyboardInterrupt here would kill the
    editor with the user's text in it, so while it runs Ctrl-C does nothing
    in this process. A handler, not SIG_IGN: an ignored signal stays ignored
    across exec, while a handler is reset, so the editor gets the default.
    Only the main thread may set handlers; Python runs them there."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda _signum, _frame: None)
    try:
        yield
    finally:
        # None: the old handler was not set from Python; the default is closest.
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)


def _run_editor(path: Path) -> int:
    command = [*editor_command(), str(path)]
    try:
        with ctrl_c_left_to_the_editor():
            return subprocess.run(command, check=False).returncode
    except OSError as exc:
        raise ConfigError(
            f"cannot start the editor {command[0]!r}: {exc.strerror}; set $VISUAL or $EDITOR"
        ) from None


def edit_text(initial: str, suffix: str = ".md", stem: str = "edit") -> str:
    """Open the user's editor on a temporary file holding `initial` and return
    the saved text. Trailing newlines that the editor adds are dropped when
    `initial` had none. Raises ConfigError when the editor cannot start or
    exits with an error; if the text was changed, it is kept (see `keep_text`,
    named after `stem`) and the error gives its path."""
    fd, name = tempfile.mkstemp(suffix=suffix, prefix="memgpt-lite-")
    path = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(initial)
        status = _run_editor(path)
        raw = path.read_bytes()
    finally:
        path.unlink(missing_ok=True)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        kept = keep_text(raw, stem, suffix)
        raise ConfigError(
            f"the edited text is not UTF-8; nothing was changed. It is in {kept}"
        ) from None
    if status != 0:
        detail = f"; your text is in {keep_text(raw, stem, suffix)}" if text != initial else ""
        raise ConfigError(f"the editor exited with status {status}; nothing was changed{detail}")
    return text if initial.endswith("\n") else text.rstrip("\n")


def edit_block(agent: Agent, label: str) -> Block | None:
    """Edit the agent's block LABEL in the user's editor and store it. Returns
    the saved block, or None when the text is unchanged. If the new text breaks
    the block's limit, or the block changed meanwhile, the ConfigError says why
    and where the text was kept."""
    block = agent.block(label)
    if block.read_only:
        raise ConfigError(f"block {label!r} is read-only: it cannot be edited")
    stem = f"{agent.state.name}-{label}"
    text = edit_text(block.value, stem=stem)
    if text == block.value:
        return None
    try:
        return agent.set_block(label, text, expected=block.value)
    except ConfigError as exc:
        reason = str(exc).rstrip(".")
        raise ConfigError(f"{reason}. Your text is in {keep_text(text, stem)}") from None
