"""What a model server says about the context it runs: the window in its
refusals (llama.cpp, vLLM, OpenAI), and its own reports, asked through the
real client of `OpenAIChatModel` against the fake server playing each."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from memgpt_lite.llm.openai_chat import ContextWindowExceeded, OpenAIChatModel
from memgpt_lite.llm.server_reports import server_kind, server_root
from memgpt_lite.llm.server_window import ServerWindow, raise_setting, stated_window
from memgpt_lite.models import LLMConfig
from memgpt_lite.testing import FakeOpenAIServer, error, raw

LONG = [{"role": "user", "content": "word " * 600}]


def model_for(server: FakeOpenAIServer) -> OpenAIChatModel:
    return OpenAIChatModel(
        LLMConfig(model="fake-model"), base_url=server.base_url, api_key=server.api_key
    )


def refusal(server: FakeOpenAIServer, stream: bool) -> ContextWindowExceeded:
    model = model_for(server)
    config = LLMConfig(model="fake-model", stream=stream, max_retries=0)
    with pytest.raises(ContextWindowExceeded) as caught:
        model.complete(config, LONG, [])
    model.close()
    return caught.value


def reported(server: FakeOpenAIServer, name: str = "fake-model") -> ServerWindow | None:
    model = model_for(server)
    try:
        return asyncio.run(model.server_window(name))
    finally:
        model.close()


@pytest.mark.parametrize("stream", [False, True])
def test_a_llama_cpp_refusal_carries_its_n_ctx(fake_llm, stream):
    fake_llm.play("llama.cpp", context=300)
    exc = refusal(fake_llm, stream)
    assert "exceeds the available context size (300 tokens)" in str(exc)
    assert exc.stated == ServerWindow(300, "llama.cpp", "n_ctx in its refusal")


def test_a_vllm_refusal_carries_its_max_model_len(fake_llm):
    fake_llm.play("vllm", context=300)
    assert refusal(fake_llm, False).stated == ServerWindow(300, "vLLM", "its refusal")


def test_an_openai_refusal_carries_its_window_but_names_no_server(fake_llm):
    fake_llm.context_window = 300
    assert refusal(fake_llm, False).stated == ServerWindow(300, "the server", "its refusal")


def test_a_refusal_in_a_stream_carries_its_window(fake_llm):
    message = "request (900 tokens) exceeds the available context size (512 tokens)"
    body = f"data: {json.dumps({'error': {'message': message}})}\n\n"
    fake_llm.enqueue(raw(body, content_type="text/event-stream"))
    exc = refusal(fake_llm, True)
    assert exc.stated == ServerWindow(512, "llama.cpp", "its refusal")


@pytest.mark.parametrize(
    ("message", "body", "stated"),
    [
        (
            "The decoder prompt (length 5000) is longer than the maximum model length of 4096. "
            "Make sure that `max_model_len` is no smaller than the number of text tokens.",
            {"type": "BadRequestError"},
            ServerWindow(4096, "vLLM", "its refusal"),
        ),
        (
            "This model's maximum context length is 4096 tokens and your request has 2778 "
            "input tokens (8000 > 4096 - 2778).",
            {"error": {"type": "BadRequestError", "code": 400}},
            ServerWindow(4096, "vLLM", "its refusal"),
        ),
        ("the request exceeds the available context size, try increasing it", None, None),
        ("maximum context length is " + "9" * 50 + " tokens", None, None),
        ("too long", {"n_ctx": True}, None),
    ],
    ids=["vllm-decoder", "vllm-input", "old-llama-cpp", "absurd", "bool-n_ctx"],
)
def test_stated_window(message: str, body: Any, stated: ServerWindow | None):
    assert stated_window(message, body) == stated


def test_a_vllm_decoder_refusal_is_a_context_error(fake_llm):
    fake_llm.enqueue(
        error(400, "The decoder prompt (length 9) is longer than the maximum model length of 8.")
    )
    exc = refusal(fake_llm, False)
    assert exc.stated is not None and exc.stated.tokens == 8


@pytest.mark.parametrize(
    ("kind", "options", "window"),
    [
        ("llama.cpp", {}, ServerWindow(3000, "llama.cpp", "/props n_ctx")),
        ("vllm", {}, ServerWindow(3000, "vLLM", "max_model_len")),
        (
            "ollama",
            {"num_ctx_in_modelfile": True},
            ServerWindow(3000, "Ollama", "/api/show num_ctx"),
        ),
    ],
)
def test_each_server_reports_its_window(fake_llm, kind, options, window):
    fake_llm.play(kind, context=3000, **options)
    assert reported(fake_llm) == window
    assert fake_llm.rejections == []


def test_ollama_reports_a_loaded_models_context(fake_llm):
    local = fake_llm.play("ollama", context=3000)
    assert reported(fake_llm) is None  # not loaded, no num_ctx in its Modelfile
    local.loaded = True
    assert reported(fake_llm) == ServerWindow(3000, "Ollama", "/api/ps context_length")


def test_other_servers_are_asked_nothing_they_would_refuse(fake_llm):
    assert reported(fake_llm) is None
    assert reported(fake_llm, "not-listed") is None
    assert [r.path for r in fake_llm.requests] == ["/v1/models", "/v1/models"]
    assert fake_llm.rejections == []


def test_an_unreachable_server_reports_nothing():
    model = OpenAIChatModel(LLMConfig(model="m"), base_url="http://127.0.0.1:9/v1", api_key="k")
    assert asyncio.run(model.server_window("m")) is None


@pytest.mark.parametrize(
    ("entry", "kind"),
    [
        ({"id": "q", "owned_by": "vllm"}, "vLLM"),
        ({"id": "q", "meta": {"n_ctx_train": 1}}, "llama.cpp"),
        ({"id": "llama3.2:latest", "owned_by": "someone"}, "Ollama"),
        ({"id": "gpt-4o-mini", "owned_by": "system"}, None),
    ],
)
def test_server_kind(entry, kind):
    assert server_kind(entry) == kind


def test_roots_and_settings():
    assert server_root("http://h:11434/v1/") == "http://h:11434"
    assert server_root("http://h:8080") == "http://h:8080"
    assert raise_setting(ServerWindow(1, "Ollama", ""), 8192).startswith(
        "OLLAMA_CONTEXT_LENGTH=8192"
    )
    assert raise_setting(ServerWindow(1, "the server", ""), 10) == (
        "the server's context setting at 10 or more"
    )
