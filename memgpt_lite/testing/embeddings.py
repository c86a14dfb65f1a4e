"""Deterministic fake embeddings for the fake OpenAI server.

A real embedding model cannot run offline in a test, but archival-memory search
still needs vectors whose similarity means something. These are hashed bags of
words: texts that share (stemmed, non-stop) words point the same way, unrelated
texts are nearly orthogonal. The hash is blake2b, not Python's ``hash()``, so a
vector is the same in every process and tests can compute the expected value
with :func:`fake_embedding`.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import struct
from collections.abc import Sequence
from typing import Any

import tiktoken

from memgpt_lite.testing.validation import INVALID_INPUT, Rejected

DEFAULT_DIMENSION = 64

# Small on purpose: enough that "the cat" and "the dog" do not look alike
# through "the", without pretending to be a real stop-word list.
_STOP_TEXT = (
    "a an and are as at be been but by do does for from had has have he her his i if in "
    "into is it its me my no not of on or our she so that the their them they this to "
    "was we were what when which who will with you your"
)
STOP_WORDS = frozenset(_STOP_TEXT.split())
# (suffix, replacement), tried in order; only the first that fits is applied.
_SUFFIXES = (("ies", "y"), ("ing", ""), ("ed", ""), ("ly", ""), ("s", ""))
_WORD = re.compile(r"\w+")


def _stem(word: str) -> str:
    """A crude stemmer: "walking", "walked" and "walks" all become "walk".

    After the suffix, a final "e" and a doubled last letter go too, so that
    "liked"/"like" and "running"/"run" meet. It is applied to every word, so
    its mistakes are at least consistent."""
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith("ss"):
                break  # "class", "glass": not a plural
            word = word[: -len(suffix)] + replacement
            break
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2]:
        word = word[:-1]
    return word


def words(text: str) -> list[str]:
    """The stemmed, lower-cased, non-stop-word tokens that make up a text's vector."""
    return [_stem(w) for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


def _to_float32(values: Sequence[float]) -> list[float]:
    # The real API's vectors are float32; rounding here makes the "float" and
    # "base64" encodings of one vector decode to exactly the same numbers.
    return list(struct.unpack(f"<{len(values)}f", struct.pack(f"<{len(values)}f", *values)))


def fake_embedding(
    text: str, dimension: int = DEFAULT_DIMENSION, *, truncate_to: int | None = None
) -> list[float]:
    """The vector the fake server returns for ``text``: a unit-length float32 list.

    Each word is hashed to a bucket in ``range(dimension)`` with a hashed sign
    of +1 or -1; the sum is L2-normalised. ``truncate_to`` gives what the server
    returns for a request with ``dimensions``: the first buckets only,
    re-normalised. A text with no words gets a fixed unit vector."""
    if not (isinstance(dimension, int) and dimension >= 1):
        raise ValueError(f"dimension must be a positive int, got {dimension!r}")
    size = dimension if truncate_to is None else truncate_to
    if not (isinstance(size, int) and 1 <= size <= dimension):
        raise ValueError(f"truncate_to must be an int in 1..{dimension}, got {truncate_to!r}")
    vector = [0.0] * dimension
    for word in words(text):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        bucket = int.from_bytes(digest[:4], "little") % dimension
        vector[bucket] += 1.0 if digest[4] & 1 else -1.0
    # Truncating before normalising equals truncating a unit vector and
    # re-normalising it, which is what `dimensions` does in the real API.
    vector = vector[:size]
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        # All-equal components: about as far from any one word's vector as
        # possible, so empty texts do not match anything in particular.
        return _to_float32([1.0 / math.sqrt(size)] * size)
    return _to_float32([v / norm for v in vector])


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors, for tests that compare embeddings."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norms if norms else 0.0


def encode_base64(vector: Sequence[float]) -> str:
    """``encoding_format="base64"``: little-endian float32 bytes, base64-encoded."""
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")


def input_texts(raw: Any, encoding: tiktoken.Encoding) -> tuple[list[str], int]:
    """The texts of a validated ``input`` and its token count (the usage).

    Token-id arrays are decoded with the model's encoding, so embedding the
    tokens of a text gives the same vector as embedding the text."""
    items = [raw] if isinstance(raw, str) or (raw and isinstance(raw[0], int)) else raw
    texts: list[str] = []
    tokens = 0
    for item in items:
        if isinstance(item, str):
            texts.append(item)
            tokens += len(encoding.encode_ordinary(item))
            continue
        try:
            data = encoding.decode_bytes(item)
        except (KeyError, ValueError, OverflowError) as exc:  # an id not in the vocabulary
            raise Rejected(INVALID_INPUT, "input") from exc
        texts.append(data.decode("utf-8", errors="replace"))
        tokens += len(item)
    return texts, tokens


def embedding_response(
    body: dict[str, Any], texts: list[str], prompt_tokens: int, dimension: int
) -> dict[str, Any]:
    """The answer to a validated request: a ``list`` of ``embedding`` objects in
    the real API's shape, for a model whose vectors have ``dimension`` floats."""
    size = body.get("dimensions")
    vectors = [fake_embedding(text, dimension, truncate_to=size) for text in texts]
    as_base64 = body.get("encoding_format") == "base64"
    data = [
        {
            "object": "embedding",
            "index": i,
            "embedding": encode_base64(vector) if as_base64 else vector,
        }
        for i, vector in enumerate(vectors)
    ]
    return {
        "object": "list",
        "data": data,
        "model": body["model"],
        "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens},
    }
