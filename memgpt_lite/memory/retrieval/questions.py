"""What a search query asks for, read from its words: the period it names
(`query_period`), whether it asks when (`asks_time`), and whom it names
(`query_names`). Ranking (memory/retrieval/ranking.py) weighs passages by
these; nothing here depends on what is stored.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime, timedelta

from memgpt_lite.memory.retrieval.dates import Period, find_dates
from memgpt_lite.storage.core.words import STOP_WORDS, WORD

_OPEN = re.compile(r"\b(before|until|till|by|after|since)\s+(?:the\s+)?$", re.IGNORECASE)


# The time of the newest item in memory, asked for only when a query needs it.
Latest = Callable[[], date | datetime | None]


def query_period(query: str, now: date | datetime, latest: Latest | None = None) -> Period | None:
    """The period a search query names: the span of every date in it, a date
    after "before"/"after" read as open-ended. None if it names none.

    Its relative dates are resolved at `now`, unless it names a date in full:
    then they are told from that one ("the week before August 3, 2023",
    "last Friday, on 23 January 2022", "between August 11 and August 15
    2023"), and the period is their span with it. A month or day named
    without its year ("in May") is the latest one up to what `latest`
    returns, when given (the time of the newest item in memory: the May
    memory can tell of); it is called only for such a query."""
    found = find_dates(query, now)
    anchor = next((m for m in found if not m.relative), None)
    if anchor is not None and any(m.relative for m in found):
        told = find_dates(query, anchor.period.end)
        return Period(min(m.period.start for m in told), max(m.period.end for m in told))
    newest = latest() if latest is not None and any(m.guessed for m in found) else None
    if newest is not None:
        at_latest = {(m.start, m.end): m for m in find_dates(query, newest)}
        found = [at_latest.get((m.start, m.end), m) if m.guessed else m for m in found]
    periods = [_open_ended(query, m.start, m.period) for m in found]
    if not periods:
        return None
    return Period(min(p.start for p in periods), max(p.end for p in periods))


def _open_ended(query: str, position: int, period: Period) -> Period:
    """`period`, named at `position` in `query`, open-ended when "before",
    "after", "since", "until" or "by" comes just before it."""
    bound = _OPEN.search(query, max(0, position - 12), position)
    if bound is None:
        return period
    word = bound.group(1).lower()
    if word == "before":
        return Period(date.min, period.start - timedelta(days=1))
    if word in ("until", "till", "by"):
        return Period(date.min, period.end)
    if word == "after":
        return Period(period.end + timedelta(days=1), date.max)
    return Period(period.start, date.max)  # since


# A question that asks when (or how long): its answer is a time, told in
# whatever words ("yesterday", "last May", "for three years"), so the
# passages that state one are what it looks for (ranking.py TIME_BOOST).
_ASKS_TIME = re.compile(
    r"^\W*(?:(?:since|until|till)\s+)?(?:when|how\s+long|(?:(?:in|on|during|at)\s+)?"
    r"(?:what|which)\s+(?:time|date|day|week|weekend|month|season|year)s?)\b",
    re.IGNORECASE,
)


def asks_time(query: str) -> bool:
    """Whether `query` asks when or how long: "When did ...", "What year
    ...", "How long has ...", "In which month ...", "Since when ..."."""
    return _ASKS_TIME.search(query) is not None


def query_names(query: str) -> set[str]:
    """The capitalised words of a query that are not function words
    (lower-cased): a question's first word is "What" or "When", a name
    anywhere else; a query of keywords may begin with one."""
    return {
        word.lower()
        for word in WORD.findall(query)
        if word[0].isupper() and word.lower() not in STOP_WORDS
    }
