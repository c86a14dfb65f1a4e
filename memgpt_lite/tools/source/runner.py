"""Running one request of a source tool (a call, or reading its schema) in
a process of its own: child.py, started here, never the caller's process.

The process gets:

- its own empty working folder (a temporary one, removed afterwards), which
  is also its HOME and TMPDIR;
- an environment made only of the caller's `ToolRunSettings.environment`
  (PATH, LANG and the like) and those folders: no API key, no database
  URL, no MEMGPT_LITE_* setting reaches it;
- a time limit: past it, the process and everything it started (its
  process group) are killed; a memory limit (its address space) and a CPU
  limit it sets on itself before loading anything;
- caps on what comes back: its reply is read up to the size a result of
  `result_max_chars` can take, and what it prints up to `output_max_bytes`
  (only the last lines are kept, for an error); past either cap it is killed.

This contains faults (a tool that hangs, leaks, crashes or floods its
output), not hostile code: the process runs as the caller's user, with the
caller's files and network. Every failure is a `ToolProcessError` in one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memgpt_lite.settings.values import ToolRunSettings

CHILD = Path(__file__).with_name("child.py")
TAIL_BYTES = 1500  # of what a tool printed, kept to explain a crash
_CHUNK = 64 * 1024
# A reply holds the result's text as JSON: at most 6 bytes a character
# (an escaped control character), and a few fields around it.
_REPLY_OVERHEAD = 4096


class ToolProcessError(Exception):
    """A tool's process gave no reply: it timed out, crashed, printed or
    answered too much. The text is one line, for the model or the user."""


async def run_in_process(
    request: dict[str, Any], limits: ToolRunSettings, what: str
) -> dict[str, Any]:
    """The reply of a child process to `request` (see child.py); `what`
    names the tool in errors ("tool 'weather'")."""
    workdir = Path(tempfile.mkdtemp(prefix="memgpt-tool-"))
    request = {
        **request,
        "sys_path": [entry or os.getcwd() for entry in sys.path],
        "memory_bytes": limits.memory_mb * 2**20,
        "cpu_seconds": math.ceil(limits.timeout_seconds) + 1,
    }
    environment = {"PATH": os.defpath, **dict(limits.environment)}
    environment.update(HOME=str(workdir), TMPDIR=str(workdir))
    try:
        process = await asyncio.create_subprocess_exec(
            *child_command(),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=workdir,
            env=environment,
            start_new_session=True,  # its own process group, killed as one
        )
        try:
            return await _exchange(process, json.dumps(request).encode(), limits, what)
        finally:
            _kill_group(process)
            await process.wait()
    finally:
        await asyncio.to_thread(shutil.rmtree, workdir, True)


def child_command() -> list[str]:
    """How the child starts: isolated from PYTHON* variables and the
    current folder, writing no bytecode."""
    return [sys.executable, "-I", "-B", str(CHILD)]


class _Printed:
    """What the process printed: counted, its end kept."""

    def __init__(self) -> None:
        self.size = 0
        self.tail = b""

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        self.tail = (self.tail + chunk)[-TAIL_BYTES:]

    def last_lines(self) -> str:
        text = self.tail.decode("utf-8", "replace").strip()
        return " | ".join(line.strip() for line in text.splitlines()[-6:] if line.strip())


async def _exchange(
    process: asyncio.subprocess.Process, request: bytes, limits: ToolRunSettings, what: str
) -> dict[str, Any]:
    stopped: list[str] = []  # why the process was killed, if it was

    def stop(reason: str) -> None:
        stopped.append(reason)
        _kill_group(process)

    printed = _Printed()
    assert process.stdout is not None and process.stderr is not None
    reader = asyncio.create_task(
        _drain(process.stderr, printed, limits.output_max_bytes, what, stop)
    )
    reply_cap = 6 * limits.result_max_chars + _REPLY_OVERHEAD
    try:
        async with asyncio.timeout(limits.timeout_seconds):
            await _send(process, request)
            reply = await _read_reply(process.stdout, reply_cap, what, stop)
            status = await process.wait()
    except TimeoutError:
        raise ToolProcessError(
            f"{what} did not finish within {limits.timeout_seconds:g} s, so it was stopped"
        ) from None
    finally:
        _kill_group(process)  # anything it left running
        await _finish(reader)
    if stopped:
        raise ToolProcessError(stopped[0])
    if status != 0 or not reply:
        raise ToolProcessError(_ended(what, status, printed))
    try:
        answer = json.loads(reply)
    except ValueError:
        raise ToolProcessError(f"{what} gave a reply that is not JSON") from None
    if not isinstance(answer, dict):
        raise ToolProcessError(f"{what} gave a reply that is not a JSON object")
    return answer


async def _send(process: asyncio.subprocess.Process, request: bytes) -> None:
    assert process.stdin is not None
    try:
        process.stdin.write(request)
        await process.stdin.drain()
        process.stdin.close()
    except (BrokenPipeError, ConnectionResetError):
        pass  # it ended before reading: its exit status says why


async def _read_reply(
    stream: asyncio.StreamReader, cap: int, what: str, stop: Callable[[str], None]
) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while chunk := await stream.read(_CHUNK):
        size += len(chunk)
        if size > cap:
            stop(f"{what} answered more than {cap:,} bytes, so it was stopped")
            return b""
        chunks.append(chunk)
    return b"".join(chunks)


async def _drain(
    stream: asyncio.StreamReader,
    printed: _Printed,
    cap: int,
    what: str,
    stop: Callable[[str], None],
) -> None:
    """Read what the process prints to its end, keeping only its last
    lines; past `cap` bytes, stop the process (and read on, discarding)."""
    while chunk := await stream.read(_CHUNK):
        over = printed.size <= cap < printed.size + len(chunk)
        printed.add(chunk)
        if over:
            stop(
                f"{what} printed more than {cap:,} bytes, so it was stopped (a tool returns "
                "its result; what it prints is not shown to the model)"
            )


async def _finish(reader: asyncio.Task[None]) -> None:
    """Let the reader of the printed output reach its end (the process group
    is dead by now); give up after a while on a process that left the group
    holding the pipe."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(reader), 2.0)
    reader.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await reader


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _ended(what: str, status: int | None, printed: _Printed) -> str:
    """Why a process that gave no reply ended, with the end of its output."""
    if status is not None and status < 0:
        try:
            how = f"was killed by {signal.Signals(-status).name}"
        except ValueError:  # a signal Python has no name for
            how = f"was killed by signal {-status}"
    else:
        how = f"crashed (exit status {status})"
    last = printed.last_lines()
    return f"{what} {how} before giving a result" + (f"; it printed: {last}" if last else "")
