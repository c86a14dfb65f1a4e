"""Embedders behind one small interface: `name`, `dimension`, `embed(texts)`.

- `EndpointEmbedder`: any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI,
  Ollama, vLLM, llama.cpp server, LM Studio), batched, retried by the `openai`
  client on 429, 5xx, timeouts and dropped connections.
- `MiniLMEmbedder` (`local_embedder.py`): all-MiniLM-L6-v2 run with numpy, offline.

An agent records the name and dimension of the embedder its vectors came from;
a different embedder is refused with `EmbeddingMismatchError` until the agent
is re-embedded (`memgpt-lite archival NAME reembed`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import openai

from .errors import ConfigError, LLMError
from .llm import error_text, resolve_endpoint
from .models import LLMConfig


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
    """Embeddings from an OpenAI-compatible endpoint."""

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
        self.base_url, key = resolve_endpoint(LLMConfig(model=model), base_url, api_key)
        self.client = openai.OpenAI(
            base_url=self.base_url, api_key=key, max_retries=max_retries, timeout=timeout_seconds
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
        try:
            response = self.client.embeddings.create(
                model=self.model, input=batch, encoding_format="float"
            )
        except openai.APIStatusError as exc:
            raise LLMError(
                f"the embeddings endpoint {self.base_url} answered {exc.status_code}: "
                f"{error_text(exc)}"
            ) from exc
        except openai.APIConnectionError as exc:
            raise LLMError(f"cannot reach the embeddings endpoint {self.base_url}: {exc}") from exc
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(batch):
            raise LLMError(f"{self.name} returned {len(data)} vectors for {len(batch)} texts")
        return [list(item.embedding) for item in data]


def make_embedder(
    spec: str, *, base_url: str | None = None, api_key: str | None = None
) -> Embedder:
    """An embedder from its setting: "local" (offline MiniLM) or "endpoint:MODEL"."""
    kind, _, model = spec.partition(":")
    if kind == "local" and model in ("", "all-MiniLM-L6-v2"):
        from .local_embedder import MiniLMEmbedder

        return MiniLMEmbedder()
    if kind == "endpoint" and model:
        return EndpointEmbedder(model, base_url=base_url, api_key=api_key)
    raise ConfigError(
        f"unknown embedder {spec!r}: use 'local' (offline) or 'endpoint:MODEL', "
        "e.g. 'endpoint:text-embedding-3-small' or 'endpoint:nomic-embed-text'"
    )
