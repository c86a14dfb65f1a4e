"""The fake server playing local model servers, driven by the real openai
client: each server's native routes, model list, and way with a prompt
longer than the context it runs."""

from __future__ import annotations

import httpx
import openai
import pytest

from memgpt_lite.testing import FakeOpenAIServer, reply
from memgpt_lite.testing.local_servers import LocalServer

LONG = [{"role": "user", "content": "word " * 600}]  # about 600 tokens
SHORT = [{"role": "user", "content": "hello"}]


def client_of(server: FakeOpenAIServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=server.api_key, max_retries=0)


def native(server: FakeOpenAIServer, method: str, path: str, body=None) -> httpx.Response:
    root = server.base_url.removesuffix("/v1")
    headers = {"authorization": f"Bearer {server.api_key}"}
    return httpx.request(method, root + path, json=body, headers=headers)


def listed_entry(server: FakeOpenAIServer) -> dict:
    page = client_of(server).models.list()
    return page.data[0].model_dump()


def test_llama_cpp_refuses_a_longer_prompt_its_own_way(fake_llm):
    fake_llm.play("llama.cpp", context=300, trained=4096)
    fake_llm.responder = lambda body: reply(content="ok")
    with pytest.raises(openai.BadRequestError) as caught:
        client_of(fake_llm).chat.completions.create(model="fake-model", messages=LONG)
    error = caught.value.body
    assert error["type"] == "exceed_context_size_error" and error["n_ctx"] == 300
    assert error["n_prompt_tokens"] > 300
    assert error["message"] == (
        f"request ({error['n_prompt_tokens']} tokens) exceeds the available context size "
        "(300 tokens), try increasing it"
    )
    assert native(fake_llm, "GET", "/props").json()["default_generation_settings"]["n_ctx"] == 300
    assert listed_entry(fake_llm)["meta"] == {"n_ctx_train": 4096}
    answered = client_of(fake_llm).chat.completions.create(model="fake-model", messages=SHORT)
    assert answered.choices[0].message.content == "ok"


def test_vllm_refuses_a_longer_request_its_own_way(fake_llm):
    fake_llm.play("vllm", context=300)
    with pytest.raises(openai.BadRequestError) as caught:
        client_of(fake_llm).chat.completions.create(
            model="fake-model", messages=SHORT, max_tokens=400
        )
    error = caught.value.body
    assert error["type"] == "BadRequestError" and error["code"] == 400
    assert error["message"].startswith(
        "This model's maximum context length is 300 tokens. However, you requested "
    )
    with pytest.raises(openai.BadRequestError, match="your request has \\d+ input tokens"):
        client_of(fake_llm).chat.completions.create(model="fake-model", messages=LONG)
    assert listed_entry(fake_llm)["max_model_len"] == 300
    assert native(fake_llm, "GET", "/props").status_code == 404  # not vLLM's


def test_ollama_answers_a_longer_prompt_from_what_fits(fake_llm):
    fake_llm.play("ollama", context=300, trained=8192)
    fake_llm.responder = lambda body: reply(content="ok")
    assert native(fake_llm, "GET", "/api/ps").json() == {"models": []}  # nothing loaded yet
    answered = client_of(fake_llm).chat.completions.create(model="fake-model", messages=LONG)
    assert answered.choices[0].message.content == "ok"
    assert answered.usage is not None and answered.usage.prompt_tokens == 300
    assert fake_llm.requests[-1].prompt_truncated
    loaded = native(fake_llm, "GET", "/api/ps").json()["models"]
    assert [(m["name"], m["context_length"]) for m in loaded] == [("fake-model:latest", 300)]
    shown = native(fake_llm, "POST", "/api/show", {"model": "fake-model"}).json()
    assert shown["model_info"]["llama.context_length"] == 8192 and shown["parameters"] == ""
    missing = native(fake_llm, "POST", "/api/show", {"model": "other"})
    assert missing.status_code == 404 and missing.json() == {"error": "model 'other' not found"}
    assert listed_entry(fake_llm)["owned_by"] == "library"
    short = client_of(fake_llm).chat.completions.create(model="fake-model", messages=SHORT)
    assert short.usage is not None and short.usage.prompt_tokens < 300
    assert not fake_llm.requests[-1].prompt_truncated


def test_a_modelfile_num_ctx_shows_among_ollamas_parameters(fake_llm):
    fake_llm.play("ollama", context=2048, num_ctx_in_modelfile=True)
    shown = native(fake_llm, "POST", "/api/show", {"model": "fake-model:latest"}).json()
    assert shown["parameters"] == "num_ctx 2048"


@pytest.mark.parametrize(
    ("kind", "context", "problem"),
    [("lmstudio", 100, "one of"), ("ollama", 0, "context must be an int >= 1")],
)
def test_a_bad_play_is_refused_at_once(kind, context, problem):
    with pytest.raises(ValueError, match=problem):
        LocalServer(kind, context, "fake-model")  # type: ignore[arg-type]
