"""Each ranking weight's share of LoCoMo recall (`locomo_retrieval.py
--shares`): recall as shipped minus recall with the weight set to its
neutral value (a boost to 1, an exponent or a pass's weight to 0, a step to
nothing), over all conversations and over each half. A weight whose share is
under half a point on either half does not earn its place.

`SHARES` names each weight and what removes it, as `overrides.overridden`
takes it: the modules read these names when they run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from overrides import overridden

SHARES: dict[str, dict[str, Any]] = {
    "feedback pass": {"ranking.FEEDBACK_WEIGHT": 0.0},
    "date in query": {"ranking.DATE_BOOST": 1.0},
    "time asked": {"ranking.TIME_BOOST": 1.0},
    "subject": {"ranking.SUBJECT_BOOST": 1.0},
    "question penalty": {"ranking.QUESTION_PENALTY": 1.0},
    "length": {"ranking.LENGTH_EXPONENT": 0.0},
    "answer after asking": {"ranking.ANSWER_SHARE": 0.0},
    "session": {"ranking.SESSION_SHARE": 0.0},
    "dates annotated": {"passages.annotate": lambda text, at: text},
    "vectors (hybrid only)": {"fusion.VECTOR_WEIGHT": 0.0},
    "answer near (hybrid)": {"search.VECTOR_ANSWER_SHARE": 0.0},
    "unranked words (hybrid)": {"fusion.unranked_words": lambda lexical: 0.0},
}


class Recalls(Protocol):
    def recall(
        self, k: int, conversations: Sequence[str] | None = None, category: int | None = None
    ) -> float: ...


def _delta(
    shipped: Recalls,
    without: Recalls,
    k: int,
    part: Sequence[str] | None,
    category: int | None = None,
) -> float:
    return shipped.recall(k, part, category) - without.recall(k, part, category)


def report_shares(
    name: str,
    shipped: Recalls,
    rerun: Callable[[], Recalls],
    split: tuple[list[str], list[str]],
    ks: Sequence[int] = (5, 10),
    categories: Sequence[int] = (1, 2, 3, 4, 5),
) -> None:
    """Print each entry of SHARES's share: `shipped`'s recall minus that of
    `rerun()` with the entry in force, in points."""
    parts: list[Sequence[str] | None] = [None, *split]
    print(f"\n== shares, {name}: recall with each weight minus without it (points)")
    print(
        f"{'weight':<20}"
        + "".join(f"{h + ' @5':>7}{'@10':>6} " for h in ("all", "A", "B"))
        + "  @5 by category "
        + " ".join(f"{c:>5}" for c in categories)
    )
    for label, settings in SHARES.items():
        try:
            with overridden(settings):
                without = rerun()
        except SystemExit as exc:  # a name retired from the modules
            print(f"{label:<20}not measured: {exc}")
            continue

        delta = functools.partial(_delta, shipped, without)
        cells = "".join(f"{delta(ks[0], p):>+7.1f}{delta(ks[1], p):>+6.1f} " for p in parts)
        by_category = " ".join(f"{delta(ks[0], None, c):>+5.1f}" for c in categories)
        print(f"{label:<20}{cells}  {'':16}{by_category}")
