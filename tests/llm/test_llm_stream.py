"""OpenAIChatModel against the fake server: streamed answers (deltas as they
arrive, then one Completion), tolerant reading of what servers stream,
answers that break off, and the fallbacks for servers that cannot stream."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Coroutine
from contextlib import aclosing
from typing import Any

import pytest

from memgpt_lite import LLMError
from memgpt_lite.llm import runner
from memgpt_lite.llm.answer import merge_deltas
from memgpt_lite.llm.model import Completion, Model, TextDelta, ToolCallDelta
from memgpt_lite.llm.openai_chat import ContextWindowExceeded, LLMClient, OpenAIChatModel
from memgpt_lite.models import LLMConfig
from memgpt_lite.testing import (
    FakeOpenAIServer,
    call,
    cut,
    drip,
    drop,
    error,
    raw,
    reply,
    say,
)

MESSAGES = [{"role": "user", "content": "hi"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "send_message",
            "parameters": {"type": "object", "properties": {"message": {"type": "string"}}},
        },
    }
]


def model_for(server: FakeOpenAIServer, timeout: float = 10) -> OpenAIChatModel:
    return OpenAIChatModel(
        LLMConfig(model="gpt-4o-mini"),
        base_url=server.base_url,
        api_key=server.api_key,
        timeout=timeout,
    )


def config(**options: Any) -> LLMConfig:
    return LLMConfig(model="gpt-4o-mini", **({"max_retries": 2} | options))


# The two ways an answer is read: on an event loop shared with other tasks
# (astep), and on a thread's own loop, whose HTTP blocks (step; blocking_io.py).
DRIVERS = {"event loop": asyncio.run, "blocking": runner.run}


@pytest.fixture(params=list(DRIVERS))
def drive(request: pytest.FixtureRequest) -> Callable[[Coroutine[Any, Any, Any]], Any]:
    return DRIVERS[request.param]


def answer(
    model: OpenAIChatModel, tools: list[Any] = TOOLS, drive: Any = asyncio.run, **options: Any
) -> list[Any]:
    """Every chunk of one answer."""

    async def collect() -> list[Any]:
        return [chunk async for chunk in model.stream(config(**options), MESSAGES, tools)]

    return drive(collect())


def failure(
    model: OpenAIChatModel, drive: Any = asyncio.run, **options: Any
) -> tuple[str, list[Any]]:
    """The error line of an answer that fails, and the chunks yielded before it."""
    chunks: list[Any] = []

    async def collect() -> None:
        async for chunk in model.stream(config(**options), MESSAGES, TOOLS):
            chunks.append(chunk)

    with pytest.raises(LLMError) as caught:
        drive(collect())
    return str(caught.value), chunks


def sse(*events: Any, done: bool = True, newline: str = "\n\n") -> str:
    """A raw server-sent events body from chunk objects (or raw data lines)."""
    lines = [e if isinstance(e, str) else f"data: {json.dumps(e)}" for e in events]
    return newline.join([*lines, *(["data: [DONE]"] if done else [])]) + newline


def delta(value: dict[str, Any], finish: str | None = None, index: int = 0) -> dict[str, Any]:
    return {"choices": [{"index": index, "delta": value, "finish_reason": finish}]}


def test_deltas_as_they_come_then_one_completion(fake_llm, drive):
    fake_llm.enqueue(reply("Thinking it over", [call("send_message", message="Hello there")]))
    chunks = answer(model_for(fake_llm), drive=drive)

    *deltas, completion = chunks
    assert isinstance(completion, Completion) and completion.streamed
    assert not any(isinstance(c, Completion) for c in deltas)
    texts = [d.text for d in deltas if isinstance(d, TextDelta)]
    assert len(texts) > 1 and "".join(texts) == "Thinking it over" == completion.content
    pieces = [d for d in deltas if isinstance(d, ToolCallDelta)]
    assert pieces[0].name == "send_message" and all(p.name is None for p in pieces[1:])
    assert {p.index for p in pieces} == {0}
    (tool_call,) = completion.tool_calls
    assert "".join(p.arguments for p in pieces) == tool_call.arguments
    assert json.loads(tool_call.arguments) == {"message": "Hello there"}
    server_usage = fake_llm.requests[0]
    assert completion.usage.requests == 1 and completion.usage.prompt_tokens > 0
    assert completion.usage.total_tokens == (
        completion.usage.prompt_tokens + completion.usage.completion_tokens
    )
    assert server_usage.streamed
    sent = fake_llm.chat_requests[0]
    assert (sent["stream"], sent["stream_options"]) == (True, {"include_usage": True})
    assert fake_llm.rejections == []


def test_the_first_words_come_before_the_rest_is_written(fake_llm):
    """The server sends the first words and then nothing: they reach the
    caller anyway (nothing waits for the end of the answer), and leaving
    early closes the connection."""
    fake_llm.enqueue(cut(reply("Hello world, and then a long pause"), after=2, hang=True))
    model = model_for(fake_llm, timeout=30)

    async def first_text() -> str:
        async with aclosing(model.stream(config(), MESSAGES, TOOLS)) as chunks:
            async for chunk in chunks:
                if isinstance(chunk, TextDelta):
                    return chunk.text
        return ""

    assert asyncio.run(first_text()) == "Hell"
    for _ in range(500):  # a bound for a stuck test, not a timing claim
        if fake_llm.hanging == 0:
            break
        time.sleep(0.01)
    assert fake_llm.hanging == 0


def test_the_request_goes_out_with_the_clients_headers(fake_llm, drive):
    fake_llm.enqueue(say("x"))
    answer(model_for(fake_llm), drive=drive, temperature=0.5)
    (record,) = fake_llm.requests
    assert record.headers["authorization"] == f"Bearer {fake_llm.api_key}"
    assert record.headers["content-type"] == "application/json"
    assert record.headers["user-agent"].startswith("AsyncOpenAI/Python")
    assert record.body["temperature"] == 0.5 and record.body["tool_choice"] == "required"


def test_pieces_of_several_calls_are_put_together_by_index(fake_llm):
    """Calls interleaved, an id missing or repeated, a prefixed name, arguments
    as an object, content as parts, comments, event fields, CRLF lines,
    no space after "data:", usage in the last chunk with choices."""
    body = sse(
        ": keep-alive comment",
        "event: message",
        delta({"role": "assistant", "content": [{"type": "text", "text": "A"}]}),
        'data:{"choices": [{"delta": {"content": "B"}}]}',
        delta({"tool_calls": [{"index": 0, "id": "same", "function": {"name": "functions.f"}}]}),
        delta(
            {"tool_calls": [{"index": 3, "id": "same", "function": {"name": "g", "arguments": ""}}]}
        ),
        delta({"tool_calls": [{"index": 0, "function": {"arguments": '{"a": '}}]}),
        delta({"tool_calls": [{"index": 3, "function": {"arguments": {"b": 2}}}]}),
        delta({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "1}"}}]}),
        delta({"tool_calls": [{"index": 5, "function": {"name": "no id", "arguments": "{}"}}]}),
        delta({}, "tool_calls") | {"usage": {"prompt_tokens": 7, "total_tokens": 9}},
        newline="\r\n\r\n",
    )
    fake_llm.enqueue(raw(body, content_type="text/event-stream"))
    *deltas, completion = answer(model_for(fake_llm))

    # The body came in one piece, so its run of text pieces comes as one delta;
    # the calls' pieces alternate, so each stays its own.
    assert [d.text for d in deltas if isinstance(d, TextDelta)] == ["AB"]
    calls = [(d.index, d.name, d.arguments) for d in deltas if isinstance(d, ToolCallDelta)]
    assert calls == [
        (0, "f", ""),
        (1, "g", ""),
        (0, None, '{"a": '),
        (1, None, '{"b": 2}'),
        (0, None, "1}"),
        (2, "no_id", "{}"),
    ]
    assert completion.content == "AB" and completion.streamed
    first, second, third = completion.tool_calls
    assert (first.id, first.name, first.arguments) == ("same", "f", '{"a": 1}')
    assert second.name == "g" and second.id not in ("same", "") and second.arguments == '{"b": 2}'
    assert third.name == "no_id" and len({first.id, second.id, third.id}) == 3
    assert (completion.usage.prompt_tokens, completion.usage.total_tokens) == (7, 9)


def test_events_without_blank_lines_and_pieces_without_index(fake_llm):
    body = sse(
        delta({"content": "x"}),
        delta({"tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{"}}]}),
        delta({"tool_calls": [{"function": {"arguments": "}"}}]}),
        delta({"tool_calls": [{"id": "c2", "function": {"name": "h", "arguments": "{}"}}]}),
        delta({}, "stop"),
        newline="\n",
    )
    fake_llm.enqueue(raw(body, content_type="text/event-stream"))
    completion = answer(model_for(fake_llm))[-1]
    assert completion.content == "x"
    assert [(c.id, c.name, c.arguments) for c in completion.tool_calls] == [
        ("c1", "f", "{}"),
        ("c2", "h", "{}"),
    ]


def test_lone_surrogates_in_a_stream_are_made_valid(fake_llm):
    body = sse(
        'data: {"choices": [{"delta": {"content": "bad \\ud800"}}]}',
        delta({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f"}}]}),
        'data: {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": '
        '{"arguments": "{\\"m\\": \\"\\udc00\\"}"}}]}}]}',
        delta({}, "stop"),
    )
    fake_llm.enqueue(raw(body, content_type="text/event-stream"))
    *deltas, completion = answer(model_for(fake_llm))
    assert deltas[0] == TextDelta("bad \ufffd") and completion.content == "bad \ufffd"
    assert completion.tool_calls[0].arguments == '{"m": "\ufffd"}'


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (sse("data: {not json", done=False), "sent a chunk that is not valid JSON"),
        (sse("data: [1, 2]", done=False), "sent a chunk that is a list, not an object"),
        (sse(delta({"content": 5})), "answered a message whose content is a number"),
        (sse(delta({"tool_calls": "f"})), "sent a chunk whose tool_calls is a string"),
        (sse({"choices": "x"}), "sent a chunk whose choices is a string"),
        (sse({"error": {"message": "model\ncrashed"}}), "answered an error: model crashed"),
        (sse(delta({"content": "x"}), done=False), "the stream ended without [DONE]"),
        ("<html><title>Oops</title></html>\n", "no data in the stream: an HTML page titled"),
    ],
    ids=["bad-json", "list", "content", "tool-calls", "choices", "error", "no-end", "html"],
)
def test_bad_streams_are_one_clear_line(fake_llm, body, problem):
    fake_llm.enqueue(raw(body, content_type="text/event-stream"))
    message, _ = failure(model_for(fake_llm), max_retries=0)
    assert message.startswith(f"the model endpoint {fake_llm.base_url} ")
    assert problem in message and "\n" not in message and len(message) < 400


def test_a_context_error_in_the_stream_is_recognised(fake_llm):
    body = sse({"error": {"message": "the request exceeds the available context size"}})
    fake_llm.enqueue(raw(body, content_type="text/event-stream"))
    with pytest.raises(ContextWindowExceeded, match="refused the request as too long"):
        answer(model_for(fake_llm))


def test_a_stream_without_done_but_finished_is_whole(fake_llm):
    fake_llm.enqueue(raw(sse(delta({"content": "ok"}), delta({}, "stop"), done=False)))
    completion = answer(model_for(fake_llm))[-1]
    assert completion.content == "ok" and completion.streamed  # SSE under a JSON type, too


def test_an_answer_that_breaks_off_after_deltas_is_not_repeated(fake_llm):
    fake_llm.enqueue(cut(reply("Hello world, and more"), after=3), say("never asked for"))
    message, chunks = failure(model_for(fake_llm))
    assert message == (
        f"the model endpoint {fake_llm.base_url} stopped mid-answer: the answer broke off "
        "after 3 chunks (the connection was closed)"
    )
    assert chunks == [TextDelta("Hell"), TextDelta("o wo")]
    assert len(fake_llm.requests) == 1 and fake_llm.pending() == 1


def test_an_answer_that_breaks_off_before_any_delta_is_retried(fake_llm):
    fake_llm.enqueue(cut(reply("lost"), after=1), say("second try"))
    *_, completion = answer(model_for(fake_llm))
    assert completion.tool_calls[0].sent_message() == "second try"
    assert len(fake_llm.requests) == 2

    fake_llm.enqueue(*[cut(reply("lost"), after=1)] * 2)
    message, chunks = failure(model_for(fake_llm), max_retries=1)
    assert message.endswith(
        "the answer broke off after 1 chunk (the connection was closed) (2 attempts)"
    )
    assert chunks == []


@pytest.mark.parametrize(
    "first", [error(429, "slow", headers={"retry-after-ms": "1"}), error(503, "busy"), drop()]
)
def test_failures_before_the_stream_are_retried(fake_llm, first):
    fake_llm.enqueue(first, reply("fine"))
    completion = answer(model_for(fake_llm))[-1]
    assert completion.content == "fine" and completion.streamed


@pytest.mark.alone  # Its first chunks must arrive within the 0.5 s limit.
def test_a_hang_mid_stream_ends_at_the_limit(fake_llm, drive):
    fake_llm.enqueue(cut(reply("Hello world"), after=2, hang=True))
    message, chunks = failure(model_for(fake_llm, timeout=0.5), drive=drive)
    assert message == (
        f"the model endpoint {fake_llm.base_url} did not answer within 0.5 s (1 attempt); a slow "
        "model may need a longer limit (--timeout, timeout=, or timeout in config.toml)"
    )
    assert chunks == [TextDelta("Hell")]


@pytest.mark.alone  # Its first chunks must arrive within the 0.5 s limit.
def test_a_drip_of_a_stream_ends_at_the_limit(fake_llm, drive):
    fake_llm.stream_piece_chars = 1
    fake_llm.enqueue(drip(reply("x" * 200), interval=0.01, chunk=40))
    message, chunks = failure(model_for(fake_llm, timeout=0.5), drive=drive)
    assert "did not answer within 0.5 s" in message
    assert chunks and all(isinstance(c, TextDelta) for c in chunks)  # some came in time


def test_a_server_that_refuses_streaming_is_asked_again_without(fake_llm):
    fake_llm.streaming = "refuse"
    fake_llm.enqueue(say("plain"))
    chunks = answer(model_for(fake_llm))
    (completion,) = chunks  # no deltas: the completion alone
    assert not completion.streamed and completion.tool_calls[0].sent_message() == "plain"
    (refused,) = fake_llm.rejections
    assert refused.body["stream"] is True
    assert "stream" not in fake_llm.chat_requests[0]
    assert "stream_options" not in fake_llm.chat_requests[0]


def test_a_server_that_ignores_streaming_is_read_whole(fake_llm):
    fake_llm.streaming = "ignore"
    fake_llm.enqueue(say("plain"))
    (completion,) = answer(model_for(fake_llm))
    assert not completion.streamed and completion.tool_calls[0].sent_message() == "plain"
    assert len(fake_llm.requests) == 1 and fake_llm.rejections == []


def test_without_streaming_the_request_is_plain(fake_llm):
    fake_llm.enqueue(reply("whole"))
    (completion,) = answer(model_for(fake_llm), stream=False)
    assert completion.content == "whole" and not completion.streamed
    assert "stream" not in fake_llm.chat_requests[0]


def test_an_sse_answer_to_a_plain_request_is_read(fake_llm):
    """Some servers stream whatever they are asked."""
    fake_llm.enqueue(
        raw(sse(delta({"content": "ok"}), delta({}, "stop")), content_type="text/event-stream")
    )
    *deltas, completion = answer(model_for(fake_llm), stream=False)
    assert deltas == [TextDelta("ok")] and completion.streamed


def test_both_fallbacks_at_once():
    with FakeOpenAIServer(reject_required_tool_choice=True, streaming="refuse") as server:
        server.enqueue(say("at last"))
        (completion,) = answer(model_for(server))
        assert (completion.tool_choice, completion.streamed) == ("auto", False)
        assert len(server.rejections) == 2 and len(server.requests) == 3
        assert server.chat_requests[0]["tool_choice"] == "auto"


def test_tool_choice_falls_back_while_streaming():
    with FakeOpenAIServer(reject_required_tool_choice=True) as server:
        server.enqueue(say("streamed"))
        *deltas, completion = answer(model_for(server))
        assert (completion.tool_choice, completion.streamed) == ("auto", True) and deltas


def test_an_upstream_error_is_not_taken_for_a_streaming_refusal(fake_llm):
    fake_llm.enqueue(error(400, "upstream model failed"), say("not asked"))
    message, _ = failure(model_for(fake_llm))
    assert message.endswith("answered 400: upstream model failed")
    assert fake_llm.pending() == 1


def test_the_model_is_a_model_and_llmclient_is_its_old_name(fake_llm):
    model = model_for(fake_llm)
    assert isinstance(model, Model) and LLMClient is OpenAIChatModel
    assert model.name == f"the model endpoint {fake_llm.base_url}"
    fake_llm.enqueue(reply("sync"), reply("async"))
    assert model.complete(config(), MESSAGES, []).content == "sync"
    assert asyncio.run(model.acomplete(config(), MESSAGES, [])).content == "async"
    assert model.seconds_in_calls > 0
    model.close()


def test_pieces_read_together_are_passed_on_as_one():
    deltas = [TextDelta("Hel"), TextDelta("lo"), ToolCallDelta(0, "f", "")]
    deltas += [ToolCallDelta(0, None, '{"a"'), ToolCallDelta(0, None, ": 1}")]
    deltas += [ToolCallDelta(1, "g", "{"), ToolCallDelta(1, None, "}"), TextDelta("!")]
    assert merge_deltas(deltas) == [
        TextDelta("Hello"),
        ToolCallDelta(0, "f", '{"a": 1}'),
        ToolCallDelta(1, "g", "{}"),
        TextDelta("!"),
    ]
    assert merge_deltas([TextDelta("x")]) == [TextDelta("x")] and merge_deltas([]) == []
