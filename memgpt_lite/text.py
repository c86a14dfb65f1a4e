"""Text made valid at the boundaries, and JSON parsed without surprises.

Text reaches an agent from the user, the model, tool results, files and the
command line. Some of it cannot be stored or sent as it is: a lone UTF-16
surrogate (models emit `\\ud800` in JSON, and a non-UTF-8 byte in `argv`
arrives as one) makes SQLite and UTF-8 encoders raise, and a strict JSON parser
refuses it. `clean_text` replaces each lone surrogate with U+FFFD, so what is
stored and sent is always valid UTF-8; the pydantic models apply it to every
text field (`CleanStr`), so nothing unclean can be persisted.

The model's tool-call arguments are JSON text that may be anything: invalid,
nested thousands of levels deep, holding a number of thousands of digits, or
NaN. `parse_json` turns each of those into one `JSONProblem` with a reason a
model can act on, instead of a RecursionError or ValueError from deep inside.
"""

from __future__ import annotations

import gc
import json
import math
import re
from collections.abc import Iterable
from typing import Annotated, Any

from pydantic import AfterValidator

REPLACEMENT_CHARACTER = "\ufffd"
# Deep enough for any real tool schema; shallow enough that code walking the
# value recursively (validation, cleaning, rendering) can never overflow.
MAX_JSON_DEPTH = 64
# An escaped UTF-16 surrogate inside JSON text, such as \ud800.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
# Shorter JSON text cannot nest near the recursion limit (see loads_strict).
_GC_SAFE_LENGTH = 256
_SURROGATE_ESCAPE_BYTES = re.compile(_SURROGATE_ESCAPE.pattern.encode())


class JSONProblem(ValueError):
    """JSON text that cannot be used; the message says why, in plain words."""


def clean_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD. A surrogate pair
    (as hand-decoded UTF-16 leaves in a str) becomes the character it encodes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def clean_texts(texts: Iterable[str] | None) -> list[str] | None:
    """`clean_text` of each string (tags, batches of inputs); None stays None."""
    return None if texts is None else [clean_text(text) for text in texts]


def clean_value(value: Any) -> Any:
    """A parsed JSON value with `clean_text` applied to every string and key.
    The value must be no deeper than MAX_JSON_DEPTH (see `parse_json`)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [clean_value(item) for item in value]
    if isinstance(value, dict):
        return {clean_text(key): clean_value(item) for key, item in value.items()}
    return value


def _finite_float(literal: str) -> float:
    number = float(literal)
    if not math.isfinite(number):
        raise JSONProblem(f"the number {literal[:20]} is out of range")
    return number


def _refuse_constant(name: str) -> Any:
    raise JSONProblem(f"{name} is not a JSON value")


def _depth(value: Any) -> int:
    """How deeply `value` nests lists and objects, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest


def loads_strict(text: str | bytes) -> Any:
    """`json.loads` refusing, with a JSONProblem, what a strict parser refuses
    and Python's accepts (NaN, Infinity, numbers out of range), and what it
    cannot read (invalid JSON or UTF-8, thousands of digits, deep nesting).
    Strings are returned as they are: lone surrogates included."""
    # No garbage collection during the parse: one triggered while deep
    # nesting has the parser near the recursion limit would run other objects'
    # finalizers there, and they would fail with a RecursionError of their own.
    # (A short text cannot nest deeply enough for that: the common case,
    # such as each chunk of a streamed answer, skips the switch.)
    collecting = gc.isenabled() and len(text) > _GC_SAFE_LENGTH
    if collecting:
        gc.disable()
    try:
        return json.loads(text, parse_float=_finite_float, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise JSONProblem(f"not valid JSON ({exc.msg} at {where})") from None
    except UnicodeDecodeError:
        raise JSONProblem("not valid UTF-8") from None
    except RecursionError:
        raise JSONProblem(f"nested more than {MAX_JSON_DEPTH} levels deep") from None
    except JSONProblem:
        raise
    except ValueError:  # an integer of thousands of digits
        raise JSONProblem("a number has too many digits") from None
    finally:
        if collecting:
            gc.enable()


def parse_json(text: str | bytes) -> Any:
    """Parse JSON text strictly (`loads_strict`): the value, with its strings
    cleaned, or a JSONProblem, also for nesting deeper than MAX_JSON_DEPTH."""
    value = loads_strict(text)
    # The walks below are skipped for the usual text, where the counts of
    # brackets and the search for surrogates show they cannot find anything.
    square, curly = ("[", "{") if isinstance(text, str) else (b"[", b"{")
    opened = text.count(square) + text.count(curly)  # type: ignore[arg-type]
    if opened > MAX_JSON_DEPTH and _depth(value) > MAX_JSON_DEPTH:
        raise JSONProblem(f"nested more than {MAX_JSON_DEPTH} levels deep")
    return clean_value(value) if _may_hold_surrogates(text) else value


def _may_hold_surrogates(text: str | bytes) -> bool:
    """Whether parsing `text` may give strings with lone surrogates: escaped
    ones, or, in a str, raw ones (strict UTF-8 decoding of bytes gives none)."""
    if isinstance(text, bytes):
        return _SURROGATE_ESCAPE_BYTES.search(text) is not None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return _SURROGATE_ESCAPE.search(text) is not None


def parse_arguments(arguments: str) -> dict[str, Any]:
    """A tool call's arguments as a dict ("" is {}), or a JSONProblem."""
    if not arguments.strip():
        return {}
    value = parse_json(arguments)
    if not isinstance(value, dict):
        raise JSONProblem("the arguments must be a JSON object")
    return value


def clean_arguments(arguments: str) -> str:
    """Tool-call arguments safe to store and send back to an API: kept as
    sent unless they hold a lone surrogate, raw or escaped. Valid JSON is then
    re-serialized with its strings cleaned; anything else has each escaped
    surrogate replaced (it is invalid JSON either way, and the tool says so)."""
    arguments = clean_text(arguments)
    if not _SURROGATE_ESCAPE.search(arguments):
        return arguments
    try:
        value = parse_json(arguments)
    except JSONProblem:
        return _SURROGATE_ESCAPE.sub(r"\\ufffd", arguments)
    return json.dumps(value, ensure_ascii=False)


# A str field of a pydantic model that can only ever hold valid UTF-8 text.
CleanStr = Annotated[str, AfterValidator(clean_text)]
