"""The browser of the web app's tests: Debian's `chromium`, driven headless
by Playwright for Python (never Playwright's own browser build, which
`playwright install` would download).

The test command installs it where it is missing: `install_chromium` runs
`apt-get install -y chromium` (after `apt-get update` when the install
fails, as on a machine whose package lists were never fetched), once per
machine, under a file lock that the test processes share (pytest-xdist's
workers and the controller). The root conftest starts it in the background
when a run includes tests/webapp/, so that it overlaps the other tests; the
browser fixture calls it again, which waits for the install under way, or
returns at once when the browser is there.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from support.paths import REPO

CHROMIUM = Path("/usr/bin/chromium")
WEBAPP_TESTS = REPO / "tests" / "webapp"
LOCK = Path(tempfile.gettempdir()) / "memgpt-lite-chromium-install.lock"
# Flags for a browser run as root in a container, and one that reaches for
# nothing but the pages it is sent to.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
APT_SECONDS = 900


def _apt(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(
        ["apt-get", *args], env=env, capture_output=True, text=True, timeout=APT_SECONDS
    )


def _last_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit status {done.returncode}"


def install_chromium(binary: Path = CHROMIUM) -> str | None:
    """Make sure `binary` is there, installing Debian's chromium if not.
    None when it is (at once, when it was already); else one line saying
    why it could not be installed."""
    if binary.exists():
        return None
    with LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be installing it
        try:
            if binary.exists():
                return None
            try:
                done = _apt("install", "-y", "chromium")
                if done.returncode != 0:  # no package lists yet, or old ones
                    _apt("update")
                    done = _apt("install", "-y", "chromium")
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"could not run apt-get to install chromium: {exc}"
            if binary.exists():
                return None
            return f"apt-get could not install chromium: {_last_line(done)}"
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def runs_webapp_tests(args: Sequence[str], rootdir: Path) -> bool:
    """Whether a run of these paths (pytest's arguments, or its testpaths)
    may include tests/webapp/."""
    for arg in args:
        where = (rootdir / arg.split("::")[0]).resolve()
        if where == WEBAPP_TESTS or WEBAPP_TESTS in where.parents or where in WEBAPP_TESTS.parents:
            return True
    return False


def install_in_background(args: Sequence[str], rootdir: Path) -> threading.Thread | None:
    """Start installing chromium in a thread if it is missing and the run
    includes the web app's tests; the thread, or None."""
    if CHROMIUM.exists() or not runs_webapp_tests(args, rootdir):
        return None
    thread = threading.Thread(target=install_chromium, name="chromium-install", daemon=True)
    thread.start()
    return thread
