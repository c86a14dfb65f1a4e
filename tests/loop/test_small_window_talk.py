"""A small window still learns: at 2,500 tokens, a 120-turn talk with an
agent-like scripted model (benchmarks/small_windows.py) keeps the user's
name in core memory and finds an early turn by searching the conversation,
with no request the endpoint rejects as too long."""

from __future__ import annotations

import sys

import pytest
from support.paths import REPO

from memgpt_lite.testing import FakeOpenAIServer

sys.path.insert(0, str(REPO / "benchmarks"))

from small_windows import talk  # noqa: E402


# The default instructions and blocks: their compact wording leaves the talk room.
@pytest.mark.parametrize("tool_set", ["memgpt", "letta-v1", "anthropic-memory"])
def test_a_talk_at_2500_tokens_keeps_the_name_and_finds_an_early_turn(
    fake_llm: FakeOpenAIServer, tmp_path, tool_set
):
    result = talk(fake_llm, tmp_path / "a.db", tool_set, 2_500, 120)
    assert result.refused is None
    assert result.name_kept
    assert result.early_turn_found
    assert result.rejected == 0
