"""The endpoint: retries, clear errors, the tool_choice fallback, and that a
failed call loses nothing."""

from __future__ import annotations

import pytest

from memgpt_lite import Agent, ConfigError, LLMError
from memgpt_lite.llm.openai_chat import ContextWindowExceeded, LLMClient, completion_from
from memgpt_lite.models import LLMConfig
from memgpt_lite.testing import FakeOpenAIServer, call, call_raw, drop, error, html, raw, reply, say


def make_agent(tmp_path, **llm_options) -> Agent:
    options = {"max_retries": 2, "timeout_seconds": 5.0} | llm_options
    return Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db", llm_options=options)


def assert_still_valid(agent: Agent, server: FakeOpenAIServer) -> None:
    """After a failure the stored agent is whole: its next request is valid."""
    server.enqueue(say("back"))
    assert agent.step("are you there?").replies == ["back"]
    assert server.rejections == []


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
        llm_options={"max_retries": 1},
    )
    with pytest.raises(LLMError) as caught:
        agent.step("hi")
    assert str(caught.value) == (
        "cannot reach the model endpoint http://127.0.0.1:9/v1: connection refused "
        "(is the server running, on this port?) (2 attempts)"
    )


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
    response = {
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
    ids = [c.id for c in completion_from(response, "the endpoint").tool_calls]
    assert ids[0] == "same" and len(set(ids)) == 3 and all(ids)


# ------------------------------------------------------- misbehaving endpoints


def test_html_page_says_so_and_which_url_shape_is_expected(fake_llm, tmp_path):
    agent = make_agent(tmp_path)
    fake_llm.enqueue(html())
    with pytest.raises(LLMError) as caught:
        agent.step("hi")
    assert str(caught.value) == (
        f"the model endpoint {fake_llm.base_url} answered with an HTML page titled 'Welcome', "
        "not JSON: check the port, and that the URL is the API's, usually ending in /v1 "
        "(like http://localhost:11434/v1)"
    )
    assert_still_valid(agent, fake_llm)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ('{"id": "chatcmpl-1", "object": "chat.completion", "choices": [', "answered invalid JSON"),
        (b"\x00\xff garbage", "answered invalid JSON"),
        ("", "answered 200 with an empty body, not JSON"),
        ("[1, 2]", "answered a list, not a chat completion"),
        ('{"object": "chat.completion"}', "answered a completion with no choices"),
        ('{"choices": []}', "answered a completion with no choices"),
        ('{"choices": [{"message": "hi"}]}', "first choice has no message"),
        ('{"choices": [{"message": {"content": 5}}]}', "content is a number, not text"),
        ('{"choices": [{"message": {"tool_calls": {}}}]}', "tool_calls is an object"),
        ('{"choices": [{"message": {"tool_calls": ["f"]}}]}', "a tool call that is a string"),
        ('{"error": {"message": "model crashed"}}', "answered an error: model crashed"),
        ("[" * 5000 + "]" * 5000, "answered invalid JSON (nested more than 64 levels deep)"),
    ],
    ids=[
        "truncated",
        "binary",
        "empty",
        "list",
        "no-choices",
        "empty-choices",
        "message-not-object",
        "content-number",
        "tool-calls-object",
        "tool-call-string",
        "error-in-200",
        "deep",
    ],
)
def test_bad_200_bodies_are_one_clear_line(fake_llm, tmp_path, body, problem):
    agent = make_agent(tmp_path)
    fake_llm.enqueue(raw(body))
    with pytest.raises(LLMError) as caught:
        agent.step("hi")
    message = str(caught.value)
    assert message.startswith(f"the model endpoint {fake_llm.base_url} ")
    assert problem in message and "\n" not in message and len(message) < 400
    assert_still_valid(agent, fake_llm)


def test_error_pages_from_a_proxy_are_summed_up(fake_llm, tmp_path):
    agent = make_agent(tmp_path, max_retries=0)
    fake_llm.enqueue(
        html("<html><title>502 Bad Gateway</title><body>nginx</body></html>", status=502)
    )
    with pytest.raises(LLMError, match=r"answered 502: an HTML page titled '502 Bad Gateway'$"):
        agent.step("hi")
    assert_still_valid(agent, fake_llm)


def test_404_from_a_url_without_v1_suggests_it(fake_llm, tmp_path):
    agent = Agent.create(
        "sam", "gpt-4o-mini", db=tmp_path / "a.db", base_url=fake_llm.base_url.removesuffix("/v1")
    )
    with pytest.raises(LLMError, match=r"usually ends in /v1, like http://localhost:11434/v1"):
        agent.step("hi")


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("localhost:11434/v1", "has no http:// or https://: write http://localhost:11434/v1"),
        ("127.0.0.1:8080/v1", "has no http:// or https://: write http://127.0.0.1:8080/v1"),
        ("http:/localhost/v1", "has no http:// or https://: write http://localhost/v1"),
        ("ftp://localhost/v1", "must start with http:// or https://, not ftp://"),
        ("http:///v1", "has no host name"),
        ("http://localhost:99999/v1", "is not a valid URL (Port out of range 0-65535)"),
        ("http://local host/v1", "contains spaces"),
    ],
)
def test_malformed_base_url_is_refused_before_any_request(fake_llm, tmp_path, url, problem):
    example = "" if "write http" in problem else " (for example http://localhost:11434/v1)"
    with pytest.raises(ConfigError) as caught:
        Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db", base_url=url)
    assert str(caught.value) == f"the base_url argument {url!r} {problem}{example}"
    # One stored by an earlier version is refused when the agent runs.
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db")

    def store_url(state):
        state.llm.base_url = url

    agent.state = agent.store.update_agent(agent.state.id, store_url)
    agent = Agent.load("sam", db=tmp_path / "a.db")
    with pytest.raises(ConfigError) as caught:
        agent.step("hi")
    assert str(caught.value) == f"the agent's stored base_url {url!r} {problem}{example}"
    assert agent.context_messages() == [] and fake_llm.requests == []


def test_malformed_url_names_where_it_came_from(fake_llm, tmp_path, monkeypatch):
    agent = make_agent(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:11434/v1")
    with pytest.raises(
        ConfigError, match=r"^\$OPENAI_BASE_URL 'localhost:11434/v1' has no http://"
    ):
        Agent.load("sam", db=tmp_path / "a.db").step("hi")
    with pytest.raises(ConfigError, match=r"^the base_url argument 'localhost' has no http://"):
        Agent.load("sam", db=tmp_path / "a.db", base_url="localhost").step("hi")
    assert agent.context_messages() == []


def test_dropped_connections_after_the_retries(fake_llm, tmp_path):
    agent = make_agent(tmp_path, max_retries=1)
    fake_llm.enqueue(drop(), drop())
    with pytest.raises(LLMError) as caught:
        agent.step("hi")
    assert str(caught.value) == (
        f"cannot reach the model endpoint {fake_llm.base_url}: the connection was closed "
        "without an answer (2 attempts)"
    )
    assert_still_valid(agent, fake_llm)


def test_empty_reply_is_a_completion_the_loop_can_tell(fake_llm):
    client = LLMClient(LLMConfig(model="gpt-4o-mini"), fake_llm.base_url, fake_llm.api_key)
    messages = [{"role": "user", "content": "hi"}]
    fake_llm.enqueue(reply(), reply("  \n"), reply("hello"), reply(tool_calls=[call("f")]))
    empty, blank, text, calls = (
        client.complete(LLMConfig(model="m"), messages, []) for _ in "1234"
    )
    assert (empty.content, empty.tool_calls, empty.is_empty) == (None, [], True)
    assert blank.is_empty and not text.is_empty and not calls.is_empty
    assert fake_llm.rejections == []


def test_model_output_is_made_valid(fake_llm):
    """Lone surrogates (JSON-escaped, as models send them) in the text, the
    arguments and the id; arguments sent as an object; content as parts."""
    client = LLMClient(LLMConfig(model="gpt-4o-mini"), fake_llm.base_url, fake_llm.api_key)
    messages = [{"role": "user", "content": "hi"}]
    fake_llm.enqueue(
        reply(
            "bad \ud800 text", [call_raw("send_message", '{"message": "x\\udc00"}', id="c\ud800")]
        )
    )
    completion = client.complete(LLMConfig(model="m"), messages, [])
    assert completion.content == "bad \ufffd text"
    (tool_call,) = completion.tool_calls
    assert tool_call.arguments == '{"message": "x\ufffd"}' and tool_call.id == "c\ufffd"
    fake_llm.enqueue(
        raw(
            '{"choices": [{"message": {"content": [{"type": "text", "text": "part"}], '
            '"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": {"q": 1}}}]}}]}'
        )
    )
    completion = client.complete(LLMConfig(model="m"), messages, [])
    assert completion.content == "part"
    assert completion.tool_calls[0].arguments == '{"q": 1}'
    assert completion.usage.requests == 1 and completion.usage.total_tokens == 0
