"""Embeddings kept on disk between benchmark runs: an embedder's vectors for
the same texts never change, and embedding LoCoMo's 3,800 turns and
questions with a numpy BERT takes minutes on two cores.

`CachedEmbedder` wraps an embedder under its own name and dimension, so an
agent cannot tell them apart; texts it has seen are answered from
`<cache dir>/<embedder name>.npz`, the others are embedded and added
(`save()` writes them). The cache directory is `benchmarks/.cache/`
(gitignored) unless a benchmark is told another.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memgpt_lite.embeddings.embedder import Embedder

DEFAULT_DIR = Path(__file__).parent / ".cache" / "embeddings"
_UNSAFE = re.compile(r"[^\w.-]+")  # what a file name should not hold


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachedEmbedder:
    """`inner`'s vectors, from the cache file when it holds them."""

    def __init__(self, inner: Embedder, directory: Path = DEFAULT_DIR) -> None:
        self.inner = inner
        self.name = inner.name
        self.path = directory / (_UNSAFE.sub("_", inner.name) + ".npz")
        self._vectors: dict[str, np.ndarray] = {}
        if self.path.is_file():
            with np.load(self.path) as stored:
                self._vectors = dict(zip(stored["keys"], stored["vectors"], strict=True))
        self._added = 0
        self.embed_seconds = 0.0  # time spent embedding what the cache lacked

    @property
    def dimension(self) -> int | None:
        if self._vectors:
            return int(next(iter(self._vectors.values())).shape[0])
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [_key(text) for text in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self._vectors))
        if missing:
            by_key = dict(zip(keys, texts, strict=True))
            started = time.perf_counter()
            vectors = self.inner.embed([by_key[k] for k in missing])
            self.embed_seconds += time.perf_counter() - started
            self._vectors.update(zip(missing, vectors, strict=True))
            self._added += len(missing)
        if not keys:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        return np.stack([self._vectors[k] for k in keys]).astype(np.float32)

    def save(self) -> None:
        """Write the cache file if anything was added to it."""
        if not self._added:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = np.array(list(self._vectors), dtype="U64")
        vectors = np.stack(list(self._vectors.values())).astype(np.float32)
        temporary = self.path.with_suffix(".tmp.npz")
        np.savez(temporary, keys=keys, vectors=vectors)
        temporary.replace(self.path)
        self._added = 0
