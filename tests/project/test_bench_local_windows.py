"""benchmarks/local_windows.py at a tiny size, so it cannot rot: an agent
that believes in 8,192 tokens on a llama.cpp running 2,500 goes over the real
window once, and the row counts it."""

from __future__ import annotations

import sys

from support.paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import local_windows  # noqa: E402


def test_one_row_counts_the_one_request_over_the_window(_isolated, _vocabularies):
    row = local_windows.run("llama.cpp", served=2500, believed=8192, turns=25)
    assert row["over_window"] == 1 and row["failed_turns"] == 0
    assert row["ends_with"] == 2500
    assert row["chat_requests"] >= 26  # every turn, plus the refused one
