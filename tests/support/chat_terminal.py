"""What the tests of `memgpt-lite chat` and of `send` on a terminal share:
the command as a real process on a pseudo-terminal (pexpect), and the
agent's stored messages afterwards. The `chat_env` fixture is in conftest.py."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pexpect

from memgpt_lite import Store

PROMPT = "you> "
CSI_SEQUENCE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def spawn(
    env: dict[str, str], db: Path, *args: str, command: str = "chat", prompt: bool = True
) -> pexpect.spawn:
    """`memgpt-lite COMMAND ARGS` on a pseudo-terminal; a chat, at its first
    prompt unless `prompt` is false (it asks something first)."""
    child = pexpect.spawn(
        sys.executable,
        ["-m", "memgpt_lite", "--db", str(db), command, *args],
        env=env,
        encoding="utf-8",
        timeout=20,
        dimensions=(50, 200),
    )
    if command == "chat" and prompt:
        child.expect(PROMPT)
    return child


def leave(child: pexpect.spawn) -> None:
    child.sendeof()  # Ctrl-D
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def stored(tmp_path: Path) -> list[tuple[str, str | None]]:
    with Store(tmp_path / "chat.db") as store:
        agent = store.get_agent("sam")
        return [(m.role, m.content) for m in store.messages_from(agent.id, 0)]
