"""Letta Code, Letta's coding agent CLI (npm `@letta-ai/letta-code`), for
the tests that run it headless against `memgpt-lite serve`.

Its published `letta.js` is one bundle with most of its dependencies inside;
what it imports from beside it is `ws` and `sharp` (sharp loads at start-up,
with its prebuilt libvips, itself an npm package). Its other declared
dependencies are not all on the registry, so the package is not installed
with npm: `npm pack` fetches its tarball, which is unpacked, and `npm
install` puts those two beside it. Done once per machine, in the user's
cache ($XDG_CACHE_HOME or ~/.cache, memgpt_lite-tests/), keyed by version
and platform; a first install needs the npm registry. Without node or npm
the tests are skipped, saying so; a failed install fails them, saying why.

LETTA_CODE_VERSION: the newest release that runs on Node 20 (from 0.30 on
it needs Node 22.19); like every 0.2x release it speaks Letta's API
through letta-client 1.10 (Letta 0.16's routes: conversations, runs,
client-side tools).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

LETTA_CODE_VERSION = "0.25.9"
# What letta.js imports from beside it, pinned as tested.
BESIDE = ("ws@8.23.0", "sharp@0.34.5")
INSTALL_TIMEOUT_SECONDS = 600
# The oldest Node that runs the bundle (its package.json's engines).
MIN_NODE = 18


def cache_folder() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    where = f"{sys.platform}-{platform.machine()}"
    return base / "memgpt_lite-tests" / f"letta-code-{LETTA_CODE_VERSION}-{where}"


def node_or_skip() -> str:
    """The path of node, or the test skipped: Letta Code needs node and npm."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("Letta Code's tests need node and npm on PATH (neither is installed here)")
    done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=60)
    major = int(done.stdout.strip().lstrip("v").split(".")[0] or 0)
    if major < MIN_NODE:
        pytest.skip(f"Letta Code {LETTA_CODE_VERSION} needs node {MIN_NODE} or later, not {major}")
    return node


def _npm(args: list[str], cwd: Path, what: str) -> str:
    try:
        done = subprocess.run(
            ["npm", *args, "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_SECONDS,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"npm did not {what} in {INSTALL_TIMEOUT_SECONDS} s", False)
    if done.returncode != 0:
        pytest.fail(f"npm could not {what}: {done.stderr.strip()[-2000:]}", False)
    return done.stdout


def install_letta_code(folder: Path) -> Path:
    """Letta Code installed in `folder` (once: kept if there); its letta.js.
    Installed into a fresh folder beside it, then renamed into place, so a
    half-done install (or another test process installing too) never shows."""
    bundle = folder / "package" / "letta.js"
    if bundle.is_file():
        return bundle
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="installing-", dir=folder.parent))
    try:
        spec = f"@letta-ai/letta-code@{LETTA_CODE_VERSION}"
        packed = _npm(["pack", spec, "--json"], staging, f"fetch {spec}")
        tarball = staging / json.loads(packed)[0]["filename"]
        with tarfile.open(tarball) as archive:
            archive.extractall(staging, filter="data")  # into staging/package
        tarball.unlink()
        (staging / "package.json").write_text('{"private": true}\n')
        _npm(["install", "--ignore-scripts", *BESIDE], staging, f"install {', '.join(BESIDE)}")
        # Another process may have put it there first: theirs is as good.
        with contextlib.suppress(OSError):
            staging.rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return bundle


@dataclass
class LettaCode:
    """Runs Letta Code headless, as a user runs `letta -p`, against a server."""

    node: str
    bundle: Path
    home: Path  # its HOME: ~/.letta/settings.json, kept between runs
    workdir: Path  # where it runs: its project folder

    def run(
        self, base_url: str, key: str, *args: str, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """`letta ARGS` with the server's URL and key; its exit, output and errors."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("LETTA")}
        env.update(
            HOME=str(self.home),
            LETTA_BASE_URL=base_url,
            LETTA_API_KEY=key,
            # No telemetry, update check or keychain: the tests reach only
            # the server they start.
            LETTA_CODE_TELEM="0",
            DISABLE_AUTOUPDATER="1",
            LETTA_SKIP_KEYCHAIN_CHECK="1",
        )
        return subprocess.run(
            [self.node, str(self.bundle), *args],
            cwd=self.workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )


def letta_code(tmp: Path) -> LettaCode:
    """Letta Code, installed if needed, with a home and a project folder in `tmp`."""
    node = node_or_skip()
    bundle = install_letta_code(cache_folder())
    (tmp / "home").mkdir(parents=True, exist_ok=True)
    (tmp / "project").mkdir(parents=True, exist_ok=True)
    return LettaCode(node, bundle, tmp / "home", tmp / "project")
