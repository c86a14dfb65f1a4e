"""The context a local model server really runs with, as it reports it.

Local servers often run a model with a smaller context than the model has,
and than an agent assumes from the model's name:

- Ollama runs each model with `num_ctx` tokens (OLLAMA_CONTEXT_LENGTH, a
  Modelfile's PARAMETER, or a default from the GPU's memory). `GET /api/ps`
  lists each loaded model's `context_length`; `POST /api/show` has the
  Modelfile's `num_ctx` among its `parameters`. A longer prompt is not
  refused: Ollama drops its start and answers, and only the usage it reports
  (`prompt_tokens`, smaller than what was sent) shows it.
- llama.cpp's server runs `-c` tokens shared by its `-np` slots; `GET /props`
  has one slot's as `default_generation_settings.n_ctx`. A longer prompt is
  refused with 400 "request (N tokens) exceeds the available context size
  (M tokens)", the body's error carrying `n_prompt_tokens` and `n_ctx` (older
  builds: "the request exceeds the available context size", no numbers).
- vLLM runs `--max-model-len` tokens, listed as `max_model_len` on its
  `GET /v1/models` entries, and refuses a longer request with 400 "This
  model's maximum context length is N tokens. ..." (or "The decoder prompt
  (length P) is longer than the maximum model length of N.").

`stated_window` reads the window from such a refusal, `raise_setting` says
how to give the server more; server_reports.py asks the server's own reports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OLLAMA = "Ollama"
LLAMA_CPP = "llama.cpp"
VLLM = "vLLM"
SOME_SERVER = "the server"
# A window stated in a refusal, by server: the first pattern that matches wins.
_STATED: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"available context size \((\d{1,9}) tokens\)"), LLAMA_CPP),
    (re.compile(r"maximum model length of (\d{1,9})\b"), VLLM),
    (re.compile(r"maximum context length is (\d{1,9})\b"), SOME_SERVER),
)


@dataclass(frozen=True)
class ServerWindow:
    """The context a server runs a model with: its size in tokens, which
    server said so (Ollama, llama.cpp, vLLM, or "the server"), and where."""

    tokens: int
    server: str
    source: str  # e.g. "/api/ps context_length", "its refusal"


def stated_window(message: str, body: object) -> ServerWindow | None:
    """The window a context-length refusal states: llama.cpp's `n_ctx` field,
    else a number in its message; None when it states none."""
    error = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(error, dict):
        n_ctx = error.get("n_ctx")
        if is_count(n_ctx):
            return ServerWindow(n_ctx, LLAMA_CPP, "n_ctx in its refusal")
    for pattern, server in _STATED:
        match = pattern.search(message)
        if match:
            if server == SOME_SERVER and isinstance(error, dict):
                # vLLM's errors are typed by exception class, OpenAI's are not.
                server = VLLM if error.get("type") == "BadRequestError" else SOME_SERVER
            return ServerWindow(int(match.group(1)), server, "its refusal")
    return None


def raise_setting(window: ServerWindow, tokens: int) -> str:
    """How to run the server with `tokens` of context, in its own settings."""
    if window.server == OLLAMA:
        return (
            f"OLLAMA_CONTEXT_LENGTH={tokens} for `ollama serve` "
            f"(or PARAMETER num_ctx {tokens} in the model's Modelfile)"
        )
    if window.server == LLAMA_CPP:
        return f"llama-server -c {tokens} (times -np, the slots sharing it)"
    if window.server == VLLM:
        return f"vllm serve --max-model-len {tokens}"
    return f"the server's context setting at {tokens} or more"


def is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
