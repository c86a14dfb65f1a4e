"""Asking a model server what context it runs a model with: llama.cpp's
`/props`, Ollama's `/api/ps` and `/api/show`, vLLM's `/v1/models` (see
server_window.py for what each says). Native routes sit at the server's root,
beside its /v1."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import httpx2

from memgpt_lite.errors import LLMError
from memgpt_lite.llm.endpoint import EndpointCall
from memgpt_lite.llm.server_window import LLAMA_CPP, OLLAMA, VLLM, ServerWindow, is_count
from memgpt_lite.text import parse_json

if TYPE_CHECKING:
    import openai  # loaded where a client is made (llm/endpoint.py)

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
    """The context the server reports running `model` with; None when it
    reports none (or cannot be asked). First the model list, a route every
    compatible server has: the model's entry says which server this is
    (`server_kind`), and only that server's own routes are asked, so nothing
    goes out that another server would refuse. No retries: a report, not a
    step."""
    call = EndpointCall(f"the model endpoint {base_url}", min(timeout, ASK_SECONDS), 0)
    entry = _entry(await _answer(call, client, f"{base_url.rstrip('/')}/models"), model)
    kind = server_kind(entry) if entry is not None else None
    root = server_root(base_url)
    if kind == VLLM and entry is not None and is_count(entry.get("max_model_len")):
        return ServerWindow(entry["max_model_len"], VLLM, "max_model_len")
    if kind == LLAMA_CPP:
        return _props(await _answer(call, client, f"{root}/props"))
    if kind == OLLAMA:
        loaded = _ps(await _answer(call, client, f"{root}/api/ps"), model)
        if loaded is not None:
            return loaded
        return _show(await _answer(call, client, f"{root}/api/show", {"model": model}))
    return None


def server_kind(entry: dict[str, Any]) -> str | None:
    """Which local server lists a model this way: vLLM (`max_model_len`,
    owned by "vllm"), llama.cpp (`meta`, owned by "llamacpp"), Ollama
    (owned by "library", or a NAME:TAG id, as Ollama lists every model);
    None for others."""
    owner = entry.get("owned_by")
    if "max_model_len" in entry or owner == "vllm":
        return VLLM
    if isinstance(entry.get("meta"), dict) or owner == "llamacpp":
        return LLAMA_CPP
    model_id = entry.get("id")
    if owner == "library" or (isinstance(model_id, str) and ":" in model_id):
        return OLLAMA
    return None


# ----------------------------------------------------------- each report


async def _answer(
    call: EndpointCall, client: openai.AsyncOpenAI, url: str, body: dict[str, Any] | None = None
) -> Any:
    """The JSON answer to GET `url` (POST `body`, if given); None for an
    error, an unreachable server or what is not JSON."""
    import openai  # loaded already: `client` is one of its

    async def attempt() -> httpx2.Response:
        if body is not None:
            return await client.post(url, body=body, cast_to=httpx2.Response)
        return await client.get(url, cast_to=httpx2.Response)

    try:
        response = await call.run(attempt)
        return parse_json(response.text)
    except (openai.APIStatusError, LLMError, ValueError, RecursionError):
        return None


def _entry(listed: Any, model: str) -> dict[str, Any] | None:
    """The model's entry in a model list, if it has one."""
    entries = listed.get("data") if isinstance(listed, dict) else None
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, dict) and _same_model(entry.get("id"), model):
            return entry
    return None


def _props(data: Any) -> ServerWindow | None:
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


def _show(data: Any) -> ServerWindow | None:
    parameters = data.get("parameters") if isinstance(data, dict) else None
    match = _NUM_CTX.search(parameters) if isinstance(parameters, str) else None
    if match:
        return ServerWindow(int(match.group(1)), OLLAMA, "/api/show num_ctx")
    return None


def _same_model(name: object, model: str) -> bool:
    """Whether a listed `name` is `model`, counting Ollama's "NAME:latest" as NAME."""
    return isinstance(name, str) and name in (model, f"{model}:latest")
