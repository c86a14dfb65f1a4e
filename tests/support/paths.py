"""Where the repository's files are, for the tests that read them: computed
once, here, from this file's own place (tests/support/), so that a test does
not count how deep it sits in tests/."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "memgpt_lite"
# Letta's own agent files, kept beside the checkout (../shared/letta-af): the
# tests that read them skip, or read fewer files, when they are not there.
LETTA_AF = REPO.parent / "shared" / "letta-af"
