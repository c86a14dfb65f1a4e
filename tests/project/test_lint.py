"""ruff stays clean: the style rules are part of the suite, not a separate step."""

import subprocess
import sys

from support.paths import REPO


def test_ruff_check_is_clean():
    paths = ["memgpt_lite", "tests", "examples", "benchmarks"]
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", *paths],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
