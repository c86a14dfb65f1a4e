"""The fake OpenAI server, driven by the real openai client."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import socket
import threading
import time
from typing import Any

import openai
import pytest

from memgpt_lite.llm.tokens import TokenCounter
from memgpt_lite.testing import (
    FakeOpenAIServer,
    RecordedRequest,
    call,
    call_raw,
    drop,
    error,
    reply,
)

MODEL = "gpt-4o-mini"
USER = {"role": "user", "content": "hello"}
TOOL = {
    "type": "function",
    "function": {
        "name": "send_message",
        "description": "Send a message to the user.",
        "parameters": {"type": "object", "properties": {"message": {"type": "string"}}},
    },
}
MISSING = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. The following tool_call_ids did not have response messages: "
)
ORPHAN = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
    "message with 'tool_calls'."
)


def client_for(server: FakeOpenAIServer, **kwargs: Any) -> openai.OpenAI:
    kwargs.setdefault("max_retries", 0)
    return openai.OpenAI(base_url=server.base_url, api_key=server.api_key, **kwargs)


def chat(client: openai.OpenAI, messages: list[Any] | None = None, **kwargs: Any) -> Any:
    return client.chat.completions.create(model=MODEL, messages=messages or [USER], **kwargs)


def assistant_calls(*ids: str) -> dict[str, Any]:
    calls = [
        {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids
    ]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def tool_result(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "ok"}


# ----------------------------------------------------------- scripted replies


def test_text_reply_has_the_real_shape(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(reply(content="plain text reply, no tools"))
    messages = [{"role": "system", "content": "You are helpful."}, USER]
    result = chat(client_for(fake_llm), messages)

    assert result.id.startswith("chatcmpl-")
    assert result.model == MODEL
    choice = result.choices[0]
    assert choice.finish_reason == "stop"
    assert choice.message.role == "assistant"
    assert choice.message.content == "plain text reply, no tools"
    assert choice.message.tool_calls is None
    counter = TokenCounter(MODEL)
    assert result.usage.prompt_tokens == counter.count_request(messages, [])
    assert result.usage.completion_tokens == counter.count_text("plain text reply, no tools")
    assert result.usage.total_tokens == result.usage.prompt_tokens + result.usage.completion_tokens
    assert fake_llm.chat_requests == [{"model": MODEL, "messages": messages}]
    assert fake_llm.pending() == 0
    assert fake_llm.rejections == []


def test_tool_call_reply(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(
        reply(
            content="inner thought",
            tool_calls=[call("send_message", message="hi"), call("archival_search", query="x")],
        )
    )
    result = chat(client_for(fake_llm), tools=[TOOL])

    message = result.choices[0].message
    assert result.choices[0].finish_reason == "tool_calls"
    assert message.content == "inner thought"
    assert [tc.function.name for tc in message.tool_calls] == ["send_message", "archival_search"]
    assert json.loads(message.tool_calls[0].function.arguments) == {"message": "hi"}
    assert all(tc.type == "function" for tc in message.tool_calls)
    assert all(re.fullmatch(r"call_[0-9a-f]{12}", tc.id) for tc in message.tool_calls)
    assert message.tool_calls[0].id != message.tool_calls[1].id


def test_call_ids_are_unique_and_name_is_positional_only() -> None:
    ids = {call("f").id for _ in range(2000)}
    assert len(ids) == 2000
    # A tool may take an argument called "name" (or "id"): it stays an argument.
    assert json.loads(call("rename", name="x", id="y").arguments) == {"name": "x", "id": "y"}


def test_call_raw_sends_arguments_verbatim(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(reply(tool_calls=[call_raw("core_memory_append", '{"label": ', id="call_x")]))
    result = chat(client_for(fake_llm))

    (tool_call,) = result.choices[0].message.tool_calls
    assert tool_call.id == "call_x"
    assert tool_call.function.arguments == '{"label": '
    assert result.choices[0].message.content is None


def test_replies_are_consumed_in_order(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(reply("one"), reply("two"))
    fake_llm.enqueue(reply("three"))
    assert fake_llm.pending() == 3
    client = client_for(fake_llm)

    contents = [chat(client).choices[0].message.content for _ in range(3)]

    assert contents == ["one", "two", "three"]
    assert fake_llm.pending() == 0
    assert len(fake_llm.chat_requests) == 3


def test_finish_reason_can_be_scripted(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(reply("cut off", finish_reason="length"))
    assert chat(client_for(fake_llm)).choices[0].finish_reason == "length"


@pytest.mark.parametrize(
    "item",
    [
        "just a string",
        {"content": "a dict"},
        reply(content=42),  # type: ignore[arg-type]
        reply(tool_calls=["send_message"]),  # type: ignore[list-item]
        reply(tool_calls=[call_raw("f", {"a": 1})]),  # type: ignore[arg-type]
        reply(tool_calls=[call_raw("", "{}")]),
        reply(tool_calls=[call_raw("f", "{}", id="same"), call_raw("g", "{}", id="same")]),
        reply("x", finish_reason="done"),
        reply("x", delay=-1),
        error(200, "not an error"),
        error(429, None),  # type: ignore[arg-type]
        error(429, "x", headers={"Retry-After": 0}),  # type: ignore[dict-item]
    ],
)
def test_enqueue_rejects_garbage_early(fake_llm: FakeOpenAIServer, item: Any) -> None:
    with pytest.raises(ValueError):
        fake_llm.enqueue(reply("fine"), item)
    assert fake_llm.pending() == 0  # nothing of a bad batch is queued


# ------------------------------------------------------- errors and transport


def test_scripted_429_is_retried_after_retry_after(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(
        error(429, "Rate limit reached", headers={"Retry-After": "0"}),
        reply("after the retry"),
    )
    result = chat(client_for(fake_llm, max_retries=1))

    assert result.choices[0].message.content == "after the retry"
    assert [r.status for r in fake_llm.requests] == [429, 200]
    assert fake_llm.requests[0].error == "Rate limit reached"
    assert len(fake_llm.chat_requests) == 2
    assert fake_llm.rejections == []  # scripted errors are not server rejections


def test_scripted_error_without_retries(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(error(429, "Rate limit reached", headers={"Retry-After": "7"}))
    with pytest.raises(openai.RateLimitError) as info:
        chat(client_for(fake_llm))

    assert info.value.status_code == 429
    assert info.value.response.headers["retry-after"] == "7"
    assert info.value.body == {
        "message": "Rate limit reached",
        "type": "rate_limit_error",
        "param": None,
        "code": None,
    }


def test_scripted_context_length_error(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(
        error(400, "This model's maximum context length is ...", code="context_length_exceeded")
    )
    with pytest.raises(openai.BadRequestError) as info:
        chat(client_for(fake_llm))
    assert info.value.code == "context_length_exceeded"
    assert info.value.type == "invalid_request_error"


def test_drop_without_retries_is_a_connection_error(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(drop(), reply("unused"))
    with pytest.raises(openai.APIConnectionError):
        chat(client_for(fake_llm))
    assert fake_llm.pending() == 1
    assert fake_llm.requests[0].status == 0


def test_drop_is_recovered_by_one_retry(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(drop(), reply("recovered"))
    result = chat(client_for(fake_llm, max_retries=1))
    assert result.choices[0].message.content == "recovered"
    assert len(fake_llm.requests) == 2


@pytest.mark.alone  # The second request must be answered within the client's 0.1 s timeout.
def test_delay_makes_the_client_time_out(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(reply("slow", delay=0.5), reply("fast"))
    client = client_for(fake_llm, timeout=0.1)
    with pytest.raises(openai.APITimeoutError):
        chat(client)
    # The server keeps serving other connections while one handler sleeps.
    assert chat(client).choices[0].message.content == "fast"


def test_stop_does_not_wait_for_a_sleeping_reply() -> None:
    server = FakeOpenAIServer().start()
    server.enqueue(reply("never", delay=30))
    worker = threading.Thread(target=lambda: _swallow(chat, client_for(server)))
    worker.start()
    while not server.requests:
        time.sleep(0.01)
    server.stop()
    worker.join(timeout=10)  # the reply would come after 30 s
    assert not worker.is_alive()


def _swallow(fn: Any, *args: Any) -> None:
    with contextlib.suppress(openai.APIConnectionError):  # expected: the server went away
        fn(*args)


def test_wrong_api_key_is_401(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(reply("unused"))
    client = openai.OpenAI(base_url=fake_llm.base_url, api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as info:
        chat(client)

    assert info.value.status_code == 401
    assert info.value.code == "invalid_api_key"
    assert fake_llm.pending() == 1
    assert [r.status for r in fake_llm.rejections] == [401]


def test_missing_authorization_header_is_401(fake_llm: FakeOpenAIServer) -> None:
    status, body = raw_post(fake_llm, "/v1/chat/completions", b"{}", auth=False)
    assert status == 401
    assert body["error"]["code"] == "invalid_api_key"


def test_empty_queue_is_400_not_5xx(fake_llm: FakeOpenAIServer) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        chat(client_for(fake_llm, max_retries=2))
    assert info.value.body["message"] == "fake server: no scripted reply left"
    assert len(fake_llm.requests) == 1  # not retried
    assert fake_llm.chat_requests == []


def test_responder_answers_when_the_queue_is_empty(fake_llm: FakeOpenAIServer) -> None:
    seen: list[int] = []

    def responder(body: dict[str, Any]) -> Any:
        seen.append(len(body["messages"]))
        return reply(f"endless {len(seen)}")

    fake_llm.responder = responder
    fake_llm.enqueue(reply("scripted first"))
    client = client_for(fake_llm)

    contents = [chat(client).choices[0].message.content for _ in range(3)]

    assert contents == ["scripted first", "endless 1", "endless 2"]
    assert seen == [1, 1]
    assert len(fake_llm.chat_requests) == 3


def test_responder_may_repeat_ids_but_not_send_garbage(fake_llm: FakeOpenAIServer) -> None:
    twice = [call_raw("f", "{}", id="call_same"), call_raw("g", "{}", id="call_same")]
    fake_llm.responder = lambda body: reply(tool_calls=twice)  # a quirky server's output
    client = client_for(fake_llm)
    assert [tc.id for tc in chat(client).choices[0].message.tool_calls] == ["call_same"] * 2

    fake_llm.responder = lambda body: "not a reply"
    with pytest.raises(openai.BadRequestError) as info:
        chat(client)
    assert info.value.body["message"].startswith("fake server: bad responder output:")


def test_models_and_unknown_paths(fake_llm: FakeOpenAIServer) -> None:
    client = client_for(fake_llm)
    assert [m.id for m in client.models.list()] == [FakeOpenAIServer.model_id]
    with pytest.raises(openai.NotFoundError) as info:
        client.moderations.create(model="omni-moderation-latest", input="x")
    assert info.value.body["message"] == "Invalid URL (POST /v1/moderations)"
    assert fake_llm.rejections[-1].path == "/v1/moderations"


def test_invalid_json_body_is_400(fake_llm: FakeOpenAIServer) -> None:
    status, body = raw_post(fake_llm, "/v1/chat/completions", b"{not json")
    assert status == 400
    assert "parse the JSON body" in body["error"]["message"]
    status, body = raw_post(fake_llm, "/v1/chat/completions", b"[1, 2]")
    assert (status, body["error"]["message"]) == (
        400,
        "fake server: the request body must be a JSON object",
    )
    assert [r.body for r in fake_llm.rejections] == [None, [1, 2]]


def test_keep_alive_with_content_length(fake_llm: FakeOpenAIServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", int(fake_llm.base_url.split(":")[2][:-3]))
    headers = {"Authorization": f"Bearer {fake_llm.api_key}"}
    for _ in range(2):  # both requests travel on the same connection
        conn.request("GET", "/v1/models", headers=headers)
        response = conn.getresponse()
        assert response.status == 200
        assert int(response.headers["Content-Length"]) == len(response.read())
        assert response.headers["Content-Type"] == "application/json"
    conn.close()


def test_reset_clears_queue_and_history(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(reply("a"), reply("b"))
    chat(client_for(fake_llm))
    fake_llm.reset()
    assert fake_llm.pending() == 0
    assert fake_llm.requests == fake_llm.chat_requests == fake_llm.rejections == []


def test_concurrent_requests_each_consume_one_reply(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(*(reply(str(i)) for i in range(24)))
    client = client_for(fake_llm)
    results: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(6):
            content = chat(client).choices[0].message.content
            with lock:
                results.append(content)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results, key=int) == [str(i) for i in range(24)]
    assert fake_llm.pending() == 0
    assert len(fake_llm.requests) == 24


def raw_post(
    server: FakeOpenAIServer, path: str, data: bytes, *, auth: bool = True
) -> tuple[int, Any]:
    """POST raw bytes, for requests the openai client cannot produce."""
    port = int(server.base_url.split(":")[2][:-3])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    headers = {"Content-Type": "application/json"}
    if auth:
        headers["Authorization"] = f"Bearer {server.api_key}"
    conn.request("POST", path, body=data, headers=headers)
    response = conn.getresponse()
    body = json.loads(response.read())
    conn.close()
    return response.status, body


# ----------------------------------------------------------------- validation

LONG_NAME = "x" * 65


def bad_tool(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name}}


REJECTED: list[tuple[str, dict[str, Any], str]] = [
    ("empty model", {"model": ""}, "you must provide a model parameter"),
    (
        "empty messages",
        {"messages": []},
        "Invalid 'messages': empty array. Expected an array "
        "with minimum length 1, but got an empty array instead.",
    ),
    (
        "message not an object",
        {"messages": ["hi"]},
        "Invalid type for 'messages[0]': expected an object, but got a string instead.",
    ),
    (
        "unknown role",
        {"messages": [{"role": "robot", "content": "x"}]},
        "Invalid value: 'robot'. Supported values are: 'system', 'developer', 'user', "
        "'assistant', 'tool'.",
    ),
    (
        "user without content",
        {"messages": [{"role": "user"}]},
        "Missing required parameter: 'messages[0].content'.",
    ),
    (
        "system content not a string",
        {"messages": [{"role": "system", "content": 5}]},
        "Invalid type for 'messages[0].content': expected one of a string or array of objects, "
        "but got an integer instead.",
    ),
    (
        "assistant without content or tool_calls",
        {"messages": [USER, {"role": "assistant", "content": None}]},
        "Missing required parameter: 'messages[1].content'.",
    ),
    (
        "assistant with empty tool_calls",
        {"messages": [USER, {"role": "assistant", "content": "x", "tool_calls": []}]},
        "Invalid 'messages[1].tool_calls': empty array. Expected an array with minimum length 1, "
        "but got an empty array instead.",
    ),
    (
        "tool_call without id",
        {
            "messages": [
                USER,
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"type": "function", "function": {"name": "f", "arguments": "{}"}}
                    ],
                },
            ]
        },
        "Missing required parameter: 'messages[1].tool_calls[0].id'.",
    ),
    (
        "tool_call with wrong type",
        {
            "messages": [
                USER,
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "a", "type": "fn", "function": {"name": "f", "arguments": "{}"}}
                    ],
                },
            ]
        },
        "Invalid value: 'fn'. Supported values are: 'function'.",
    ),
    (
        "tool_call name not a string",
        {
            "messages": [
                USER,
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "a",
                            "type": "function",
                            "function": {"name": None, "arguments": "{}"},
                        }
                    ],
                },
            ]
        },
        "Invalid type for 'messages[1].tool_calls[0].function.name': expected a string, "
        "but got null instead.",
    ),
    (
        "tool_call arguments as an object",
        {
            "messages": [
                USER,
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "a", "type": "function", "function": {"name": "f", "arguments": {}}}
                    ],
                },
            ]
        },
        "Invalid type for 'messages[1].tool_calls[0].function.arguments': expected a string, "
        "but got an object instead.",
    ),
    (
        "tool message without tool_call_id",
        {"messages": [USER, assistant_calls("a"), {"role": "tool", "content": "ok"}]},
        "Missing required parameter: 'messages[2].tool_call_id'.",
    ),
    (
        "tool message without content",
        {"messages": [USER, assistant_calls("a"), {"role": "tool", "tool_call_id": "a"}]},
        "Missing required parameter: 'messages[2].content'.",
    ),
    (
        "tool call never answered",
        {"messages": [USER, assistant_calls("call_a", "call_b")]},
        MISSING + "call_a, call_b",
    ),
    (
        "user message before the answers",
        {
            "messages": [
                USER,
                assistant_calls("call_a", "call_b"),
                tool_result("call_b"),
                USER,
                tool_result("call_a"),
            ]
        },
        MISSING + "call_a",
    ),
    (
        "assistant message before the answers",
        {"messages": [USER, assistant_calls("call_a"), {"role": "assistant", "content": "x"}]},
        MISSING + "call_a",
    ),
    (
        "tool message with no tool_calls before it",
        {"messages": [USER, tool_result("call_a")]},
        ORPHAN,
    ),
    (
        "tool message answering an unknown id",
        {"messages": [USER, assistant_calls("call_a"), tool_result("call_zzz")]},
        ORPHAN,
    ),
    (
        "tool message answering twice",
        {
            "messages": [
                USER,
                assistant_calls("call_a"),
                tool_result("call_a"),
                tool_result("call_a"),
            ]
        },
        ORPHAN,
    ),
    (
        "tool message answering an older assistant message",
        {
            "messages": [
                USER,
                assistant_calls("call_a"),
                tool_result("call_a"),
                {"role": "assistant", "content": "done"},
                tool_result("call_a"),
            ]
        },
        ORPHAN,
    ),
    (
        "tool name with a space",
        {"tools": [TOOL, bad_tool("a"), bad_tool("b"), bad_tool("bad name")]},
        "Invalid 'tools[3].function.name': string does not match pattern. Expected a string that "
        "matches the pattern '^[a-zA-Z0-9_-]+$'.",
    ),
    (
        "tool name too long",
        {"tools": [bad_tool(LONG_NAME)]},
        "Invalid 'tools[0].function.name': string does not match pattern. Expected a string that "
        "matches the pattern '^[a-zA-Z0-9_-]+$'.",
    ),
    (
        "duplicate tool names",
        {"tools": [TOOL, TOOL]},
        "Invalid 'tools': duplicate function name 'send_message'.",
    ),
    (
        "parameters not an object schema",
        {
            "tools": [
                {"type": "function", "function": {"name": "f", "parameters": {"type": "array"}}}
            ]
        },
        "Invalid schema for function 'f': schema must be a JSON Schema of 'type: \"object\"', "
        "got 'type: \"array\"'.",
    ),
    (
        "tool of another type",
        {"tools": [{"type": "web", "function": {"name": "f"}}]},
        "Invalid value: 'web'. Supported values are: 'function'.",
    ),
    (
        "empty tools",
        {"tools": []},
        "Invalid 'tools': empty array. Expected an array with minimum length 1, "
        "but got an empty array instead.",
    ),
    (
        "tool_choice without tools",
        {"tool_choice": "auto"},
        "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
        "specified.",
    ),
    (
        "required tool_choice without tools",
        {"tool_choice": "required"},
        "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
        "specified.",
    ),
    (
        "tool_choice naming a missing tool",
        {"tools": [TOOL], "tool_choice": {"type": "function", "function": {"name": "nope"}}},
        "Invalid value for 'tool_choice': function 'nope' is not in 'tools'.",
    ),
    (
        "tool_choice garbage",
        {"tools": [TOOL], "tool_choice": "always"},
        "Invalid value for 'tool_choice': expected 'none', 'auto', 'required' or an object.",
    ),
    (
        "stream not a boolean",
        {"stream": "yes"},
        "Invalid type for 'stream': expected a boolean, but got a string instead.",
    ),
    (
        "stream_options without stream",
        {"stream_options": {"include_usage": True}},
        "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
    ),
    (
        "stream_options with stream false",
        {"stream": False, "stream_options": {"include_usage": True}},
        "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
    ),
    (
        "stream_options not an object",
        {"stream": True, "stream_options": ["include_usage"]},
        "Invalid type for 'stream_options': expected an object, but got an array instead.",
    ),
    (
        "include_usage not a boolean",
        {"stream": True, "stream_options": {"include_usage": 1}},
        "Invalid type for 'stream_options.include_usage': expected a boolean, but got an "
        "integer instead.",
    ),
    (
        "unknown stream option",
        {"stream": True, "stream_options": {"include_useage": True}},
        "Unknown parameter: 'stream_options.include_useage'.",
    ),
    (
        "parallel_tool_calls without tools",
        {"parallel_tool_calls": False},
        "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when "
        "'tools' are specified.",
    ),
]


@pytest.mark.parametrize(
    ("overrides", "message"), [c[1:] for c in REJECTED], ids=[c[0] for c in REJECTED]
)
def test_validation_rejects(
    fake_llm: FakeOpenAIServer, overrides: dict[str, Any], message: str
) -> None:
    fake_llm.enqueue(reply("must not be consumed"))
    request = {"model": MODEL, "messages": [USER], **overrides}

    with pytest.raises(openai.BadRequestError) as info:
        client_for(fake_llm).chat.completions.create(**request)

    assert info.value.status_code == 400
    assert info.value.body["message"] == message
    assert info.value.type == "invalid_request_error"
    assert fake_llm.pending() == 1
    assert fake_llm.chat_requests == []
    (rejection,) = fake_llm.rejections
    assert isinstance(rejection, RecordedRequest)
    assert (rejection.status, rejection.error, rejection.body) == (400, message, request)


def test_pairing_errors_use_param_messages(fake_llm: FakeOpenAIServer) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        chat(client_for(fake_llm), [USER, assistant_calls("call_a")])
    assert (info.value.param, info.value.code) == ("messages", None)


ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    (
        "answers in any order",
        {"messages": [USER, assistant_calls("a", "b"), tool_result("b"), tool_result("a"), USER]},
    ),
    (
        "several tool turns",
        {
            "messages": [
                USER,
                assistant_calls("a"),
                tool_result("a"),
                assistant_calls("b"),
                tool_result("b"),
            ]
        },
    ),
    (
        "assistant with content and null tool_calls",
        {"messages": [USER, {"role": "assistant", "content": "hi", "tool_calls": None}, USER]},
    ),
    (
        "content parts and developer role",
        {
            "messages": [
                {"role": "developer", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            ]
        },
    ),
    ("required tool_choice with tools", {"tools": [TOOL], "tool_choice": "required"}),
    (
        "named tool_choice",
        {
            "tools": [TOOL],
            "parallel_tool_calls": False,
            "tool_choice": {"type": "function", "function": {"name": "send_message"}},
        },
    ),
    ("tool_choice none without tools", {"tool_choice": "none"}),
    ("stream false, stream_options null", {"stream": False, "stream_options": None}),
    ("tool without parameters", {"tools": [bad_tool("ok-name_1"), bad_tool("x" * 64)]}),
]


@pytest.mark.parametrize("overrides", [c[1] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED])
def test_validation_accepts(fake_llm: FakeOpenAIServer, overrides: dict[str, Any]) -> None:
    fake_llm.enqueue(reply("ok"))
    request = {"model": MODEL, "messages": [USER], **overrides}
    result = client_for(fake_llm).chat.completions.create(**request)
    assert result.choices[0].message.content == "ok"
    assert fake_llm.rejections == []
    assert fake_llm.chat_requests == [request]


def test_required_tool_choice_can_be_rejected() -> None:
    with FakeOpenAIServer(reject_required_tool_choice=True) as server:
        server.enqueue(reply("unused"))
        client = client_for(server)
        with pytest.raises(openai.BadRequestError) as info:
            chat(client, tools=[TOOL], tool_choice="required")
        assert (
            info.value.body["message"] == "tool_choice 'required' is not supported by this server"
        )
        assert server.pending() == 1
        # "auto" is still fine on such servers.
        assert chat(client, tools=[TOOL], tool_choice="auto").choices[0].message.content


def test_context_window(fake_llm: FakeOpenAIServer) -> None:
    messages = [{"role": "system", "content": "word " * 200}, USER]
    prompt = TokenCounter(MODEL).count_request(messages, [TOOL])
    fake_llm.enqueue(reply("fits"))
    client = client_for(fake_llm)

    fake_llm.context_window = prompt  # exactly full still fits
    assert chat(client, messages, tools=[TOOL]).choices[0].message.content == "fits"

    fake_llm.context_window = prompt - 1
    with pytest.raises(openai.BadRequestError) as info:
        chat(client, messages, tools=[TOOL])
    assert info.value.code == "context_length_exceeded"
    assert info.value.param == "messages"
    assert info.value.body["message"] == (
        f"This model's maximum context length is {prompt - 1} tokens. However, your messages "
        f"resulted in {prompt} tokens. Please reduce the length of the messages."
    )

    fake_llm.context_window = prompt + 100  # the completion budget counts too
    with pytest.raises(openai.BadRequestError) as info:
        chat(client, messages, tools=[TOOL], max_completion_tokens=101)
    assert info.value.code == "context_length_exceeded"
    assert f"({prompt} in the messages, 101 in the completion)" in info.value.body["message"]
    assert fake_llm.pending() == 0
    assert len(fake_llm.rejections) == 2


# ------------------------------------------------------------ conftest guards


def test_network_guard_blocks_non_loopback_connects() -> None:
    for family, address in [
        (socket.AF_INET, ("10.255.255.1", 80)),
        (socket.AF_INET6, ("2001:db8::1", 443, 0, 0)),
    ]:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            with pytest.raises(RuntimeError, match="network access blocked in tests"):
                sock.connect(address)
            with pytest.raises(RuntimeError, match="network access blocked in tests"):
                sock.connect_ex(address)


def test_env_is_isolated(tmp_path: Any) -> None:
    assert "OPENAI_API_KEY" not in os.environ
    assert os.environ["OPENAI_BASE_URL"] == "http://127.0.0.1:9/v1"
    assert os.environ["MEMGPT_LITE_HOME"].startswith(str(tmp_path))


def test_fake_llm_is_found_through_the_environment(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(reply("found"))
    client = openai.OpenAI(max_retries=0)  # reads OPENAI_BASE_URL and OPENAI_API_KEY
    assert chat(client).choices[0].message.content == "found"
