"""Embedders behind one small interface: `name`, `dimension`, `embed(texts)`.

- `EndpointEmbedder`: any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI,
  Ollama, vLLM, llama.cpp server, LM Studio), batched; each batch is one
  request bounded as a whole by `timeout_seconds`, its retries of 429, 5xx,
  timeouts and dropped connections included (see endpoint.py).
- `MiniLMEmbedder` (`local_embedder.py`): all-MiniLM-L6-v2 run with numpy, offline.

An agent records the name and dimension of the embedder its vectors came from;
a different embedder is refused with `EmbeddingMismatchError` until the agent
is re-embedded (`memgpt-lite archival NAME reembed`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import httpx2
import numpy as np

from memgpt_lite.errors import ConfigError, LLMError
from memgpt_lite.llm.endpoint import (
    AsyncClients,
    EndpointCall,
    background_loop,
    client_timeout,
    error_text,
    json_answer,
    run_sync,
)
from memgpt_lite.models import LLMConfig
from memgpt_lite.settings.endpoint import choose_endpoint
from memgpt_lite.settings.values import EMBEDDING_MODEL_DIR_ENV


@runtime_checkable
class Embedder(Protocol):
    name: str  # identifies the vector space, e.g. "endpoint:text-embedding-3-small"
    dimension: int | None  # None until known (an endpoint tells on its first answer)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A (len(texts), dimension) float32 array of L2-normalised rows."""
        ...


class EmbeddingMismatchError(ConfigError):
    """The embedder differs from the one the agent's stored vectors came from."""


def normalise(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


class EndpointEmbedder:
    """Embeddings from an OpenAI-compatible endpoint: `base_url` and `api_key`
    as the caller resolved them (an edge: settings/resolve.py
    `resolve_endpoint`), else OpenAI's URL and no key."""

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int = 256,
        max_retries: int = 4,
        timeout_seconds: float = 60.0,
    ) -> None:
        self.model = model
        self.name = f"endpoint:{model}"
        self.dimension: int | None = None
        self.batch_size = batch_size
        self.base_url, key = choose_endpoint(LLMConfig(model=model), base_url, api_key)
        self.max_retries = max_retries
        self.timeout_seconds = timeout_seconds
        timeout = client_timeout(timeout_seconds)
        self._clients = AsyncClients(
            base_url=self.base_url, api_key=key, max_retries=0, timeout=timeout
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[list[float]] = []
        for i in range(0, len(texts), self.batch_size):
            # The API refuses empty strings; a single space embeds as "nothing".
            batch = [t if t.strip() else " " for t in texts[i : i + self.batch_size]]
            rows += self._request(batch)
        if not rows:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        matrix = normalise(np.array(rows, dtype=np.float32))
        if self.dimension is not None and matrix.shape[1] != self.dimension:
            raise LLMError(
                f"{self.name} returned {matrix.shape[1]}-dimensional vectors, not {self.dimension}"
            )
        self.dimension = matrix.shape[1]
        return matrix

    def _request(self, batch: list[str]) -> list[list[float]]:
        self._clients.for_loop(background_loop())
        return run_sync(self._arequest(batch))

    async def _arequest(self, batch: list[str]) -> list[list[float]]:
        name = f"the embeddings endpoint {self.base_url}"
        call = EndpointCall(name, self.timeout_seconds, self.max_retries)
        client = self._clients.get()  # openai is loaded from here on (llm/endpoint.py)
        import openai

        async def attempt() -> httpx2.Response:
            raw = await client.embeddings.with_raw_response.create(
                model=self.model, input=batch, encoding_format="float"
            )
            return raw.http_response

        try:
            response = await call.run(attempt)
        except openai.APIStatusError as exc:
            raise LLMError(
                f"{name} answered {exc.status_code}: {error_text(exc)}{call.attempts_note()}"
            ) from exc
        return _vectors(json_answer(response, name, json.loads), len(batch), self.name)


def embedding_dimension(model: str, base_url: str, api_key: str, timeout: float) -> int:
    """The dimension of one vector from the endpoint's `model`, asked once with
    no retries (`memgpt-lite doctor`: a diagnosis reports, never masks)."""
    embedder = EndpointEmbedder(
        model, base_url=base_url, api_key=api_key, max_retries=0, timeout_seconds=timeout
    )
    return int(embedder.embed(["memgpt-lite doctor"]).shape[1])


def _vectors(data: Any, expected: int, name: str) -> list[list[float]]:
    """The embeddings in an answer, in input order, or an LLMError."""
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise LLMError(f"{name} answered without a list of embeddings")
    if len(items) != expected:
        raise LLMError(f"{name} returned {len(items)} vectors for {expected} texts")
    ordered = sorted(items, key=lambda i: i["index"] if isinstance(i.get("index"), int) else 0)
    vectors = [item.get("embedding") for item in ordered]
    if not all(
        isinstance(v, list) and v and all(isinstance(x, int | float) for x in v) for v in vectors
    ):
        raise LLMError(f"{name} answered an embedding that is not a list of numbers")
    return vectors


def check_embedder_name(spec: str, source: str | None = None) -> str:
    """`spec` if it names an embedder make_embedder can build, else a
    ConfigError naming `source` (where the setting came from) when given.
    Builds nothing, so it is cheap enough to run before an agent is stored."""
    kind, _, model = spec.partition(":")
    if (kind == "local" and model in ("", "all-MiniLM-L6-v2")) or (kind == "endpoint" and model):
        return spec
    where = f" (from {source})" if source else ""
    raise ConfigError(
        f"unknown embedder {spec!r}{where}: use 'local' (offline) or 'endpoint:MODEL', "
        "e.g. 'endpoint:text-embedding-3-small' or 'endpoint:nomic-embed-text'"
    )


def make_embedder(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    local_model_dir: Path | None = None,
) -> Embedder:
    """An embedder from its setting: "local" (offline MiniLM, from
    `local_model_dir` when the settings name one: `Settings.embedding_model_dir`)
    or "endpoint:MODEL" (at `base_url` with `api_key`). The caller passes
    them as an edge resolved them (agent/setup.py `embedder_for`)."""
    kind, _, model = check_embedder_name(spec).partition(":")
    if kind == "local":
        from memgpt_lite.embeddings.local import MiniLMEmbedder

        if local_model_dir is None:
            return MiniLMEmbedder()
        return MiniLMEmbedder(local_model_dir, model_dir_source=EMBEDDING_MODEL_DIR_ENV)
    return EndpointEmbedder(model, base_url=base_url, api_key=api_key)
