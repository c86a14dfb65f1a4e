"""The in-process fake models: they answer like the streaming endpoint (the
same deltas and Completion for the same script), check every request as the
fake server does, and fail loudly when a script runs out or a request is bad."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from memgpt_lite import LLMError
from memgpt_lite.llm.model import Completion, Model, TextDelta, ToolCallDelta, complete
from memgpt_lite.llm.openai_chat import ContextWindowExceeded, OpenAIChatModel
from memgpt_lite.loop.message_stream import MessageStream
from memgpt_lite.models import LLMConfig
from memgpt_lite.testing import call, drop, error, hang, reply, say
from memgpt_lite.testing.model import (
    FunctionModel,
    InvalidRequest,
    ScriptedModel,
    ScriptExhausted,
)

CONFIG = LLMConfig(model="gpt-4o-mini")
USER = {"role": "user", "content": "hi"}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "send_message",
            "parameters": {"type": "object", "properties": {"message": {"type": "string"}}},
        },
    }
]


def chunks_of(
    model: Any, messages: list[Any] | None = None, config: LLMConfig = CONFIG
) -> list[Any]:
    async def collect() -> list[Any]:
        return [c async for c in model.stream(config, messages or [USER], TOOLS)]

    return asyncio.run(collect())


def test_it_streams_like_the_endpoint() -> None:
    model = ScriptedModel(reply("Let me see", [call("send_message", message="Hi Alice!")]))
    *deltas, completion = chunks_of(model)

    assert deltas[:3] == [TextDelta("Let "), TextDelta("me s"), TextDelta("ee")]
    assert deltas[3] == ToolCallDelta(0, "send_message", "")
    pieces = deltas[4:]
    assert all(isinstance(p, ToolCallDelta) and p.name is None for p in pieces)
    stream = MessageStream()  # what a loop would show while the model writes
    assert "".join(stream.feed(p.arguments) for p in pieces) == "Hi Alice!"
    assert isinstance(completion, Completion) and completion.streamed
    assert completion.content == "Let me see" and completion.tool_choice == "required"
    assert completion.tool_calls[0].sent_message() == "Hi Alice!"
    assert completion.usage.requests == 1


def test_the_same_script_gives_the_same_answer_as_the_fake_server(fake_llm) -> None:
    script = reply("hm \ud800", [call("functions.send_message", message="é😀"), call("f", q=1)])
    fake_llm.enqueue(script)
    endpoint = OpenAIChatModel(CONFIG, base_url=fake_llm.base_url, api_key=fake_llm.api_key)
    over_http = chunks_of(endpoint)
    in_process = chunks_of(ScriptedModel(script))
    assert in_process[:-1] == over_http[:-1]  # the same deltas
    http_completion, fake_completion = over_http[-1], in_process[-1]
    assert fake_completion.content == http_completion.content == "hm \ufffd"
    assert fake_completion.tool_calls == http_completion.tool_calls
    assert fake_completion.streamed == http_completion.streamed


def test_without_streaming_the_completion_comes_alone() -> None:
    model = ScriptedModel(reply("whole"), reply("whole"))
    (completion,) = chunks_of(model, config=CONFIG.model_copy(update={"stream": False}))
    assert completion.content == "whole" and not completion.streamed
    cannot = ScriptedModel(reply("whole"), streaming=False)
    (completion,) = chunks_of(cannot)
    assert not completion.streamed  # as from a server that cannot stream


def test_requests_are_recorded_as_sent() -> None:
    model = ScriptedModel(say("one"), say("two"), piece_chars=1)
    messages = [USER]
    chunks_of(model, messages)
    messages.append({"role": "user", "content": "later"})  # does not change the record
    chunks_of(model, messages)
    first, second = model.requests
    assert first.messages == [USER] and second.messages == messages
    assert first.tools == TOOLS and first.config == CONFIG
    assert model.pending() == 0 and model.rejections == []


def test_running_out_is_a_clear_failure() -> None:
    model = ScriptedModel(say("only one"))
    chunks_of(model)
    with pytest.raises(
        ScriptExhausted, match=r"no reply left for request 2 \(its last message: 'hi'\)"
    ):
        chunks_of(model)
    assert not isinstance(ScriptExhausted("x"), LLMError)


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        (
            [
                USER,
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                },
            ],
            "The following tool_call_ids did not have response messages: c1",
        ),
        (
            [USER, {"role": "tool", "tool_call_id": "c9", "content": "x"}],
            "messages with role 'tool' must be a response to a preceeding message",
        ),
        ([{"role": "robot", "content": "x"}], "Invalid value: 'robot'"),
        ([{"role": "user", "content": float("nan")}], "not valid JSON"),
        ([{"role": "user", "content": "lone \ud800"}], "not valid JSON"),
        ([{"role": "user", "content": object()}], "not valid JSON"),
    ],
    ids=["unanswered-call", "orphan-result", "role", "nan", "surrogate", "object"],
)
def test_invalid_requests_fail_loudly(messages: list[Any], problem: str) -> None:
    model = ScriptedModel(say("never"))
    with pytest.raises(InvalidRequest) as caught:
        chunks_of(model, messages)
    assert problem in str(caught.value) and problem in model.rejections[0]
    assert isinstance(caught.value, AssertionError) and not isinstance(caught.value, LLMError)
    assert model.pending() == 1 and model.requests == []


def test_errors_are_raised_as_the_endpoint_would() -> None:
    too_long = error(400, "Request too long.", code="context_length_exceeded")
    mine = LLMError("a failure of my own")
    model = ScriptedModel(error(500, "boom"), too_long, mine, ContextWindowExceeded("full"))
    with pytest.raises(LLMError, match=r"^the fake model answered 500: boom$"):
        chunks_of(model)
    with pytest.raises(ContextWindowExceeded, match="refused the request as too long"):
        chunks_of(model)
    with pytest.raises(LLMError) as caught:
        chunks_of(model)
    assert caught.value is mine
    with pytest.raises(ContextWindowExceeded, match="^full$"):
        chunks_of(model)


def test_a_context_window_is_enforced_like_the_server() -> None:
    model = ScriptedModel(say("fits"), say("unused"), context_window=120)
    chunks_of(model)
    with pytest.raises(ContextWindowExceeded, match="maximum context length is 120 tokens"):
        chunks_of(model, [{"role": "user", "content": "word " * 200}])


def test_a_function_model_answers_from_the_request() -> None:
    def echo(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        assert tools == TOOLS
        return say(f"you said {messages[-1]['content']}")

    model = FunctionModel(echo, name="the echo model")
    completion = asyncio.run(complete(model, CONFIG, [USER], TOOLS))
    assert completion.tool_calls[0].sent_message() == "you said hi"
    assert model.name == "the echo model" and isinstance(model, Model)


def test_what_only_the_server_can_play_is_refused() -> None:
    with pytest.raises(ValueError, match="needs the FakeOpenAIServer"):
        ScriptedModel(drop())
    with pytest.raises(ValueError, match="needs the FakeOpenAIServer"):
        chunks_of(FunctionModel(lambda messages, tools: hang()))
    with pytest.raises(ValueError, match="piece_chars"):
        ScriptedModel(piece_chars=0)


def test_tool_choice_fallback_and_close() -> None:
    model = ScriptedModel(say("x"), say("y"), reject_required_tool_choice=True)
    assert chunks_of(model)[-1].tool_choice == "auto"
    model.close()
    with pytest.raises(AssertionError, match="used after close"):
        chunks_of(model)


def test_arguments_pieces_add_up_for_any_piece_size() -> None:
    arguments = {"message": 'a\nb "c" 😀', "request_heartbeat": True}
    for size in (1, 2, 3, 7, 100):
        model = ScriptedModel(
            reply(tool_calls=[call("send_message", **arguments)]), piece_chars=size
        )
        *deltas, completion = chunks_of(model)
        assert "".join(d.arguments for d in deltas) == json.dumps(arguments)
        assert all(len(d.arguments) <= size for d in deltas)
        assert json.loads(completion.tool_calls[0].arguments) == arguments
