"""Ranking settings changed for one measurement: module constants (weights,
depths) and functions, set by dotted name and put back afterwards.

    with overridden({"ranking.SUBJECT_BOOST": 1.0}):
        ...   # search ranks as if the weight were not there

Names are `module.ATTRIBUTE`, the module by its last part for memgpt_lite's
retrieval modules (`ranking`, `search`, `fusion`, `dates`, `words`, `fulltext`,
`passages`) or in full. A benchmark measures a weight's share this way, and
tries a value before it is written into the module; the ranking code reads
these names when it runs, so nothing else needs to know.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

SHORT_NAMES = {
    "ranking": "memgpt_lite.memory.retrieval.ranking",
    "search": "memgpt_lite.memory.retrieval.search",
    "fusion": "memgpt_lite.memory.retrieval.fusion",
    "dates": "memgpt_lite.memory.retrieval.dates",
    "words": "memgpt_lite.storage.core.words",
    "fulltext": "memgpt_lite.storage.sqlite.fulltext",
    "passages": "memgpt_lite.memory.archival.passages",
}


def _target(name: str) -> tuple[Any, str]:
    module_name, _, attribute = name.rpartition(".")
    module = importlib.import_module(SHORT_NAMES.get(module_name, module_name))
    if not hasattr(module, attribute):
        raise SystemExit(f"{name}: {module.__name__} has no {attribute}")
    return module, attribute


@contextmanager
def overridden(settings: Mapping[str, Any]) -> Iterator[None]:
    """Within the block, each named attribute holds the value given."""
    saved = []
    try:
        for name, value in settings.items():
            module, attribute = _target(name)
            saved.append((module, attribute, getattr(module, attribute)))
            setattr(module, attribute, value)
        yield
    finally:
        for module, attribute, value in reversed(saved):
            setattr(module, attribute, value)


def parse_setting(text: str) -> tuple[str, float]:
    """ "ranking.SUBJECT_BOOST=1.3" as a name and a number (a --set option;
    a whole number stays an int: depths and counts index lists)."""
    name, sep, value = text.partition("=")
    try:
        if not sep:
            raise ValueError
        number = float(value)
        return name.strip(), int(number) if value.strip().lstrip("-").isdigit() else number
    except ValueError:
        raise SystemExit(f"--set takes NAME=NUMBER, not {text!r}") from None
