"""The fake server's streamed answers, read by the real openai client and by
plain HTTP: OpenAI's chunk shapes, pieces and when they were written, servers
that cannot stream, and the misbehaviours with streaming requests."""

from __future__ import annotations

import json
import socket
from typing import Any

import openai
import pytest

from memgpt_lite.testing import (
    FakeOpenAIServer,
    call,
    cut,
    drip,
    drop,
    error,
    hang,
    reply,
    say,
)

MODEL = "gpt-4o-mini"
USER = {"role": "user", "content": "hello"}
TOOL = {
    "type": "function",
    "function": {
        "name": "send_message",
        "parameters": {"type": "object", "properties": {"message": {"type": "string"}}},
    },
}


def client_for(server: FakeOpenAIServer, **kwargs: Any) -> openai.OpenAI:
    kwargs.setdefault("max_retries", 0)
    return openai.OpenAI(base_url=server.base_url, api_key=server.api_key, **kwargs)


def stream_chunks(server: FakeOpenAIServer, usage: bool = True, **kwargs: Any) -> list[Any]:
    options = {"stream_options": {"include_usage": True}} if usage else {}
    stream = client_for(server).chat.completions.create(
        model=MODEL,
        messages=[USER],  # type: ignore[list-item]
        stream=True,
        **options,
        **kwargs,
    )
    return list(stream)


def raw_post(server: FakeOpenAIServer, body: dict[str, Any]) -> bytes:
    """The whole HTTP answer to one request, bytes as sent."""
    port = int(server.base_url.split(":")[2][:-3])
    data = json.dumps(body).encode()
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}\r\n"
        f"Authorization: Bearer {server.api_key}\r\nConnection: close\r\n\r\n"
    ).encode() + data
    chunks = []
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request)
        while received := sock.recv(65536):
            chunks.append(received)
    return b"".join(chunks)


def test_a_streamed_reply_has_openais_chunks(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(
        reply("Let me answer.", [call("send_message", message="Hi there, you!")]),
    )
    chunks = stream_chunks(fake_llm, tools=[TOOL])

    *deltas, usage_chunk = chunks
    assert {c.id for c in chunks} == {chunks[0].id} and chunks[0].id.startswith("chatcmpl-")
    assert all(c.object == "chat.completion.chunk" and c.model == MODEL for c in chunks)
    first = deltas[0].choices[0].delta
    assert (first.role, first.content) == ("assistant", "")
    text = [c.choices[0].delta.content for c in deltas if c.choices[0].delta.content]
    assert text == ["Let ", "me a", "nswe", "r."]  # pieces of 4 characters by default
    pieces = [tc for c in deltas for tc in c.choices[0].delta.tool_calls or ()]
    opening, *rest = pieces
    assert (opening.index, opening.type, opening.function.name) == (0, "function", "send_message")
    assert opening.id.startswith("call_") and opening.function.arguments == ""
    assert all(p.index == 0 and p.id is None and p.function.name is None for p in rest)
    arguments = "".join(p.function.arguments for p in rest)
    assert json.loads(arguments) == {"message": "Hi there, you!"}
    assert all(len(p.function.arguments) <= 4 for p in rest)
    assert [c.choices[0].finish_reason for c in deltas][-1] == "tool_calls"
    assert all(c.choices[0].finish_reason is None for c in deltas[:-1])
    assert all(c.usage is None for c in deltas)
    assert usage_chunk.choices == []
    assert usage_chunk.usage.prompt_tokens > 0 and usage_chunk.usage.completion_tokens > 0
    (record,) = fake_llm.requests
    assert record.streamed and fake_llm.rejections == []


def test_usage_only_when_asked_and_the_piece_size_is_a_setting(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.stream_piece_chars = 1
    fake_llm.enqueue(reply("abc"))
    chunks = stream_chunks(fake_llm, usage=False)
    assert [c.choices[0].delta.content for c in chunks[1:-1]] == ["a", "b", "c"]
    assert all(c.choices for c in chunks)  # no usage chunk
    assert chunks[-1].choices[0].finish_reason == "stop"
    with pytest.raises(ValueError, match="stream_piece_chars must be an int >= 1"):
        fake_llm.stream_piece_chars = 0


def test_the_body_is_chunked_server_sent_events_ending_in_done(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(reply("hi"))
    answer = raw_post(fake_llm, {"model": MODEL, "messages": [USER], "stream": True})
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"Content-Type: text/event-stream" in head and b"Transfer-Encoding: chunked" in head
    assert b"Content-Length" not in head
    assert body.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n")
    events = [line for line in body.split(b"\r\n") if line.startswith(b"data: {")]
    assert [json.loads(e[6:])["choices"][0]["delta"].get("content") for e in events] == [
        "",
        "hi",
        None,
    ]


def test_each_piece_is_recorded_with_when_it_was_written(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(say("Hello!", content="Hm."))
    stream_chunks(fake_llm, tools=[TOOL])
    (record,) = fake_llm.requests
    assert [(p.index, p.text) for p in record.pieces] == [
        (None, "Hm."),
        (0, '{"me'),
        (0, "ssag"),
        (0, 'e": '),
        (0, '"Hel'),
        (0, 'lo!"'),
        (0, "}"),
    ]
    times = [p.at for p in record.pieces]
    assert times == sorted(times)
    assert record.first_content_at == times[0]
    fake_llm.enqueue(say("no text"))
    stream_chunks(fake_llm, tools=[TOOL])
    assert fake_llm.requests[1].first_content_at is None  # the reply has no content


def test_a_server_that_refuses_to_stream(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.streaming = "refuse"
    fake_llm.enqueue(reply("plain"))
    with pytest.raises(openai.BadRequestError, match="Unknown parameter: 'stream'."):
        stream_chunks(fake_llm)
    assert len(fake_llm.rejections) == 1 and fake_llm.pending() == 1
    result = client_for(fake_llm).chat.completions.create(model=MODEL, messages=[USER])  # type: ignore[list-item]
    assert result.choices[0].message.content == "plain"


def test_a_server_that_ignores_stream_answers_plain_json(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.streaming = "ignore"
    fake_llm.enqueue(reply("whole"))
    answer = raw_post(
        fake_llm,
        {
            "model": MODEL,
            "messages": [USER],
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    )
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"Content-Type: application/json" in head
    assert json.loads(body)["choices"][0]["message"]["content"] == "whole"
    assert not fake_llm.requests[0].streamed and fake_llm.rejections == []
    with pytest.raises(ValueError, match='streaming must be True, "refuse" or "ignore"'):
        fake_llm.streaming = False  # type: ignore[assignment]


def test_errors_drops_and_hangs_answer_streaming_requests_too(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(error(429, "slow down"), drop(), hang())
    with pytest.raises(openai.RateLimitError, match="slow down"):
        stream_chunks(fake_llm)
    with pytest.raises(openai.APIConnectionError):
        stream_chunks(fake_llm)
    client = client_for(fake_llm, timeout=0.2)
    with pytest.raises(openai.APITimeoutError):
        client.chat.completions.create(model=MODEL, messages=[USER], stream=True)  # type: ignore[list-item]
    assert [r.status for r in fake_llm.requests] == [429, 0, 0]


def test_a_drip_of_a_stream_splits_even_the_events(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(drip(reply("slowly"), interval=0.001, chunk=7))
    chunks = stream_chunks(fake_llm)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "slowly"


@pytest.mark.parametrize("after", [0, 1, 3])
def test_a_cut_stream_breaks_off_after_its_first_events(
    fake_llm: FakeOpenAIServer, after: int
) -> None:
    fake_llm.enqueue(cut(reply("Hello world, and more"), after=after))
    answer = raw_post(fake_llm, {"model": MODEL, "messages": [USER], "stream": True})
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert body.count(b"data: ") == after and b"[DONE]" not in body
    assert len(fake_llm.requests[0].pieces) == max(0, after - 1)  # the first event has no text


def test_a_cut_plain_answer_sends_half_its_body(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(cut(reply("Hello world")))
    answer = raw_post(fake_llm, {"model": MODEL, "messages": [USER]})
    head, _, body = answer.partition(b"\r\n\r\n")
    length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
    assert len(body) == length // 2


@pytest.mark.alone  # Both events must arrive within the client's 0.3 s timeout.
def test_a_cut_may_hang_instead(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(cut(reply("Hello world"), after=2, hang=True))
    client = client_for(fake_llm, timeout=0.3)
    received = []
    with pytest.raises(openai.APITimeoutError):
        for chunk in client.chat.completions.create(model=MODEL, messages=[USER], stream=True):  # type: ignore[list-item]
            received.append(chunk.choices[0].delta.content)
    assert received == ["", "Hell"]


@pytest.mark.parametrize(
    "item",
    [
        cut(error(500, "x")),  # type: ignore[arg-type]
        cut(reply("x"), after=-1),
        cut(reply("x"), after=True),
        cut(reply("x"), hang="yes"),  # type: ignore[arg-type]
    ],
)
def test_cuts_are_checked_at_enqueue(fake_llm: FakeOpenAIServer, item: Any) -> None:
    with pytest.raises(ValueError):
        fake_llm.enqueue(item)
    with pytest.raises(ValueError, match="not reply"):
        fake_llm.enqueue_embeddings(cut(reply("x")))
