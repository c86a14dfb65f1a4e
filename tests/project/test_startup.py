"""Start-up stays light: `memgpt-lite --help` and every command's `--help`
load click and a few small modules of ours, nothing that a command needs only
to run. Checked by the modules loaded, never by timing (benchmarks/startup.py
prints the times)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# What start-up must not load: together about a second of imports.
HEAVY = (
    "openai",
    "httpx",
    "numpy",
    "pydantic",
    "pydantic_core",
    "sqlite_utils",
    "sqlite3",
    "tiktoken",
    "rich",
)
# Ours that --help may load: the command definitions, paths and errors, and
# the settings' resolution with what it hands down (not settings.effective:
# pydantic's models of the settings).
LIGHT_OURS = (
    "memgpt_lite",
    "memgpt_lite.cli",
    "memgpt_lite.errors",
    "memgpt_lite.settings",
    "memgpt_lite.settings.resolve",
    "memgpt_lite.settings.endpoint",
    "memgpt_lite.settings.folders",
    "memgpt_lite.settings.values",
)

# Runs each --help in one fresh interpreter and prints, per command line, the
# modules that it added.
_PROBE = """
import json, sys
from memgpt_lite.cli.main import cli, main

lines = [["--help"]]
for name, command in sorted(cli.commands.items()):
    lines.append([name, "--help"])
    argument = ["NAME"] if command.params else []  # archival NAME ..., keys ...
    for sub in sorted(getattr(command, "commands", {})):
        lines.append([name, *argument, sub, "--help"])
loaded = {}
for argv in lines:
    before = set(sys.modules)
    try:
        main(argv)
    except SystemExit as exc:
        assert exc.code == 0, (argv, exc.code)
    loaded[" ".join(argv)] = sorted(set(sys.modules) - before)
loaded["(import)"] = sorted(sys.modules)
print(json.dumps(loaded))
"""


def _loaded_by_help(tmp_path: Path) -> dict[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _heavy(module: str) -> bool:
    root = module.split(".")[0]
    if root == "memgpt_lite":
        return module not in LIGHT_OURS and not module.startswith("memgpt_lite.cli.")
    return root in HEAVY


def test_help_loads_nothing_heavy(tmp_path):
    loaded = _loaded_by_help(tmp_path)
    assert "send --help" in loaded and "archival NAME search --help" in loaded  # all ran
    assert "keys create --help" in loaded
    offenders = {
        argv: heavy for argv, modules in loaded.items() if (heavy := list(filter(_heavy, modules)))
    }
    assert not offenders, offenders


def test_the_probe_sees_heavy_imports():
    # The check above is only as good as `_heavy`: it must flag what it guards.
    assert _heavy("openai.types") and _heavy("numpy") and _heavy("rich.console")
    assert _heavy("memgpt_lite.agent") and _heavy("memgpt_lite.models")
    assert not _heavy("click") and not _heavy("memgpt_lite.cli.base")
    assert not _heavy("memgpt_lite.settings.resolve")
    assert _heavy("memgpt_lite.settings.effective")


def test_the_server_starts_without_the_openai_client(tmp_path):
    # `serve` loads the openai package with the first model request, not at
    # start (its import costs about 0.4 s of CPU per server process).
    code = (
        "import sys, memgpt_lite.server.app\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'openai'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
