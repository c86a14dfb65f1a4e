"""Asking a model server what context it runs a model with: llama.cpp's
`/props`, Ollama's `/api/ps` and `/api/show`, vLLM's `/v1/models` (see
server_window.py for what each says). Native routes sit at the server's root,
beside its /v1."""

from __future__ import annotations

import re
from typing import Any

import httpx2
import openai

from memgpt_lite.errors import LLMError
from memgpt_lite.llm.endpoint import EndpointCall
from memgpt_lite.llm.server_window import LLAMA_CPP, OLLAMA, VLLM, ServerWindow, is_count
from memgpt_lite.text import parse_json

_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d{1,9})\s*$", re.MULTILINE)
# Asking a server about itself is quick or not worth waiting for.
ASK_SECONDS = 10.0


def server_root(base_url: str) -> str:
    """The server's own root, where local servers keep their native routes:
    the base URL without its /v1."""
    root = base_url.rstrip("/")
    return root.removesuffix("/v1")


async def ask_server(
    client: openai.AsyncOpenAI, base_url: str, model: str, timeout: float
) -> ServerWindow | None:
    """The context the server reports running `model` with, from llama.cpp's
    /props, Ollama's /api/ps and /api/show, or vLLM's model list; None when
    it reports none (or cannot be asked). No retries: a report, not a step."""
    root = server_root(base_url)
    call = EndpointCall(f"the model endpoint {base_url}", min(timeout, ASK_SECONDS), 0)
    asks = (
        (_props, f"{root}/props"),
        (_ps, f"{root}/api/ps"),
        (_show, f"{root}/api/show"),
        (_models, f"{base_url.rstrip('/')}/models"),
    )
    for read, url in asks:
        try:
            answer = await call.run(lambda url=url, read=read: _ask(client, url, read, model))
        except (openai.APIStatusError, LLMError):
            continue
        if answer is not None:
            return answer
    return None


# ----------------------------------------------------------- each report


async def _ask(client: openai.AsyncOpenAI, url: str, read: Any, model: str) -> ServerWindow | None:
    """One report: GET `url` (POST, for Ollama's /api/show) and `read` it."""
    if read is _show:
        response = await client.post(url, body={"model": model}, cast_to=httpx2.Response)
    else:
        response = await client.get(url, cast_to=httpx2.Response)
    try:
        data = parse_json(response.text)
    except (ValueError, RecursionError):
        return None
    result: ServerWindow | None = read(data, model)
    return result


def _props(data: Any, model: str) -> ServerWindow | None:
    settings = data.get("default_generation_settings") if isinstance(data, dict) else None
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    if is_count(n_ctx):
        return ServerWindow(n_ctx, LLAMA_CPP, "/props n_ctx")
    return None


def _ps(data: Any, model: str) -> ServerWindow | None:
    loaded = data.get("models") if isinstance(data, dict) else None
    for entry in loaded if isinstance(loaded, list) else ():
        if isinstance(entry, dict) and _same_model(entry.get("name") or entry.get("model"), model):
            size = entry.get("context_length")
            if is_count(size):
                return ServerWindow(size, OLLAMA, "/api/ps context_length")
    return None


def _show(data: Any, model: str) -> ServerWindow | None:
    parameters = data.get("parameters") if isinstance(data, dict) else None
    match = _NUM_CTX.search(parameters) if isinstance(parameters, str) else None
    if match:
        return ServerWindow(int(match.group(1)), OLLAMA, "/api/show num_ctx")
    return None


def _models(data: Any, model: str) -> ServerWindow | None:
    listed = data.get("data") if isinstance(data, dict) else None
    for entry in listed if isinstance(listed, list) else ():
        if isinstance(entry, dict) and _same_model(entry.get("id"), model):
            size = entry.get("max_model_len")
            if is_count(size):
                return ServerWindow(size, VLLM, "max_model_len")
    return None


def _same_model(name: object, model: str) -> bool:
    """Whether a listed `name` is `model`, counting Ollama's "NAME:latest" as NAME."""
    return isinstance(name, str) and name in (model, f"{model}:latest")
