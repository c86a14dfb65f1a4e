"""Local model servers the fake server can play (`FakeOpenAIServer.play`):
Ollama, llama.cpp's server and vLLM, each running its model with a smaller
context than the model has, each reporting it and meeting a longer prompt in
its own way (see memgpt_lite/llm/server_window.py):

- "ollama": `GET /api/ps` lists the model with its `context_length` once a
  chat request has loaded it; `POST /api/show` gives its `model_info` (the
  trained window) and, when `num_ctx_in_modelfile`, "num_ctx N" among its
  `parameters`. A longer prompt is answered anyway, its usage reporting only
  the `context` tokens kept (the request is recorded as `prompt_truncated`).
- "llama.cpp": `GET /props` gives `default_generation_settings.n_ctx`; the
  model list has `meta.n_ctx_train`; a longer prompt gets its 400
  `exceed_context_size_error` with `n_prompt_tokens` and `n_ctx`.
- "vllm": the model list has `max_model_len`; a prompt and completion longer
  than that get its 400 "This model's maximum context length is N tokens".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from memgpt_lite.testing.wire import Response

LocalKind = Literal["ollama", "llama.cpp", "vllm"]
LOCAL_KINDS: tuple[LocalKind, ...] = ("ollama", "llama.cpp", "vllm")
Route = Callable[[dict[str, Any] | None], Response]


@dataclass
class LocalServer:
    """One local server being played: which, the context it runs the model
    with, and the model's own (trained) window."""

    kind: LocalKind
    context: int
    model_id: str
    trained: int = 131_072
    num_ctx_in_modelfile: bool = False
    loaded: bool = False  # Ollama lists a model in /api/ps once it has run

    def __post_init__(self) -> None:
        if self.kind not in LOCAL_KINDS:
            raise ValueError(f"a local server is one of {LOCAL_KINDS}, not {self.kind!r}")
        if not (isinstance(self.context, int) and self.context >= 1):
            raise ValueError(f"context must be an int >= 1, not {self.context!r}")

    def routes(self) -> dict[tuple[str, str], Route]:
        """The server's native routes, at its root (beside /v1)."""
        if self.kind == "ollama":
            return {("GET", "/api/ps"): self._ps, ("POST", "/api/show"): self._show}
        if self.kind == "llama.cpp":
            return {("GET", "/props"): self._props}
        return {}

    def model_fields(self) -> dict[str, Any]:
        """What the server adds to its model's `GET /v1/models` entry."""
        if self.kind == "vllm":
            return {"owned_by": "vllm", "max_model_len": self.context}
        if self.kind == "llama.cpp":
            return {"owned_by": "llamacpp", "meta": {"n_ctx_train": self.trained}}
        return {"owned_by": "library"}

    def meet_prompt(self, prompt: int, completion: int) -> tuple[int, Response | None]:
        """A chat request of `prompt` tokens asking for up to `completion`:
        the prompt tokens its answer reports, or the server's refusal."""
        self.loaded = True
        if self.kind == "ollama":
            return min(prompt, self.context), None
        if self.kind == "llama.cpp" and prompt > self.context:
            return prompt, _llama_cpp_refusal(prompt, self.context)
        if self.kind == "vllm" and prompt + completion > self.context:
            return prompt, _vllm_refusal(prompt, completion, self.context)
        return prompt, None

    # -- the native routes ---------------------------------------------------

    def _ps(self, body: dict[str, Any] | None) -> Response:
        models = []
        if self.loaded:
            models.append(
                {
                    "name": f"{self.model_id}:latest",
                    "model": f"{self.model_id}:latest",
                    "size": 5_000_000_000,
                    "digest": "0" * 64,
                    "details": {"format": "gguf", "family": "llama"},
                    "expires_at": "2030-01-01T00:00:00Z",
                    "size_vram": 5_000_000_000,
                    "context_length": self.context,
                }
            )
        return Response(200, {"models": models})

    def _show(self, body: dict[str, Any] | None) -> Response:
        name = body.get("model") if isinstance(body, dict) else None
        if name not in (self.model_id, f"{self.model_id}:latest"):
            return Response(404, {"error": f"model '{name}' not found"}, rejected=True)
        parameters = f"num_ctx {self.context}" if self.num_ctx_in_modelfile else ""
        return Response(
            200,
            {
                "parameters": parameters,
                "details": {"format": "gguf", "family": "llama"},
                "model_info": {
                    "general.architecture": "llama",
                    "llama.context_length": self.trained,
                },
                "capabilities": ["completion", "tools"],
            },
        )

    def _props(self, body: dict[str, Any] | None) -> Response:
        settings = {"n_ctx": self.context, "params": {"n_predict": -1}}
        return Response(
            200,
            {
                "default_generation_settings": settings,
                "total_slots": 1,
                "model_path": f"/models/{self.model_id}.gguf",
            },
        )


def _llama_cpp_refusal(prompt: int, context: int) -> Response:
    message = (
        f"request ({prompt} tokens) exceeds the available context size ({context} tokens), "
        "try increasing it"
    )
    error = {
        "code": 400,
        "message": message,
        "type": "exceed_context_size_error",
        "n_prompt_tokens": prompt,
        "n_ctx": context,
    }
    return Response(400, {"error": error}, rejected=True)


def _vllm_refusal(prompt: int, completion: int, context: int) -> Response:
    message = f"This model's maximum context length is {context} tokens. However, "
    if completion:
        message += (
            f"you requested {prompt + completion} tokens ({prompt} in the messages, "
            f"{completion} in the completion). Please reduce the length of the messages "
            "or completion."
        )
    else:
        message += f"your request has {prompt} input tokens. Please reduce the length."
    error = {"message": message, "type": "BadRequestError", "param": None, "code": 400}
    return Response(400, {"error": error}, rejected=True)
