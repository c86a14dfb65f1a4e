"""Text made valid at the boundaries, and JSON parsed without surprises."""

from __future__ import annotations

import json

import pytest

from memgpt_lite.models import Block, Message, Passage, ToolCall
from memgpt_lite.text import (
    MAX_JSON_DEPTH,
    JSONProblem,
    clean_arguments,
    clean_text,
    parse_arguments,
    parse_json,
)


def test_clean_text_replaces_lone_surrogates_and_joins_pairs():
    assert clean_text("plain é 😀") == "plain é 😀"
    assert clean_text("a\ud800b") == "a\ufffdb"
    assert clean_text("\udcff") == "\ufffd"  # a non-UTF-8 byte in argv, as Python decodes it
    assert clean_text("\ud83d\ude00") == "😀"
    clean_text("x\ud800" * 3).encode("utf-8")  # never raises afterwards


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{", "not valid JSON"),
        ("[" * 10_000 + "]" * 10_000, "nested more than"),
        ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), "nested more than"),
        ('{"n": ' + "9" * 5000 + "}", "too many digits"),
        ('{"n": 1e999}', "out of range"),
        ('{"n": NaN}', "NaN is not a JSON value"),
        ('{"n": -Infinity}', "-Infinity is not a JSON value"),
    ],
)
def test_parse_json_turns_every_failure_into_one_problem(text, reason):
    with pytest.raises(JSONProblem, match=reason):
        parse_json(text)


def test_parse_json_accepts_the_deepest_allowed_value_and_cleans_strings():
    deep = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert parse_json(deep) is not None
    assert parse_json('{"k\\ud800": ["v\\udfff"]}') == {"k\ufffd": ["v\ufffd"]}


def test_parse_arguments_wants_an_object():
    assert parse_arguments("  ") == {}
    assert parse_arguments('{"a": 1}') == {"a": 1}
    with pytest.raises(JSONProblem, match="must be a JSON object"):
        parse_arguments("[1]")


def test_clean_arguments_keeps_clean_text_as_sent():
    raw = '{ "message" :"hi \\u00e9" }'
    assert clean_arguments(raw) == raw


def test_clean_arguments_removes_escaped_and_raw_surrogates():
    cleaned = clean_arguments('{"message": "a\\ud800b"}')
    assert json.loads(cleaned) == {"message": "a\ufffdb"}
    assert "\\ud800" not in cleaned
    # Invalid JSON keeps its shape, minus the escape.
    assert clean_arguments('{"message": "\\udc00') == '{"message": "\\ufffd'
    assert clean_arguments("{\ud800}") == "{\ufffd}"


def test_models_never_hold_a_lone_surrogate():
    message = Message(agent_id="a", role="user", content="hi\ud800")
    call = ToolCall(id="c", name="send_message", arguments='{"message": "\\ud800"}')
    block = Block(label="human", value="\udcff")
    passage = Passage(agent_id="a", text="t\ud800", tags=["x\ud800"], context="\ud800")
    for text in (
        message.content,
        call.arguments,
        block.value,
        passage.text,
        passage.tags[0],
        passage.context,
    ):
        assert text is not None
        text.encode("utf-8")
    assert Message(agent_id="a", role="assistant", tool_calls=[call]).search_text() == "\ufffd"
