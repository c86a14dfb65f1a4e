"""The ranking policy above storage: the store returns candidates with their
raw word scores (budgeted BM25: storage/core/words.py, whose words and stop
words this module shares), and here they are weighed and fused with archival
search's other signals: pseudo-relevance feedback (`feedback_words`,
`fuse_feedback`), a period named by the query (`date_boosted`), what a
passage is about (`reweighed`: its subject, whether it asks, its length),
for a question asking when, whether it states a time, and where it sits in
a dialogue (`answers_lifted`: the turn after one that asks answers it).
What a query asks for is read by memory/retrieval/questions.py.

Each weight is measured by its share of LoCoMo recall on both halves of the
development split (benchmarks/locomo_retrieval.py --shares); those under
half a point were retired: a hit's names counting twice in the feedback
words (+0.2 overall @5), a period bounded by an event found in memory
("before she moved", +0.3), a boost for the subject's dated past when a
question is in the present perfect (+0.3) and leaving out the frame of
"what kind of" (-0.1).
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

from memgpt_lite.memory.retrieval.dates import states_time
from memgpt_lite.memory.retrieval.questions import asks_time, query_names
from memgpt_lite.storage.core.words import STOP_WORDS, WORD, fts_words

Item = TypeVar("Item")


# Pseudo-relevance feedback: the words that set the best hits apart from the
# other candidates (a name, a place, an object the question did not use) are
# searched again, and what they find counts FEEDBACK_WEIGHT of the question's
# own score. A question whose answer is spread over turns, or needs a second
# hop ("where does Anna's brother live?" finds "my brother Tom"; "Tom" finds
# "Tom lives in Porto"), is then found by the hits' words too. Measured on the
# LoCoMo development split (lexical): recall@5/@10 64.6/73.6 -> 65.3/75.2;
# every setting near these did better than none, none much better than these.
# First-pass candidates, among which the words' rarity is judged: 100 gave
# 65.6/74.8 on LoCoMo and cost more Python per search.
FEEDBACK_DEPTH = 50
FEEDBACK_HITS = 5  # the best hits the words are taken from
FEEDBACK_WORDS = 5  # the words searched again
FEEDBACK_WEIGHT = 0.35  # the second pass's weight, against the question's 1
# The second pass scores at most this many rows (RANK_BUDGET for the first),
# and leaves out the words found in more passages than that (search.py's
# FEEDBACK_OPTIONS): the words it takes from the hits may be common in the
# store, and it must stay a small part of a search's time.
FEEDBACK_BUDGET = 1_000
# A word after another word's letters or a comma, not after ., ! or ? or a colon.
_INNER_CAPITAL = re.compile(r"(?<=[\w,;])\s+(\w+)", re.UNICODE)


def feedback_words(
    query: str, candidates: Sequence[tuple[str, float]], count: int = FEEDBACK_WORDS
) -> list[str]:
    """The words of the best FEEDBACK_HITS of `candidates` (text and score,
    best first) that best set them apart: each word's IDF among the
    candidates (how few hold it), summed over the hits holding it, each hit
    counted by its score relative to the best. The query's own words, numbers
    and words under three letters are left out; of words weighed alike, names
    come first. The IDF is the candidates' own, not the store's: it needs no
    query, and a word common in the store but rare among them still tells
    them apart."""
    if not candidates or candidates[0][1] <= 0:
        return []
    # Stop words, the query's words, numbers and short words are left out.
    skip = STOP_WORDS | set(fts_words(query))
    best = candidates[0][1]
    found_in = [_traits(text).words for text, _ in candidates]
    words_of = [
        {w for w in found if len(w) > 2 and not w.isdigit()} - skip
        for found in found_in[:FEEDBACK_HITS]
    ]
    # How many candidates hold each word of the hits (only those are weighed).
    weighed = set().union(*words_of)
    held: Counter[str] = Counter()
    for found in found_in:
        held.update(found & weighed)
    weight: dict[str, float] = {}
    names: set[str] = set()
    for (text, score), words in zip(candidates, words_of, strict=False):
        names |= proper_names(text)
        for word in words:
            idf = math.log((len(candidates) + 1) / (held[word] + 0.5))
            weight[word] = weight.get(word, 0.0) + max(score, 0.0) / best * idf
    # Among words of equal weight (all of one hit, say), names first: a name
    # is what a second hop looks for ("my brother Tom" -> "Tom lives in ...").
    return sorted(weight, key=lambda w: (-weight[w], w not in names, w))[:count]


def proper_names(text: str) -> set[str]:
    """Words written with a capital inside a sentence (a name, a place),
    lower-cased; a sentence's first word could be any word."""
    return {
        match.group(1).lower()
        for match in _INNER_CAPITAL.finditer(text)
        if match.group(1)[0].isupper()
    }


def fuse_feedback(
    first: Sequence[tuple[int, float]],
    second: Sequence[tuple[int, float]],
    weight: float | None = None,
) -> list[tuple[int, float]]:
    """Items (id, score) of the question's pass and the feedback pass, each
    pass's scores over its best, summed with the second counting `weight`
    (None: FEEDBACK_WEIGHT, read when called); best first (ties: the newer,
    higher id, first, as the store ranks)."""
    weight = FEEDBACK_WEIGHT if weight is None else weight
    fused: dict[int, float] = {}
    for scored, share in ((first, 1.0), (second, weight)):
        best = max((s for _, s in scored), default=0.0)
        for item, score in scored:
            fused[item] = fused.get(item, 0.0) + (share * score / best if best > 0 else 0.0)
    return sorted(fused.items(), key=lambda pair: (-pair[1], -pair[0]))


# A date named in a query ("in May 2023", "last summer") multiplies the word
# score of the items of that period by this: it ranks them first among
# matches about as good, without hiding a better match dated otherwise (or
# dated only by words memory/retrieval/dates.py cannot read).
DATE_BOOST = 1.5


def date_boosted(
    scored: list[tuple[Item, float]], within: Callable[[Item], bool]
) -> tuple[list[tuple[Item, float]], int]:
    """The items reranked with those `within` the period boosted, and how
    many those are."""
    inside = [within(item) for item, _ in scored]
    boosted = [
        (item, score * DATE_BOOST if dated else score)
        for (item, score), dated in zip(scored, inside, strict=True)
    ]
    # Stable: ties keep the store's order.
    return sorted(boosted, key=lambda pair: -pair[1]), sum(inside)


# Two signals of what a passage is about, weighed on its word score (before
# fusion with vectors: memory/retrieval/search.py), measured on the LoCoMo development
# split, lexical; each alone and both together improved every category but
# adversarial, whose questions ask one person about what another did.
# A passage that begins with a name the query names is about that one
# ("Melanie: we went camping", "Anna moved to Porto"); the query's other
# matches may only mention them ("Thanks, Melanie!"). Multi-hop recall@5
# 30.5 -> 36.3, temporal 76.6 -> 79.5, overall 66.0 -> 68.2; 2.0 did better on
# those and worse overall (adversarial 74.5 -> 66.9).
SUBJECT_BOOST = 1.5
# A passage that ends by asking is less likely to hold the answer than one
# that tells: it repeats the words ("What gave you the idea to start the
# store?") and the answer comes after. Overall recall@5 with the boost
# above: 68.2 -> 69.3.
QUESTION_PENALTY = 0.8


def aboutness(query_names: set[str]) -> Callable[[str], float]:
    """The factor by which a passage's score is multiplied, from its text:
    SUBJECT_BOOST when its first word is one of `query_names` (see the
    function of that name), QUESTION_PENALTY when it ends with a question
    mark (a trailing parenthesis left out)."""

    def factor(text: str) -> float:
        named = begins_with_one_of(text, query_names)
        asks = _traits(text).asks
        return (SUBJECT_BOOST if named else 1.0) * (QUESTION_PENALTY if asks else 1.0)

    return factor


def begins_with_one_of(text: str, names: set[str]) -> bool:
    """Whether `text` begins with one of `names` (lower-cased): it is about
    that one."""
    return _traits(text).first in names


class _Traits(NamedTuple):
    first: str  # the first word, lower-cased
    asks: bool  # it ends with a question mark
    words: frozenset[str]  # its words, lower-cased
    length: int  # in words


@functools.lru_cache(maxsize=4096)
def _traits(text: str) -> _Traits:
    """What weighing a passage reads of its text, kept for the passages of
    recent searches: a search weighs most of its passages twice and takes
    the feedback words from them (`with_feedback`), and a stored passage's
    text never changes."""
    words = WORD.findall(text.lower())
    asks = _without_trailing_note(text).endswith("?")
    return _Traits(words[0] if words else "", asks, frozenset(words), len(words))


def _without_trailing_note(text: str) -> str:
    """`text` without a parenthesis at its end (an image's caption, a note:
    it does not change what the sentence before it does), stripped."""
    text = text.rstrip()
    if text.endswith(")") and (start := text.rfind("(")) >= 0:
        return text[:start].rstrip()
    return text


# BM25 favours short passages (for one matching word, a passage half the
# average length scores about 1.26 times one of average length), and short
# turns are seldom what a question asks for ("Thanks, Melanie!", "Gina: ;)").
# A passage shorter than the median of those found counts the square root of
# its share of that length. LoCoMo, lexical, with the weights above:
# multi-hop recall@5/@10 37.5/46.8 -> 39.5/49.9, overall 69.1/77.6 ->
# 69.8/77.5; the exponent 1 gave multi-hop 40.6 @5 but overall 69.0/76.5,
# 0.25 gave 37.9 and 69.6/77.9. Relative to the median, a store of short
# facts is not penalised as a whole.
LENGTH_EXPONENT = 0.5


def length_weights(lengths: Sequence[int]) -> list[float]:
    """For passages of `lengths` (in words) found together, each one's
    weight: 1 from the median length up, (length / median) ** LENGTH_EXPONENT
    below it."""
    if not lengths:
        return []
    middle = max(statistics.median(lengths), 1)
    return [min(1.0, length / middle) ** LENGTH_EXPONENT for length in lengths]


# A question that asks when ("When did Nate get his turtles?", "How long
# has ...": questions.py `asks_time`) is answered by a passage that states a
# time, in whatever words ("I've had them for 3 years", "yesterday
# [2023-05-07]": dates.py `states_time`); such passages weigh TIME_BOOST
# more. LoCoMo development split, lexical, temporal recall@5 on the halves
# (A / B): 88.3 / 68.6 without, 89.4 / 68.6 at 1.15, 92.2 / 71.6 at 1.3,
# 93.3 / 71.6 at 1.5, 94.4 / 71.6 at 1.8, 93.3 / 71.6 at 2.2, 91.1 / 69.3 at
# 3; overall @5 on A peaks from 1.5 to 1.8 (74.1, 74.3), @10 unchanged.
TIME_BOOST = 1.5


def reweighed(
    query: str,
    scored: Sequence[tuple[Item, float]],
    text_of: Callable[[Item], str],
) -> list[tuple[Item, float]]:
    """`scored` (best first) with each score times its `aboutness` for
    `query` and its `length_weights` among them, and, for a query asking
    when, TIME_BOOST for the passages that state a time; best first again
    (stable: ties keep their order)."""
    factor = aboutness(query_names(query))
    texts = [text_of(item) for item, _ in scored]
    lengths = length_weights([_traits(text).length for text in texts])
    when = asks_time(query)

    def timed(text: str) -> float:
        return TIME_BOOST if when and states_time(text) else 1.0

    weighed = [
        (item, score * factor(text) * length * timed(text))
        for (item, score), text, length in zip(scored, texts, lengths, strict=True)
    ]
    return sorted(weighed, key=lambda pair: -pair[1])


# Where a passage sits in a conversation. Passages written less than
# SESSION_GAP_SECONDS apart belong to one session (one sitting of a
# conversation, the chunks of one document); the turns of a session are
# stored in order, so the next seq is the next turn.
SESSION_GAP_SECONDS = 3600.0


class Turn(NamedTuple):
    """Where a passage sits among the stored ones: its seq (the order they
    were stored in) and when it was written (a timestamp, in seconds)."""

    seq: int
    at: float


# A turn that asks is answered by the turn after it: "What game were you
# playing?" - "Street Fighter, and I won!". The question holds the words a
# search looks for, the answer often none of them (it has them only in its
# context, at half weight), so the passage stored right after one that asks
# (the next seq, in the same session) gains ANSWER_SHARE of the asking
# passage's score. LoCoMo development split, lexical, overall recall@5/@10,
# set on half A: without 73.2/79.8, 0.25 75.1/80.9, 0.35 75.6/81.0, 0.5
# 75.9/81.4, 0.75 75.2/81.7, 1.0 74.4/81.4; on half B with 0.5, 67.9/75.9
# -> 69.9/77.6. Every neighbour's score (asking or not) instead, 0.1-0.35:
# A 0 to -2.5 at 5, B +0.1 to +1.9.
ANSWER_SHARE = 0.5


def answers_lifted(
    scored: Sequence[tuple[Item, float]],
    turn_of: Callable[[Item], Turn],
    text_of: Callable[[Item], str],
    share: float | None = None,
) -> list[tuple[Item, float]]:
    """`scored` with each item that comes right after one that asks (the
    next seq, in the same session, not beginning with the same word: "Anna:
    ..." after "Anna: ...?" is Anna going on, not an answer) gaining `share`
    (None: ANSWER_SHARE, read when called) of the asking item's score; best
    first (stable). Only items among `scored` are weighed: an answer that
    matched nothing, not even by its context, is not brought in."""
    share = ANSWER_SHARE if share is None else share
    if not share:
        return list(scored)
    asking: dict[int, tuple[float, str, float]] = {}
    for item, score in scored:
        traits = _traits(text_of(item))
        if traits.asks:
            turn = turn_of(item)
            asking[turn.seq] = (turn.at, traits.first, score)
    lifted = []
    for item, score in scored:
        seq, at = turn_of(item)
        before = asking.get(seq - 1)
        if (
            before is not None
            and abs(at - before[0]) <= SESSION_GAP_SECONDS
            and _traits(text_of(item)).first != before[1]
        ):
            score += share * before[2]
        lifted.append((item, score))
    return sorted(lifted, key=lambda pair: -pair[1])


# What a question asks about is talked of in a session, and the answer is
# often a turn of it that shares few of the question's words ("Yes, with my
# old teammates too"). Each passage gains SESSION_SHARE of the best score
# of another passage found in its session. LoCoMo development split,
# lexical, overall recall@5/@10 on half A (with ANSWER_SHARE): without
# 75.9/81.4, 0.05 76.4/81.5, 0.1 76.2/82.0, 0.15 76.2/82.2, 0.2 76.2/82.0,
# 0.3 76.1/81.5, 0.45 76.2/81.7 (set at the best mean of the two); half B
# 69.9/77.6 -> 71.3/79.3. It costs multi-hop recall@5 on A (40.2 -> 37.7):
# the best session's turns crowd out another session's.
SESSION_SHARE = 0.15


def sessions_smoothed(
    scored: Sequence[tuple[Item, float]], turn_of: Callable[[Item], Turn]
) -> list[tuple[Item, float]]:
    """`scored` with each item gaining SESSION_SHARE of the best score of
    another item of its session (items written at most SESSION_GAP_SECONDS
    after the one before, among `scored`); best first (stable)."""
    if not SESSION_SHARE or not scored:
        return list(scored)
    times = [turn_of(item).at for item, _ in scored]
    order = sorted(range(len(scored)), key=times.__getitem__)
    session = [0] * len(scored)
    for before, after in itertools.pairwise(order):
        gap = times[after] - times[before] > SESSION_GAP_SECONDS
        session[after] = session[before] + gap
    # The two best scores of each session: an item's best other is the
    # first, or the second when it is the first.
    best: dict[int, list[tuple[float, int]]] = {}
    for index, (_, score) in enumerate(scored):
        best[session[index]] = sorted([*best.get(session[index], []), (score, index)])[-2:]
    smoothed = []
    for index, (item, score) in enumerate(scored):
        others = [s for s, i in best[session[index]] if i != index]
        smoothed.append((item, score + SESSION_SHARE * max(others, default=0.0)))
    return sorted(smoothed, key=lambda pair: -pair[1])
