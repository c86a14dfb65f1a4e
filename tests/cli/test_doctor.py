"""`memgpt-lite doctor` and `memgpt-lite models`, run for real against the fake
OpenAI server: one line per check, what to fix, never a traceback."""

from __future__ import annotations

import pytest
from click.testing import CliRunner, Result

from memgpt_lite.cli.main import cli
from memgpt_lite.testing import FakeOpenAIServer, call, error, hang, html, raw, reply

CALL_REPLY = reply(tool_calls=[call("send_message", message="ok")])


def run(*args: str, db=None) -> Result:
    prefix = ["--db", str(db)] if db else []
    return CliRunner().invoke(cli, [*prefix, *args], catch_exceptions=False)


def lines_of(result: Result) -> dict[str, str]:
    """Each check's line, by the check's name: {"reachable": "ok    reachable: ..."}."""
    checks = {}
    for line in result.stdout.splitlines()[1:-1]:
        name = line[6:].split(":", 1)[0]
        checks[name] = line
    return checks


def status_of(result: Result) -> dict[str, str]:
    return {name: line.split()[0] for name, line in lines_of(result).items()}


@pytest.fixture
def answering(fake_llm: FakeOpenAIServer) -> FakeOpenAIServer:
    """The fake server, every chat request answered with a tool call."""
    fake_llm.responder = lambda body: CALL_REPLY
    return fake_llm


def test_all_good_for_an_agent_with_an_endpoint_embedder(answering, tmp_path):
    db = tmp_path / "a.db"
    answering.models = [{"id": "fake-model", "object": "model", "context_length": 32768}]
    created = run(
        "create", "sam", "--model", "fake-model", "--embedder", "endpoint:embed-small", db=db
    )
    assert created.exit_code == 0, created.output
    result = run("doctor", "sam", db=db)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == (
        f"Checking {answering.base_url} with 'fake-model' (agent sam)"
    )
    assert set(status_of(result).values()) == {"ok"}
    assert len(status_of(result)) == 8
    checks = lines_of(result)
    assert "'embed-small' gives 64-dimensional vectors" in checks["embeddings"]
    assert "the server reports 32,768 (context_length)" in checks["context window"]
    assert result.stdout.endswith("8 ok, 0 warning(s), 0 failed, 0 skipped.\n")
    # The three chat checks: auto, required, then streamed with usage asked for.
    sent = answering.chat_requests
    assert [body["tool_choice"] for body in sent] == ["auto", "required", "auto"]
    assert sent[2]["stream"] is True and sent[2]["stream_options"] == {"include_usage": True}
    assert answering.rejections == []


def test_configured_defaults_without_an_agent(answering, monkeypatch):
    monkeypatch.setenv("MEMGPT_LITE_MODEL", "fake-model")
    result = run("doctor")
    assert result.exit_code == 0, result.output
    assert status_of(result)["embeddings"] == "skip"
    assert "not used (no embedder" in lines_of(result)["embeddings"]
    assert "we use 8,192 tokens (from the model's name)" in lines_of(result)["context window"]


def test_server_down_is_one_line_and_the_rest_is_skipped(monkeypatch):
    # conftest points OPENAI_BASE_URL at a port where nothing listens.
    monkeypatch.setenv("MEMGPT_LITE_MODEL", "llama3.2")
    result = run("doctor")
    assert result.exit_code == 1
    checks = lines_of(result)
    assert checks["reachable"].startswith("FAIL  reachable: cannot reach the model endpoint")
    assert "connection refused (is the server running, on this port?)" in checks["reachable"]
    assert set(status_of(result).values()) == {"FAIL", "skip"}
    assert len(checks) == 8
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("page", "said"),
    [
        (html(), "answered with an HTML page"),
        (raw("Ollama is running", content_type="text/plain"), "answered invalid JSON"),
    ],
)
def test_html_page_names_the_v1_fix(answering, page, said):
    answering.enqueue_models(page)
    result = run("doctor", "-m", "fake-model")
    assert result.exit_code == 1
    line = lines_of(result)["OpenAI-compatible"]
    assert line.startswith("FAIL") and said in line
    assert "ending in /v1" in line
    assert status_of(result)["tool call"] == "skip"
    assert answering.chat_requests == []


def test_server_that_never_answers_fails_within_the_timeout(answering):
    answering.enqueue_models(hang())
    result = run("doctor", "-m", "fake-model", "--timeout", "0.3")
    assert result.exit_code == 1
    assert "did not answer within 0.3 s" in lines_of(result)["reachable"]


def test_wrong_api_key(answering, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    result = run("doctor", "-m", "fake-model")
    assert result.exit_code == 1
    line = lines_of(result)["OpenAI-compatible"]
    assert "refused the API key: Incorrect API key provided. (set OPENAI_API_KEY)" in line


def test_unknown_model_suggests_close_names(answering):
    answering.models = [{"id": "llama3.2:latest"}, {"id": "qwen2.5:7b"}, {"id": "mistral"}]
    result = run("doctor", "-m", "llama3.1")
    assert result.exit_code == 1
    line = lines_of(result)["model"]
    assert line.startswith("FAIL") and "did you mean 'llama3.2:latest'?" in line
    for skipped in ("tool call", 'tool_choice "required"', "streaming", "context window"):
        assert status_of(result)[skipped] == "skip"
    assert answering.chat_requests == []


def test_ollama_latest_tag_counts_as_the_model(answering):
    answering.models = [{"id": "llama3.2:latest"}]
    result = run("doctor", "-m", "llama3.2")
    assert result.exit_code == 0, result.output
    assert "'llama3.2' is listed" in lines_of(result)["model"]


def test_server_without_a_model_list_still_gets_the_chat_checks(answering):
    answering.enqueue_models(error(404, "Not Found", error_type="not_found_error"))
    result = run("doctor", "-m", "fake-model")
    statuses = status_of(result)
    assert statuses["OpenAI-compatible"] == "ok" and statuses["model"] == "skip"
    assert statuses["tool call"] == statuses["streaming"] == "ok"
    assert result.exit_code == 0, result.output


def test_tool_choice_refused_says_the_agent_falls_back(answering):
    answering.reject_required_tool_choice = True
    result = run("doctor", "-m", "fake-model")
    assert result.exit_code == 0, result.output  # a warning: the agent copes
    line = lines_of(result)['tool_choice "required"']
    assert line.startswith("WARN") and 'falls back to "auto"' in line
    assert status_of(result)["streaming"] == "ok"


@pytest.mark.parametrize("streaming", ["refuse", "ignore"])
def test_streaming_refused(answering, streaming):
    answering.streaming = streaming
    result = run("doctor", "-m", "fake-model")
    assert result.exit_code == 0, result.output  # a warning: the agent copes
    line = lines_of(result)["streaming"]
    assert line.startswith("WARN") and "does not stream" in line


def test_model_answering_in_text_fails_the_tool_call(fake_llm):
    fake_llm.responder = lambda body: reply(content="ok")
    result = run("doctor", "-m", "fake-model")
    assert result.exit_code == 1
    line = lines_of(result)["tool call"]
    assert line.startswith("FAIL") and "answered in text" in line and "--jinja" in line
    # The chat works, so the other chat checks still run.
    assert status_of(result)['tool_choice "required"'] == "ok"


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"context_length": 4096}, "context_length"),
        ({"max_model_len": 4096}, "max_model_len"),
        ({"meta": {"n_ctx_train": 4096, "n_vocab": 32000}}, "meta.n_ctx_train"),
    ],
)
def test_context_window_larger_than_the_server_reports(answering, entry, field):
    answering.models = [{"id": "fake-model", **entry}]
    result = run("doctor", "-m", "fake-model")
    assert result.exit_code == 1
    line = lines_of(result)["context window"]
    assert line.startswith("FAIL")
    assert (
        f"we use 8,192 tokens (from the model's name) but the server reports 4,096 ({field})"
        in line
    )
    assert "context_window = 4096 in config.toml" in line


def test_context_window_fix_for_an_agent_names_the_chat_command(answering, tmp_path):
    db = tmp_path / "a.db"
    run("create", "sam", "--model", "fake-model", "--context-window", "16000", db=db)
    answering.models = [{"id": "fake-model", "max_model_len": 4096}]
    line = lines_of(run("doctor", "sam", db=db))["context window"]
    assert "we use 16,000 tokens (the agent's context_window)" in line
    assert "`/model fake-model 4096` in `memgpt-lite chat sam`" in line


def test_models_lists_ids_and_windows(fake_llm):
    fake_llm.models = [
        {"id": "qwen2.5", "max_model_len": 32768},
        {"id": "llama3.2:latest"},
        {"object": "model"},  # no id: not a model we could use
    ]
    result = run("models")
    assert result.exit_code == 0
    assert result.stdout == "qwen2.5\t32768\nllama3.2:latest\n"


def test_models_and_doctor_use_the_agents_own_endpoint(fake_llm, tmp_path, monkeypatch):
    db = tmp_path / "a.db"
    run("create", "sam", "--model", "fake-model", "--base-url", fake_llm.base_url, db=db)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # not the agent's
    listed = run("models", "sam", db=db)
    assert listed.exit_code == 0 and listed.stdout == "fake-model\n"
    assert run("doctor", "sam", db=db).stdout.startswith(f"Checking {fake_llm.base_url} ")
    missing = run("models", "ghost", db=db)
    assert missing.exit_code == 1 and missing.stderr == "Error: no agent named 'ghost'\n"


def test_models_of_a_failing_endpoint_is_one_line(fake_llm):
    fake_llm.enqueue_models(html())
    result = run("models", "--base-url", fake_llm.base_url)
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "answered with an HTML page" in result.stderr
    down = run("models", "--base-url", "http://127.0.0.1:9/v1")
    assert down.exit_code == 1
    assert down.stderr.startswith("Error: cannot reach the model endpoint http://127.0.0.1:9/v1")


def test_bad_base_url_is_refused_before_any_request(fake_llm):
    result = run("doctor", "--base-url", "localhost:11434/v1")
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: --base-url 'localhost:11434/v1' has no http:// or https://: "
        "write http://localhost:11434/v1\n"
    )
    assert fake_llm.requests == []


def test_fake_server_scripts_and_lists_models(fake_llm):
    with pytest.raises(ValueError, match="not reply"):
        fake_llm.enqueue_models(CALL_REPLY)
    fake_llm.models = [{"id": "a", "context_length": 10}]
    fake_llm.enqueue_models(error(503, "busy"))
    first, second = run("models"), run("models")
    assert first.exit_code == 1 and "503" in first.stderr
    assert second.stdout == "a\t10\n"
