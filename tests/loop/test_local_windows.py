"""An agent on a local server that runs a smaller context than the agent
assumes (Ollama's num_ctx, llama.cpp's -c, vLLM's max_model_len), against the
fake server playing each: the first request over the real window is refused
(or, on Ollama, answered from a truncated prompt), the agent learns the
window from the refusal or the server's own report, keeps it, and every
later request fits."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memgpt_lite import Agent, AgentSettings, Block
from memgpt_lite.events import StepFinished, WindowLearned
from memgpt_lite.testing import FakeOpenAIServer, error, reply, say
from memgpt_lite.testing.local_servers import LOCAL_KINDS

BELIEVED = 8192  # what the agent assumes
SERVED = 2500  # what the server runs
FILLER = " ".join(["the quick brown fox jumps over the lazy dog"] * 8)
SETTINGS = {
    "ollama": "OLLAMA_CONTEXT_LENGTH=8192",
    "llama.cpp": "llama-server -c 8192",
    "vllm": "vllm serve --max-model-len 8192",
}
SERVERS = {"ollama": "Ollama", "llama.cpp": "llama.cpp", "vllm": "vLLM"}


def make_agent(tmp_path, window: int = BELIEVED) -> Agent:
    return Agent.create(
        "sam",
        "fake-model",
        db=tmp_path / "a.db",
        system="You are a test agent.",
        blocks=[Block(label="persona", value="I am Sam."), Block(label="human")],
        settings=AgentSettings(context_window=window),
    )


def model(body: dict):
    if "tools" not in body:  # a summary request
        return reply(content="Summary of earlier turns.")
    return say("ok")


def over_the_window(server: FakeOpenAIServer) -> list:
    """The requests the server refused as too long, or answered truncated."""
    return [r for r in server.requests if r.status == 400 or r.prompt_truncated]


def talk(agent: Agent, turns: range) -> tuple[list[StepFinished], list[WindowLearned]]:
    finished, learned = [], []
    for i in turns:
        for event in agent.stream(f"FACT{i} {FILLER}"):
            if isinstance(event, WindowLearned):
                learned.append(event)
            elif isinstance(event, StepFinished):
                finished.append(event)
    return finished, learned


@pytest.mark.parametrize("kind", LOCAL_KINDS)
def test_the_agent_learns_the_served_window_once_and_keeps_it(fake_llm, tmp_path, kind):
    fake_llm.play(kind, context=SERVED)
    fake_llm.responder = model
    agent = make_agent(tmp_path)
    finished, learned = talk(agent, range(30))
    assert [f.result.replies for f in finished] == [["ok"]] * 30
    assert len(over_the_window(fake_llm)) == 1  # the first one only
    assert [(e.tokens, e.previous, e.server) for e in learned] == [
        (SERVED, BELIEVED, SERVERS[kind])
    ]
    fix = learned[0].fix
    assert SETTINGS[kind] in fix and "`/model fake-model 8192` in `memgpt-lite chat sam`" in fix
    assert "it now works within 2,500" in fix
    # Kept with the agent: the next process starts from it.
    again = Agent.load("sam", db=tmp_path / "a.db")
    assert again.state.settings.context_window == SERVED
    talk(again, range(30, 35))
    assert len(over_the_window(fake_llm)) == 1


def test_an_ollama_answer_from_a_truncated_prompt_is_the_sign(fake_llm, tmp_path):
    local = fake_llm.play("ollama", context=SERVED)
    fake_llm.responder = model
    agent = make_agent(tmp_path)
    finished, learned = talk(agent, range(30))
    truncated = [r for r in fake_llm.requests if r.prompt_truncated]
    assert len(truncated) == 1 and truncated[0].status == 200
    # The report came from the loaded model's entry in /api/ps.
    assert [r.path for r in fake_llm.requests if r.path.startswith("/api/")][-1] == "/api/ps"
    assert "(/api/ps context_length)" in learned[0].fix
    assert local.loaded


def test_a_modelfile_num_ctx_is_read_when_ps_does_not_list_the_model(fake_llm, tmp_path):
    local = fake_llm.play("ollama", context=SERVED, num_ctx_in_modelfile=True)
    agent = make_agent(tmp_path)

    def unload(body: dict):
        local.loaded = False  # evicted from memory between requests
        return model(body)

    fake_llm.responder = unload
    _, learned = talk(agent, range(30))
    assert learned and "(/api/show num_ctx)" in learned[0].fix
    assert agent.state.settings.context_window == SERVED


def test_a_shorter_count_without_a_smaller_report_is_asked_once(fake_llm, tmp_path):
    """A server whose tokenizer counts far fewer tokens than ours, with a
    window as large as ours: asked once, nothing learned, no more asking."""
    local = fake_llm.play("llama.cpp", context=BELIEVED)
    agent = make_agent(tmp_path)
    fake_llm.responder = lambda body: say("ok")
    original = local.meet_prompt
    local.meet_prompt = lambda prompt, completion: (original(prompt, completion)[0] // 2, None)
    _, learned = talk(agent, range(5))
    assert learned == []
    assert [r.path for r in fake_llm.requests].count("/props") == 1
    assert agent.state.settings.context_window == BELIEVED


def test_an_old_llama_cpp_refusal_without_numbers_asks_props(fake_llm, tmp_path):
    fake_llm.play("llama.cpp", context=SERVED)
    agent = make_agent(tmp_path)
    old = error(400, "the request exceeds the available context size, try increasing it")
    fake_llm.enqueue(old)
    fake_llm.responder = model
    _, learned = talk(agent, range(1))
    assert [(e.tokens, e.server) for e in learned] == [(SERVED, "llama.cpp")]
    assert "(/props n_ctx)" in learned[0].fix
    assert "/props" in [r.path for r in fake_llm.requests]


def test_a_refusal_from_a_server_that_reports_nothing_still_compacts(fake_llm, tmp_path):
    """Not a local server: no report to learn from, and the step goes on as
    before, compacting and asking again."""
    agent = make_agent(tmp_path)
    fake_llm.enqueue(error(400, "the request exceeds the available context size"))
    fake_llm.responder = model
    finished, learned = talk(agent, range(1))
    assert learned == [] and finished[0].result.replies == ["ok"]
    assert agent.state.settings.context_window == BELIEVED


def test_a_chat_prints_the_fix_line_once(fake_llm, chat_env, tmp_path):
    """A real `memgpt-lite chat`, piped: the replies on stdout, and the line
    that says what the server runs and how to fix it once, as a warning."""
    fake_llm.play("llama.cpp", context=SERVED)
    fake_llm.responder = model
    make_agent(tmp_path)
    entries = "\n".join(f"FACT{i} {FILLER}" for i in range(25)) + "\n"
    finished = subprocess.run(
        [sys.executable, "-m", "memgpt_lite", "--db", str(tmp_path / "a.db"), "chat", "sam"],
        input=entries,
        capture_output=True,
        text=True,
        env=chat_env,
        timeout=120,
    )
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.splitlines() == ["ok"] * 25
    warned = [line for line in finished.stderr.splitlines() if "tokens of context" in line]
    assert len(warned) == 1
    assert warned[0].startswith("warning: agent sam: llama.cpp runs fake-model with 2,500 tokens")
    assert "llama-server -c 8192" in warned[0] and "Traceback" not in finished.stderr
