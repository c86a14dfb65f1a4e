"""The OpenAI-compatible route, driven by the official `openai` client
against a live server: a reply, a stream, usage, errors in OpenAI's shape,
and the agent's own memory across calls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from support.serving import live_server, new_key

import memgpt_lite
from memgpt_lite.testing import FakeOpenAIServer
from memgpt_lite.testing.script import call, error, reply, say


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "server.db")


@pytest.fixture
def base(db: str, fake_llm: FakeOpenAIServer) -> Iterator[str]:
    memgpt_lite.Agent.create("sam", "fake-model", db=db, owner="alice")
    with live_server(db) as url:
        yield url


@pytest.fixture
def client(db: str, base: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base + "/v1", api_key=new_key(db, "alice"), max_retries=0)


def ask(client: openai.OpenAI, text: str, model: str = "sam") -> str | None:
    answer = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": text}]
    )
    return answer.choices[0].message.content


def test_a_reply_is_the_agents_send_message_with_usage(
    client: openai.OpenAI, fake_llm: FakeOpenAIServer
) -> None:
    fake_llm.enqueue(reply("greet", tool_calls=[call("send_message", message="Hi Alice!")]))
    answer = client.chat.completions.create(
        model="sam",
        messages=[
            {"role": "system", "content": "ignored: the agent has its own"},
            {"role": "user", "content": [{"type": "text", "text": "Hello, I'm Alice"}]},
        ],
        temperature=0.2,  # accepted, ignored
    )
    assert answer.choices[0].message.content == "Hi Alice!"
    assert answer.choices[0].message.role == "assistant"
    assert answer.choices[0].finish_reason == "stop"
    assert answer.id.startswith("chatcmpl-") and answer.object == "chat.completion"
    assert answer.model == "sam"
    assert answer.usage is not None and answer.usage.prompt_tokens > 0
    assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens
    sent = fake_llm.chat_requests[0]["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"][-1].endswith("Hello, I'm Alice")
    assert "ignored: the agent has its own" not in str(sent)


def test_several_replies_are_joined_by_a_blank_line_and_plain_text_is_the_reply(
    client: openai.OpenAI, fake_llm: FakeOpenAIServer
) -> None:
    fake_llm.enqueue(reply(tool_calls=[call("send_message", message=m) for m in ("1", "2")]))
    assert ask(client, "count") == "1\n\n2"
    fake_llm.enqueue(reply("Just text, no tools."))
    assert ask(client, "talk") == "Just text, no tools."


def stream_text(client: openai.OpenAI, text: str) -> tuple[list[str], list[object]]:
    chunks = list(
        client.chat.completions.create(
            model="sam",
            messages=[{"role": "user", "content": text}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    pieces = [c.choices[0].delta.content or "" for c in chunks if c.choices]
    return pieces, chunks


def test_a_stream_sends_the_reply_in_pieces_that_join_to_the_content(
    client: openai.OpenAI, fake_llm: FakeOpenAIServer
) -> None:
    long = 'A reply long enough to arrive in several pieces, "quoted"\nand on two lines.'
    fake_llm.enqueue(reply("thinking it over", tool_calls=[call("send_message", message=long)]))
    pieces, chunks = stream_text(client, "hi")
    assert "".join(pieces) == long  # no thought, nothing twice
    assert len([p for p in pieces if p]) > 3  # as the model wrote it, not at the end
    first, *_, stop, last = chunks
    assert first.choices[0].delta.role == "assistant"
    assert all(c.object == "chat.completion.chunk" and c.id == first.id for c in chunks)
    assert stop.choices[0].finish_reason == "stop"
    assert last.choices == [] and last.usage is not None and last.usage.prompt_tokens > 0
    assert all(c.usage is None for c in chunks[:-1])


def test_a_streamed_chain_and_a_plain_text_answer_equal_the_content(
    client: openai.OpenAI, fake_llm: FakeOpenAIServer
) -> None:
    note = call("core_memory_append", label="human", content="x", request_heartbeat=True)
    fake_llm.enqueue(
        reply(tool_calls=[call("send_message", message="  ")]),  # refused: empty
        reply(tool_calls=[call("send_message", message="First part."), note]),
        reply(tool_calls=[call("send_message", message="Second.", request_heartbeat=True)]),
        say("Second."),  # the same text again, once refused for its extra argument
    )
    assert "".join(stream_text(client, "go")[0]) == "First part.\n\nSecond."
    fake_llm.enqueue(reply("A plain answer, streamed as text."))
    assert "".join(stream_text(client, "again")[0]) == "A plain answer, streamed as text."


def test_two_replies_in_one_answer_stream_with_the_blank_line_between(
    client: openai.OpenAI, fake_llm: FakeOpenAIServer
) -> None:
    two = [
        call("send_message", message="One, long enough to come in pieces."),
        call("send_message", message="Two."),
    ]
    fake_llm.enqueue(reply(tool_calls=two))
    pieces = stream_text(client, "go")[0]
    assert "".join(pieces) == "One, long enough to come in pieces.\n\nTwo."
    fake_llm.enqueue(reply(tool_calls=two))
    assert ask(client, "go") == "One, long enough to come in pieces.\n\nTwo."


def test_the_agent_remembers_the_first_exchange_in_the_second(
    client: openai.OpenAI, fake_llm: FakeOpenAIServer
) -> None:
    fake_llm.enqueue(say("Noted, you keep bees."), say("Bees."))
    ask(client, "I keep bees")
    assert ask(client, "What do I keep?") == "Bees."
    second = str(fake_llm.chat_requests[1]["messages"])
    assert "I keep bees" in second and "Noted, you keep bees." in second


def test_an_unknown_agent_and_another_users_agent_are_not_found(
    db: str, client: openai.OpenAI, fake_llm: FakeOpenAIServer
) -> None:
    memgpt_lite.Agent.create("bob-agent", "fake-model", db=db, owner="bob")
    for model in ("nobody", "bob-agent"):
        with pytest.raises(openai.NotFoundError) as caught:
            ask(client, "hi", model=model)
        assert caught.value.status_code == 404
        assert model in caught.value.message and caught.value.code == "model_not_found"
    assert fake_llm.chat_requests == []


def test_no_key_or_a_wrong_key_is_401(base: str) -> None:
    wrong = openai.OpenAI(base_url=base + "/v1", api_key="not-a-key", max_retries=0)
    with pytest.raises(openai.AuthenticationError, match="unknown or revoked"):
        ask(wrong, "hi")
    answer = httpx.post(base + "/v1/chat/completions", json={"model": "sam", "messages": []})
    assert answer.status_code == 401
    assert "API key" in answer.json()["error"]["message"]


def test_no_user_message_or_a_bad_body_is_400_naming_the_field(
    client: openai.OpenAI, fake_llm: FakeOpenAIServer
) -> None:
    for messages in ([], [{"role": "system", "content": "x"}], [{"role": "user", "content": " "}]):
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(model="sam", messages=messages)  # type: ignore[arg-type]
        assert caught.value.param == "messages"
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="sam", messages=[{"content": "no role"}])  # type: ignore[list-item, misc]
    assert caught.value.param == "messages.0.role"
    assert fake_llm.chat_requests == []


def test_a_failing_model_endpoint_is_502_with_the_reason_streamed_or_not(
    client: openai.OpenAI, fake_llm: FakeOpenAIServer
) -> None:
    for stream in (False, True):
        fake_llm.enqueue(error(400, "the model is on strike"))
        with pytest.raises(openai.APIStatusError) as caught:
            client.chat.completions.create(
                model="sam", messages=[{"role": "user", "content": "hi"}], stream=stream
            )
        assert caught.value.status_code == 502
        assert "the model is on strike" in caught.value.message
    # After the reply's first text, the stream ends with the error, which the client raises.
    note = call("core_memory_append", label="human", content="x", request_heartbeat=True)
    fake_llm.enqueue(reply(tool_calls=[call("send_message", message="Hold on."), note]))
    fake_llm.enqueue(error(400, "the model is on strike"))
    with pytest.raises(openai.APIError, match="the model is on strike"):
        stream_text(client, "hi")


def test_models_lists_the_users_agents(db: str, client: openai.OpenAI) -> None:
    memgpt_lite.Agent.create("bob-agent", "fake-model", db=db, owner="bob")
    memgpt_lite.Agent.create("tom", "fake-model", db=db, owner="alice")
    assert sorted(m.id for m in client.models.list()) == ["sam", "tom"]
