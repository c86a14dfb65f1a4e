"""`memgpt-lite doctor` against local servers that run a smaller context
than we use (the fake server playing Ollama, llama.cpp and vLLM): the
context window check reads the server's own report and names both fixes,
ours and the server's setting, on one line."""

from __future__ import annotations

import pytest
from click.testing import CliRunner, Result

from memgpt_lite.cli.main import cli
from memgpt_lite.testing import FakeOpenAIServer, call, reply

CALL_REPLY = reply(tool_calls=[call("send_message", message="ok")])
# (kind, where the server says it, the server's setting for 8,192)
SERVERS = [
    ("ollama", "/api/ps context_length", "OLLAMA_CONTEXT_LENGTH=8192 for `ollama serve`"),
    ("llama.cpp", "/props n_ctx", "llama-server -c 8192"),
    ("vllm", "max_model_len", "vllm serve --max-model-len 8192"),
]


def run(*args: str, db=None) -> Result:
    prefix = ["--db", str(db)] if db else []
    return CliRunner().invoke(cli, [*prefix, *args], catch_exceptions=False)


def window_line(result: Result) -> str:
    return next(line for line in result.stdout.splitlines() if "context window:" in line)


@pytest.fixture
def answering(fake_llm: FakeOpenAIServer) -> FakeOpenAIServer:
    fake_llm.responder = lambda body: CALL_REPLY
    return fake_llm


@pytest.mark.parametrize(("kind", "source", "setting"), SERVERS)
def test_doctor_names_the_servers_window_and_both_fixes(answering, kind, source, setting):
    answering.play(kind, context=4096)
    result = run("doctor", "-m", "fake-model")
    assert result.exit_code == 1
    line = window_line(result)
    assert line.startswith("FAIL")
    assert (
        f"we use 8,192 tokens (from the model's name) but the server reports 4,096 ({source})"
        in line
    )
    assert "context_window = 4096 in config.toml" in line
    assert f"or give the server 8,192: {setting}" in line
    assert answering.rejections == []  # only the routes this server has were asked


@pytest.mark.parametrize(("kind", "source", "setting"), SERVERS)
def test_doctor_is_content_when_the_server_runs_enough(answering, kind, source, setting):
    answering.play(kind, context=16384)
    result = run("doctor", "-m", "fake-model")
    assert result.exit_code == 0, result.output
    assert f"we use 8,192 tokens (from the model's name); the server reports 16,384 ({source})" in (
        window_line(result)
    )


def test_the_running_window_wins_over_the_trained_one(answering):
    """llama.cpp lists the window the model was trained with (meta.n_ctx_train);
    /props says the one it runs (-c), which is what counts."""
    answering.play("llama.cpp", context=4096, trained=131_072)
    line = window_line(run("doctor", "-m", "fake-model"))
    assert "(/props n_ctx)" in line and "n_ctx_train" not in line


def test_an_agents_fix_names_its_chat_command(answering, tmp_path):
    db = tmp_path / "a.db"
    run("create", "sam", "--model", "fake-model", "--context-window", "16000", db=db)
    answering.play("ollama", context=4096, num_ctx_in_modelfile=True)
    line = window_line(run("doctor", "sam", db=db))
    assert "we use 16,000 tokens (the agent's context_window)" in line
    assert "`/model fake-model 4096` in `memgpt-lite chat sam`" in line
    assert "OLLAMA_CONTEXT_LENGTH=16000" in line
