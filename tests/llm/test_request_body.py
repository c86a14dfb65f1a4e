"""Read-only request messages, bodies encoded from their kept JSON
(llm/request_body.py), and the token counter keeping what it built for the
window's messages (`TokenCounter.sent`)."""

from __future__ import annotations

import copy
import json
import math
import pickle
from datetime import UTC, datetime

import pytest

from memgpt_lite.llm.request_body import RequestMessage, compact_json, encode_request
from memgpt_lite.llm.tokens import TokenCounter
from memgpt_lite.models import LLMConfig, Message, ToolCall

CALL = {"id": "c1", "type": "function", "function": {"name": "send_message", "arguments": "{}"}}
PLAIN = {"role": "assistant", "content": "café ☕", "tool_calls": [CALL]}


def changes() -> list:
    return [
        lambda m: m.__setitem__("role", "user"),
        lambda m: m.__delitem__("role"),
        lambda m: m.update(role="user"),
        lambda m: m.setdefault("name", "x"),
        lambda m: m.pop("role"),
        lambda m: m.popitem(),
        lambda m: m.clear(),
        lambda m: m.__ior__({"role": "user"}),
        lambda m: m["tool_calls"].append(CALL),
        lambda m: m["tool_calls"].__setitem__(0, CALL),
        lambda m: m["tool_calls"].__iadd__([CALL]),
        lambda m: m["tool_calls"].pop(),
        lambda m: m["tool_calls"].sort(),
        lambda m: m["tool_calls"][0].__setitem__("id", "c2"),
        lambda m: m["tool_calls"][0]["function"].__setitem__("arguments", '{"a": 1}'),
    ]


@pytest.mark.parametrize("change", changes())
def test_a_request_message_cannot_be_changed_in_place(change):
    message = RequestMessage(PLAIN)
    with pytest.raises(TypeError, match="read-only"):
        change(message)
    assert message == PLAIN and message.json() == compact_json(PLAIN)


@pytest.mark.parametrize(
    "make_copy", [dict, copy.copy, copy.deepcopy, lambda m: pickle.loads(pickle.dumps(m))]
)
def test_its_copies_are_plain_and_can_be_changed(make_copy):
    message = RequestMessage(PLAIN)
    copied = make_copy(message)
    assert copied == PLAIN and type(copied) is dict
    copied["role"] = "user"
    assert message["role"] == "assistant"
    if copied["tool_calls"] is not message["tool_calls"]:  # a deep copy
        copied["tool_calls"].append(CALL)
        copied["tool_calls"][0]["id"] = "c9"
        assert message == PLAIN


def test_a_body_is_what_the_openai_client_would_encode():
    kept = RequestMessage(PLAIN)
    request = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "system", "content": "s"}, kept, {"role": "user", "content": "ñ"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        "tool_choice": "required",
        "temperature": 0.5,
    }
    body = encode_request(request)
    assert json.loads(body) == json.loads(compact_json(request)) == request
    assert "café ☕".encode() in body and b" " not in body.replace("café ☕".encode(), b"")
    assert kept.json() is kept.json()  # encoded once
    assert json.loads(encode_request({"model": "m", "messages": []})) == {
        "model": "m",
        "messages": [],
    }
    assert json.loads(encode_request({"messages": [kept]})) == {"messages": [PLAIN]}
    when = datetime(2026, 1, 1, tzinfo=UTC)
    odd = {"model": "m", "input": ["x"], "config": LLMConfig(model="m"), "at": when}
    assert json.loads(encode_request(odd))["at"] == when.isoformat()
    assert json.loads(encode_request(odd))["config"] == {"model": "m"}
    with pytest.raises(ValueError):
        encode_request({"model": "m", "messages": [], "temperature": math.nan})


def window() -> list[Message]:
    call = ToolCall(id="c1", name="send_message", arguments='{"message": "hi"}')
    return [
        Message(agent_id="a", role="user", content="hello", seq=1),
        Message(agent_id="a", role="assistant", content="hm", tool_calls=[call], seq=2),
        Message(agent_id="a", role="tool", content="ok", tool_call_id="c1", name="x", seq=3),
    ]


def test_what_was_built_for_a_message_is_kept_while_the_same_object_comes_back():
    counter = TokenCounter("gpt-4o-mini")
    messages = window()
    first = counter.sent(messages)
    assert [s.request for s in first] == [m.to_openai() for m in messages]
    assert all(type(s.request) is RequestMessage for s in first)
    assert [s.tokens for s in first] == [counter.count_message(m.to_openai()) for m in messages]
    again = counter.sent(messages)
    assert all(a is b for a, b in zip(first, again, strict=True))


def test_an_edited_message_is_built_again():
    counter = TokenCounter("gpt-4o-mini")
    messages = window()
    first = counter.sent(messages)
    # An edit, here or elsewhere, comes back from the store as a new object.
    edited = messages[1].model_copy(update={"content": "thought again at length " * 20})
    again = counter.sent([messages[0], edited, messages[2]])
    assert again[1].request["content"] == edited.content
    assert again[1].tokens > first[1].tokens
    assert again[0] is first[0] and again[2] is first[2]


def test_only_the_last_window_is_kept():
    counter = TokenCounter("gpt-4o-mini")
    messages = window()
    first = counter.sent(messages)
    counter.sent(messages[1:])  # the first message left the window
    assert counter.sent(messages)[0] is not first[0]
    kept = counter.sent(messages)
    counter.forget(messages[2].id)
    assert counter.sent(messages)[2] is not kept[2]
