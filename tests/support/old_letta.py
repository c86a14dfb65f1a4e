"""letta-client 0.1.x, for the tests that drive the server with it.

It cannot live in the venv beside letta-client 1.x (one package name), so
the session fixture `old_letta` installs it once with pip `--target` into a
folder of its own, kept across runs in the user's cache
($XDG_CACHE_HOME or ~/.cache, memgpt_lite-tests/), and gives a function that
runs a client script in a subprocess with that folder first on its path.
The registry must be reachable the first time: a failed install fails the
test that asked for it, saying why; it is never skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

OLD_LETTA_VERSION = "0.1.324"
# pip's own limit on one install, so that a registry that hangs fails the test.
INSTALL_TIMEOUT_SECONDS = 600
SCRIPT_TIMEOUT_SECONDS = 300

# Run before every script: the client it imports must be the old one.
PRELUDE = f"""
import json, os, sys
from importlib.metadata import version
assert version("letta-client") == {OLD_LETTA_VERSION!r}, version("letta-client")
from letta_client import Letta
client = Letta(base_url=os.environ["LETTA_BASE_URL"], token=os.environ["LETTA_KEY"])
results = {{}}
"""
POSTLUDE = "\nprint(json.dumps(results, default=str))\n"

RunScript = Callable[..., dict[str, Any]]


def cache_folder() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "memgpt_lite-tests" / f"letta-client-{OLD_LETTA_VERSION}"


def install_old_letta(folder: Path) -> Path:
    """letta-client 0.1.x installed in `folder` (once: kept if there).
    Installed into a fresh folder beside it, then renamed into place, so a
    half-done install (or another test process installing too) never shows."""
    if (folder / "letta_client").is_dir():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="installing-", dir=folder.parent))
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    command += ["--target", str(staging), f"letta-client=={OLD_LETTA_VERSION}"]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_SECONDS
        )
    except subprocess.TimeoutExpired:
        shutil.rmtree(staging, ignore_errors=True)
        pytest.fail(f"pip did not install letta-client {OLD_LETTA_VERSION} in time", False)
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        pytest.fail(
            f"pip could not install letta-client {OLD_LETTA_VERSION} (the tests of "
            f"Letta's 0.1.x client need it): {done.stderr.strip()[-2000:]}",
            False,
        )
    try:
        staging.rename(folder)
    except OSError:  # another process put it there first: theirs is as good
        shutil.rmtree(staging, ignore_errors=True)
    return folder


@pytest.fixture(scope="session")
def old_letta() -> RunScript:
    """A function that runs a letta-client 0.1.x script against a server:
    `run(script, base_url=..., key=..., **values)`. The script finds a
    `client` made for the server and the key, and `values` in `env` (each
    given as text), and puts what it found in `results`, returned as read
    back from JSON."""
    folder = install_old_letta(cache_folder())

    def run(script: str, *, base_url: str, key: str, **values: str) -> dict[str, Any]:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update(PYTHONPATH=str(folder), LETTA_BASE_URL=base_url, LETTA_KEY=key, **values)
        body = PRELUDE + "env = os.environ\n" + script + POSTLUDE
        done = subprocess.run(
            [sys.executable, "-c", body],
            env=env,
            capture_output=True,
            text=True,
            timeout=SCRIPT_TIMEOUT_SECONDS,
        )
        assert done.returncode == 0, f"the 0.1.x client script failed:\n{done.stderr[-4000:]}"
        return json.loads(done.stdout.strip().splitlines()[-1])

    return run
