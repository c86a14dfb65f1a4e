"""The endpoint: retries, clear errors, the tool_choice fallback, and that a
failed call loses nothing."""

from __future__ import annotations

import pytest
from openai.types.chat import ChatCompletion

from memgpt_lite import Agent, ConfigError, LLMError
from memgpt_lite.llm import ContextWindowExceeded, _completion_from
from memgpt_lite.testing import FakeOpenAIServer, call, drop, error, reply, say


def make_agent(tmp_path, **llm_options) -> Agent:
    options = {"max_retries": 2, "timeout_seconds": 5.0} | llm_options
    return Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db", llm_options=options)


@pytest.mark.parametrize(
    "failure",
    [
        error(429, "Rate limit reached", headers={"Retry-After": "0"}),
        error(500, "The server had an error"),
        error(503, "Overloaded", headers={"retry-after-ms": "10"}),
        drop(),
    ],
    ids=["429-retry-after", "500", "503", "dropped-connection"],
)
def test_transient_failures_are_retried(fake_llm, tmp_path, failure):
    agent = make_agent(tmp_path)
    fake_llm.enqueue(failure, say("made it"))
    assert agent.step("hi").replies == ["made it"]
    assert fake_llm.pending() == 0


def test_timeout_is_retried(fake_llm, tmp_path):
    agent = make_agent(tmp_path, timeout_seconds=0.3)
    fake_llm.enqueue(
        reply(tool_calls=[call("send_message", message="late")], delay=1.0), say("on time")
    )
    assert agent.step("hi").replies == ["on time"]


def test_retries_run_out_with_a_clear_error_and_the_message_is_kept(fake_llm, tmp_path):
    agent = make_agent(tmp_path, max_retries=1)
    fake_llm.enqueue(error(500, "boom"), error(500, "boom again"))
    with pytest.raises(LLMError, match="answered 500: boom again"):
        agent.step("please remember this message")
    # Stored before the call: nothing the user typed is lost.
    stored = agent.context_messages()
    assert [(m.role, m.content) for m in stored] == [("user", "please remember this message")]
    # And the agent carries on from there.
    fake_llm.enqueue(say("back"))
    assert agent.step("hello again").replies == ["back"]
    assert fake_llm.rejections == []


def test_bad_request_is_not_retried(fake_llm, tmp_path):
    agent = make_agent(tmp_path)
    fake_llm.enqueue(error(400, "Invalid model"), say("never sent"))
    with pytest.raises(LLMError, match="answered 400: Invalid model"):
        agent.step("hi")
    assert fake_llm.pending() == 1


def test_context_length_error_is_recognised_and_retries_are_bounded(fake_llm, tmp_path):
    agent = make_agent(tmp_path)
    too_long = error(400, "Request too long for this model.", code="context_length_exceeded")
    fake_llm.enqueue(*[too_long] * 4)
    with pytest.raises(ContextWindowExceeded):
        agent.step("hi")
    assert fake_llm.pending() == 0  # the first try and three retries, no more


def test_unreachable_endpoint_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    agent = Agent.create(
        "sam",
        "gpt-4o-mini",
        db=tmp_path / "a.db",
        base_url="http://127.0.0.1:9/v1",
        llm_options={"max_retries": 0},
    )
    with pytest.raises(LLMError, match=r"cannot reach the model endpoint http://127.0.0.1:9/v1"):
        agent.step("hi")


def test_missing_api_key_for_openai_is_a_config_error(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL")
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db")
    with pytest.raises(ConfigError, match="no API key: set OPENAI_API_KEY"):
        agent.step("hi")
    # A config error happens before anything is stored.
    assert agent.context_messages() == []


def test_local_server_needs_no_key(tmp_path, monkeypatch):
    with FakeOpenAIServer(api_key="not-needed") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        agent = Agent.create("sam", "llama3.2", db=tmp_path / "a.db")
        server.enqueue(say("local"))
        assert agent.step("hi").replies == ["local"]


def test_wrong_key_is_reported(fake_llm, tmp_path):
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db", api_key="wrong")
    with pytest.raises(LLMError, match="refused the API key"):
        agent.step("hi")


def test_argument_beats_config_beats_env(tmp_path, monkeypatch):
    with FakeOpenAIServer() as right, FakeOpenAIServer() as wrong:
        monkeypatch.setenv("OPENAI_BASE_URL", wrong.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", right.api_key)
        Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db", base_url=right.base_url)
        right.enqueue(say("from config"))
        assert Agent.load("sam", db=tmp_path / "a.db").step("hi").replies == ["from config"]
        wrong.enqueue(say("from argument"))
        agent = Agent.load("sam", db=tmp_path / "a.db", base_url=wrong.base_url)
        assert agent.step("hi").replies == ["from argument"]


def test_required_tool_choice_falls_back_to_auto_and_remembers(tmp_path, monkeypatch):
    with FakeOpenAIServer(reject_required_tool_choice=True) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", server.api_key)
        agent = make_agent(tmp_path)
        server.enqueue(say("first"))
        assert agent.step("hi").replies == ["first"]
        assert len(server.rejections) == 1
        assert server.chat_requests[0]["tool_choice"] == "auto"
        # Persisted: a new process does not ask for "required" again.
        server.enqueue(say("second"))
        assert Agent.load("sam", db=tmp_path / "a.db").step("hi").replies == ["second"]
        assert len(server.rejections) == 1


def test_endpoint_quirks_in_tool_calls_are_survived(fake_llm, tmp_path):
    """Small servers prefix names with "functions.", invent names the API
    would refuse in the history, or repeat a call id."""
    agent = make_agent(tmp_path)
    fake_llm.enqueue(reply(tool_calls=[call("functions.send_message", message="prefixed")]))
    assert agent.step("hi").replies == ["prefixed"]

    fake_llm.enqueue(reply(tool_calls=[call("look up!", q="x")]), say("recovered"))
    result = agent.step("again")
    assert result.tool_results[0].call.name == "look_up_"
    assert "no tool named 'look_up_'" in result.tool_results[0].content
    assert result.replies == ["recovered"]

    assert fake_llm.rejections == []


def test_repeated_and_missing_call_ids_get_fresh_ids():
    """Some servers repeat a call id or send none; each call still needs its own."""
    response = ChatCompletion.model_validate(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "same",
                                "type": "function",
                                "function": {"name": "a", "arguments": "{}"},
                            },
                            {
                                "id": "same",
                                "type": "function",
                                "function": {"name": "b", "arguments": "{}"},
                            },
                            {
                                "id": "",
                                "type": "function",
                                "function": {"name": "c", "arguments": "{}"},
                            },
                        ],
                    },
                }
            ],
        }
    )
    ids = [c.id for c in _completion_from(response).tool_calls]
    assert ids[0] == "same" and len(set(ids)) == 3 and all(ids)
