"""Dates in English text: found, resolved against a reference time, written out.

`find_dates(text, at)` finds date expressions ("yesterday", "last summer",
"May 8, 2023", "3 weeks ago", ...) and gives each an absolute `Period`
(first and last day, inclusive). `annotate(text, at)` writes the absolute
date after every relative expression, in brackets ("I moved yesterday
[2023-05-07]"), so a fact stored today still says when it happened when it
is read next year. `states_time(text)` tells whether a text says when at all.
What a search query names is read by memory/retrieval/questions.py.

Pure stdlib and English only. Conventions, where English is ambiguous:
weeks run Monday to Sunday; seasons are the northern hemisphere's
meteorological ones (winter is December to February, named by the year of
its December); a bare month or "May 8" is the latest one up to the reference
day (and is not annotated: its year is a guess); "on Friday"
is the last Friday before the reference day unless the sentence speaks of
the future ("will", "going to", ...); "next Friday" is the first one after it.
"""

from __future__ import annotations

import calendar
import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import NamedTuple


class Period(NamedTuple):
    """Days from `start` to `end`, both included."""

    start: date
    end: date

    def overlaps(self, other: Period) -> bool:
        return self.start <= other.end and other.start <= self.end

    def contains(self, day: date) -> bool:
        return self.start <= day <= self.end


@dataclass(frozen=True)
class DateMatch:
    start: int  # span in the text
    end: int
    period: Period
    relative: bool  # its meaning depends on when it was said
    # A month or day named without its year and without "last"/"next"/"this":
    # resolved for search, but not written beside the text (see annotate).
    guessed: bool = False


MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS |= {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}
MONTHS["sept"] = 9
WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
# Abbreviated, a weekday is a date only after last/next/this ("sat", "sun", "wed" are words).
SHORT_WEEKDAYS = {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3}
SHORT_WEEKDAYS |= {"fri": 4, "sat": 5, "sun": 6}
SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}  # first month
NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "a couple of": 2,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_WEEKDAY = r"(?P<weekday>" + "|".join(WEEKDAYS) + r")"
_SHORT_WEEKDAY = r"(?P<weekday>" + "|".join(sorted(SHORT_WEEKDAYS, key=len, reverse=True)) + r")\.?"
_SEASON = r"(?P<season>spring|summer|fall|autumn|winter)"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DAY = r"(?P<day>[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_NUMBER = r"(?P<n>\d{1,3}|" + "|".join(sorted(NUMBERS, key=len, reverse=True)) + r")"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_AGO_UNIT = r"(?P<unit>day|weekend|week|month|year)s?"
_WHICH = r"(?P<which>last|next|this|past|coming)"
# "the past week" is the last seven days, not the calendar week before this one.
_WHICH_UNIT = r"(?P<which>last|next|this|coming)"
_FUTURE = re.compile(r"\b(will|going to|gonna|plan(?:ning)? to|'ll|shall|next)\b", re.IGNORECASE)
# An annotation this module wrote (or an ISO date): "[2023-05-07]", "[2022-06..2022-08]".
_ISO = r"\d{4}(?:-\d\d(?:-\d\d)?)?"
ANNOTATION = re.compile(rf"\[(?P<a>{_ISO})(?:\.\.(?P<b>{_ISO}))?\]")
_ANNOTATED = re.compile(rf"\s*\[{_ISO}(?:\.\.{_ISO})?\]")


def _month_period(year: int, month: int) -> Period:
    return Period(date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1]))


def _add_months(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + month - 1 + delta
    return index // 12, index % 12 + 1


def _week(day: date) -> Period:
    monday = day - timedelta(days=day.weekday())
    return Period(monday, monday + timedelta(days=6))


def _season(year: int, first_month: int) -> Period:
    end_year, end_month = _add_months(year, first_month, 2)
    return Period(date(year, first_month, 1), _month_period(end_year, end_month).end)


def _year(year: int) -> Period:
    return Period(date(year, 1, 1), date(year, 12, 31))


def _day(day: date) -> Period:
    return Period(day, day)


def _iso(text: str) -> Period | None:
    """ "2023", "2023-05" or "2023-05-07" as a period (None if not a date)."""
    parts = [int(p) for p in text.split("-")]
    try:
        if len(parts) == 1:
            return _year(parts[0])
        if len(parts) == 2:
            return _month_period(parts[0], parts[1])
        return _day(date(parts[0], parts[1], parts[2]))
    except ValueError:
        return None


# Each rule: a pattern, whether it is relative, and how to resolve its match at a day.
Resolver = Callable[[re.Match[str], date, str], Period | None]


def _simple_day(m: re.Match[str], at: date, text: str) -> Period | None:
    offsets = {
        "today": 0,
        "tonight": 0,
        "this morning": 0,
        "this afternoon": 0,
        "this evening": 0,
        "yesterday": -1,
        "last night": -1,
        "tomorrow": 1,
        "the day before yesterday": -2,
        "the day after tomorrow": 2,
    }
    return _day(at + timedelta(days=offsets[" ".join(m.group(0).lower().split())]))


def _ago(m: re.Match[str], at: date, text: str) -> Period | None:
    word = " ".join(m.group("n").lower().split())
    n = int(word) if word.isdigit() else NUMBERS[word]
    unit = m.group("unit").lower()
    if unit == "day":
        return _day(at - timedelta(days=n))
    if unit == "week":  # "two weeks ago": that week, not one day of it
        return _week(at - timedelta(weeks=n))
    if unit == "weekend":  # "two weekends ago": as "last weekend", a week further back
        saturday = _week(at).start + timedelta(days=5 - 7 * n)
        return Period(saturday, saturday + timedelta(days=1))
    if unit == "month":
        return _month_period(*_add_months(at.year, at.month, -n))
    return _year(at.year - n)


def _shift(m: re.Match[str]) -> int:
    which = m.group("which").lower()
    return {"last": -1, "past": -1, "next": 1, "coming": 1}.get(which, 0)


def _relative_unit(m: re.Match[str], at: date, text: str) -> Period | None:
    shift, unit = _shift(m), m.group("unit").lower()
    if unit == "day":
        return None  # "the last day" is not a date
    if unit == "week":
        return _week(at + timedelta(weeks=shift))
    if unit == "month":
        return _month_period(*_add_months(at.year, at.month, shift))
    return _year(at.year + shift)


def _weekend(m: re.Match[str], at: date, text: str) -> Period | None:
    saturday = _week(at).start + timedelta(days=5 + 7 * _shift(m))
    return Period(saturday, saturday + timedelta(days=1))


def _week_before(m: re.Match[str], at: date, text: str) -> Period | None:
    return _week(at - timedelta(weeks=1))


def _future_sentence(text: str, position: int) -> bool:
    """Whether the sentence around `position` speaks of the future."""
    start = max(text.rfind(c, 0, position) for c in ".!?\n") + 1
    ends = [i for i in (text.find(c, position) for c in ".!?\n") if i >= 0]
    return bool(_FUTURE.search(text, start, min(ends, default=len(text))))


def _weekday(m: re.Match[str], at: date, text: str) -> Period | None:
    name = m.group("weekday").lower()
    target = WEEKDAYS.get(name, SHORT_WEEKDAYS.get(name, 0))
    which = (m.group("which") or "").lower()
    if which == "this":
        return _day(_week(at).start + timedelta(days=target))
    future = which in ("next", "coming") or (not which and _future_sentence(text, m.start()))
    if future:
        return _day(at + timedelta(days=(target - at.weekday() - 1) % 7 + 1))
    return _day(at - timedelta(days=(at.weekday() - target - 1) % 7 + 1))


def _season_period(m: re.Match[str], at: date, text: str) -> Period | None:
    first = SEASONS[m.group("season").lower()]
    if m.group("year"):
        return _season(int(m.group("year")), first)
    # Seasons of the reference year and its neighbours, in order.
    seasons = [_season(y, first) for y in (at.year - 2, at.year - 1, at.year, at.year + 1)]
    which = (m.group("which") or "this").lower()
    if which in ("last", "past"):  # the latest one already over
        return [s for s in seasons if s.end < at][-1]
    if which in ("next", "coming"):  # the first one not begun
        return next(s for s in seasons if s.start > at)
    current = [s for s in seasons if s.contains(at)]
    return current[0] if current else seasons[2]


def _month_day(m: re.Match[str], at: date, text: str) -> Period | None:
    month, day = MONTHS[m.group("month").lower().rstrip(".")], int(m.group("day"))
    # Without its year: the latest one not after the reference day (memory is
    # asked about the past; such dates are not written into text, see annotate).
    year = (
        int(m.group("year")) if m.group("year") else at.year - ((month, day) > (at.month, at.day))
    )
    try:
        return _day(date(year, month, day))
    except ValueError:
        return None  # "February 30"


def _month(m: re.Match[str], at: date, text: str) -> Period | None:
    month = MONTHS[m.group("month").lower().rstrip(".")]
    if m.group("year"):
        return _month_period(int(m.group("year")), month)
    which = (m.groupdict().get("which") or "").lower()
    year = at.year
    if which in ("last", "past") and month >= at.month:
        year -= 1
    elif which in ("next", "coming") and month <= at.month:
        year += 1
    elif not which and month > at.month:  # "in May": the latest May, as for _month_day
        year -= 1
    return _month_period(year, month)


# The days of a part of a month: "the second week of May", "early June".
_PARTS = {
    "first week": (1, 7),
    "second week": (8, 14),
    "third week": (15, 21),
    "fourth week": (22, 28),
    "beginning": (1, 10),
    "start": (1, 10),
    "early": (1, 10),
    "middle": (11, 20),
    "mid": (11, 20),
    "end": (21, 31),
    "late": (21, 31),
}


def _month_part(m: re.Match[str], at: date, text: str) -> Period | None:
    month = _month(m, at, text)
    if month is None:
        return None
    part = " ".join(m.group("part").lower().split())
    if part == "last week":
        return Period(month.end - timedelta(days=6), month.end)
    first, last = _PARTS[part]
    return Period(month.start.replace(day=first), month.start.replace(day=min(last, month.end.day)))


def _year_only(m: re.Match[str], at: date, text: str) -> Period | None:
    return _year(int(m.group("year")))


def _iso_match(m: re.Match[str], at: date, text: str) -> Period | None:
    return _iso(m.group(0))


def _annotation(m: re.Match[str], at: date, text: str) -> Period | None:
    first = _iso(m.group("a"))
    last = _iso(m.group("b")) if m.group("b") else first
    return Period(first.start, last.end) if first and last else None


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str]
    resolve: Resolver
    relative: bool  # unless the match names its year
    guesses_year: bool  # without its year or "last"/"next"/"this", the year is a guess
    # The rule runs only on text holding one of these words (see _tokens):
    # thirteen scans of every text would cost more than the rest of an insert.
    triggers: frozenset[str]
    needs_lead: bool = False  # alone ("May", "fall"), it is a date only after a preposition


def _rule(
    pattern: str,
    resolve: Resolver,
    relative: bool,
    triggers: str | Iterable[str],
    needs_lead: bool = False,
) -> Rule:
    words = frozenset(triggers.split() if isinstance(triggers, str) else triggers)
    guesses = resolve in (_month, _month_day, _month_part)
    compiled = re.compile(rf"\b{pattern}\b", re.IGNORECASE)
    return Rule(compiled, resolve, relative, guesses, words, needs_lead)


_DAY_WORDS = (
    r"(?:the\s+day\s+before\s+yesterday|the\s+day\s+after\s+tomorrow|yesterday|today|tonight"
    r"|tomorrow|last\s+night|this\s+(?:morning|afternoon|evening))"
)
_UNITS = "day days week weeks month months year years"
# Longer, more specific rules first: at the same place, the first rule's match wins.
RULES = (
    Rule(ANNOTATION, _annotation, False, False, frozenset(["<bracket>"])),
    _rule(r"\d{4}-\d\d-\d\d", _iso_match, False, "<year>"),
    _rule(rf"{_MONTH}\s+{_DAY}(?:(?:,\s*|\s+){_YEAR})?", _month_day, True, MONTHS),
    _rule(rf"(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?", _month_day, True, MONTHS),
    _rule(
        rf"(?:the\s+)?(?P<part>(?:first|second|third|fourth|last)\s+week|beginning|start|middle"
        rf"|end)\s+of\s+{_MONTH}(?:,?\s+{_YEAR})?",
        _month_part,
        True,
        MONTHS,
    ),
    _rule(rf"(?P<part>early|mid|late)[\s-]+{_MONTH}(?:,?\s+{_YEAR})?", _month_part, True, MONTHS),
    _rule(
        rf"(?:{_WHICH}\s+)?{_SEASON}(?:\s+(?:of\s+)?{_YEAR})?", _season_period, True, SEASONS, True
    ),
    _rule(rf"(?:{_WHICH}\s+)?{_MONTH}(?:\s+(?:of\s+)?{_YEAR})?", _month, True, MONTHS, True),
    _rule(
        _DAY_WORDS,
        _simple_day,
        True,
        "yesterday today tonight tomorrow night morning afternoon evening",
    ),
    _rule(rf"{_NUMBER}\s+{_AGO_UNIT}\s+ago", _ago, True, "ago"),
    _rule(rf"{_WHICH_UNIT}\s+weekend", _weekend, True, "weekend"),
    _rule(rf"{_WHICH_UNIT}\s+{_UNIT}", _relative_unit, True, _UNITS),
    _rule(r"the\s+week\s+before", _week_before, True, "week"),
    _rule(rf"(?:{_WHICH}\s+)?{_WEEKDAY}", _weekday, True, WEEKDAYS),
    _rule(rf"{_WHICH}\s+{_SHORT_WEEKDAY}", _weekday, True, SHORT_WEEKDAYS),
    _rule(_YEAR, _year_only, False, "<year>"),
)
# The rules that can match an absolute date: search reads only these in stored
# text, for every candidate of a query naming a period (half the cost of all).
ABSOLUTE_RULES = tuple(r for r in RULES if not r.relative or "year" in r.pattern.groupindex)
_TOKEN = re.compile(r"[a-z]+|(?<!\d)(?:19|20)\d\d(?!\d)|\[")


def _tokens(text: str) -> set[str]:
    """The lower-cased words of `text`, "<year>" if it holds a year's digits
    and "<bracket>" if it holds "[": what selects the rules to run."""
    tokens = set(_TOKEN.findall(text.lower()))
    if "[" in tokens:
        tokens.add("<bracket>")
    if any(t[0].isdigit() for t in tokens):
        tokens.add("<year>")
    return tokens


# A bare month name is a date only after one of these ("in May", not "May I").
_MONTH_LEAD = re.compile(
    r"\b(in|since|during|until|till|by|of|early|late|mid|from|through|last|next|this|past"
    r"|coming|before|after)\s+(?:the\s+)?$",
    re.IGNORECASE,
)


def _lead_ok(rule: Rule, m: re.Match[str], text: str) -> bool:
    if not rule.needs_lead or m.group("which") or m.group("year"):
        return True
    return bool(_MONTH_LEAD.search(text, max(0, m.start() - 20), m.start()))


def find_dates(text: str, at: date | datetime, rules: Sequence[Rule] = RULES) -> list[DateMatch]:
    """The date expressions of `text`, in order, resolved at `at` (a
    datetime counts by its own date: UTC for stored times). Where two
    overlap, the one starting first wins, then the longer."""
    day = at.date() if isinstance(at, datetime) else at
    tokens = _tokens(text)
    found: list[tuple[int, int, int, DateMatch]] = []
    for order, rule in enumerate(rules):
        if tokens.isdisjoint(rule.triggers):
            continue
        for m in rule.pattern.finditer(text):
            if not _lead_ok(rule, m, text):
                continue
            period = rule.resolve(m, day, text)
            if period is None:
                continue
            groups = m.groupdict()
            relative = rule.relative and not groups.get("year")
            guessed = relative and rule.guesses_year and not groups.get("which")
            match = DateMatch(m.start(), m.end(), period, relative, guessed)
            found.append((m.start(), m.start() - m.end(), order, match))
    found.sort(key=lambda item: item[:3])
    chosen: list[DateMatch] = []
    for _, _, _, match in found:
        if not chosen or match.start >= chosen[-1].end:
            chosen.append(match)
    return chosen


def format_period(period: Period) -> str:
    """ "2023-05-07", "2023-05", "2022", "2022-06..2022-08" or "2023-05-01..2023-05-07"."""
    start, end = period
    if start == end:
        return start.isoformat()
    if start.day == 1 and end == _month_period(end.year, end.month).end:
        if start.year == end.year and (start.month, end.month) == (1, 12):
            return str(start.year)
        first, last = f"{start:%Y-%m}", f"{end:%Y-%m}"
        return first if first == last else f"{first}..{last}"
    return f"{start.isoformat()}..{end.isoformat()}"


def annotate(text: str, at: date | datetime) -> str:
    """`text` with the absolute date, in brackets, after each relative date
    expression ("yesterday [2023-05-07]"). Text already annotated is left as
    it is, so annotating twice changes nothing. A month or day named without
    its year ("in April", "on June 3") is left alone: as often as an event
    it is a habit or a birthday, and a year beside it would claim what the
    speaker did not say (the passage's own time still shows when it was said)."""
    parts: list[str] = []
    done = 0
    for match in find_dates(text, at):
        if not match.relative or match.guessed or _ANNOTATED.match(text, match.end):
            continue
        parts += [text[done : match.end], f" [{format_period(match.period)}]"]
        done = match.end
    return "".join(parts) + text[done:] if parts else text


def dated_within(text: str, created_at: datetime, period: Period) -> bool:
    """Whether a stored item belongs to `period`: it was stored then, or its
    text holds an absolute date (an annotation, an ISO date, "May 8, 2023")
    inside it. Relative expressions not annotated are not read: they may be
    relative to a time other than the item's."""
    if period.contains(created_at.date()):
        return True
    return any(
        period.start <= dated.start and dated.end <= period.end
        for dated in _absolute_dates(text, created_at)
    )


# What an absolute date in stored text holds: a year's digits, or the "[" of
# an annotation (ABSOLUTE_RULES match only text holding a "<year>" or
# "<bracket>" token, or a month or season name with its year). Text without
# either is dated by its stored time alone, unparsed.
_MAY_HOLD_DATE = re.compile(r"\[|(?<!\d)(?:19|20)\d\d(?!\d)")


def _absolute_dates(text: str, created_at: datetime) -> tuple[Period, ...]:
    """The periods of the absolute dates in a stored text; none, unparsed,
    when it holds neither a year nor a bracket."""
    if _MAY_HOLD_DATE.search(text) is None:
        return ()
    return _parsed_dates(text, created_at)


@functools.lru_cache(maxsize=4096)
def _parsed_dates(text: str, created_at: datetime) -> tuple[Period, ...]:
    """`_absolute_dates` parsed, kept across searches: the same items come
    up again, and parsing them (about 70 µs each) was 4 ms of a dated
    archival search's 50."""
    return tuple(m.period for m in find_dates(text, created_at, ABSOLUTE_RULES) if not m.relative)


# "for three years", "since 2019", "for a couple of weeks": a span of time,
# which tells when as a date does ("I've had them for 3 years").
_DURATION = re.compile(
    rf"\b(?:for|since)\s+(?:the\s+(?:past|last)\s+)?(?:a\s+few|several|many|{_NUMBER})"
    r"\s+(?:day|week|month|year|decade)s?\b",
    re.IGNORECASE,
)
_ANY_DAY = date(2000, 1, 1)  # what a date is resolved at only to know that it is one


@functools.lru_cache(maxsize=4096)
def states_time(text: str) -> bool:
    """Whether `text` says when, or for how long: a date expression of any
    kind (absolute, relative, an annotation) or a span ("for 3 years")."""
    return _DURATION.search(text) is not None or bool(find_dates(text, _ANY_DAY))
