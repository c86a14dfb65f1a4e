"""The ranking policy above storage: the store returns candidates with their
raw word scores (budgeted BM25: storage/core/words.py, whose words and stop
words this module shares), and here they are weighed and fused with archival
search's other signals: pseudo-relevance feedback (`feedback_words`,
`fuse_feedback`), a period named by the query (`date_boosted`) and what a
passage is about (`reweighed`: its subject, whether it asks, its length).
"""

from __future__ import annotations

import functools
import math
import re
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

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
# A name in a hit counts twice: it is what a second hop searches for (on
# LoCoMo with 100 candidates, multi-hop recall@5 31.7 -> 32.9, overall
# within 0.2).
NAME_BOOST = 2.0
# A word after another word's letters or a comma, not after ., ! or ? or a colon.
_INNER_CAPITAL = re.compile(r"(?<=[\w,;])\s+(\w+)", re.UNICODE)


def feedback_words(
    query: str, candidates: Sequence[tuple[str, float]], count: int = FEEDBACK_WORDS
) -> list[str]:
    """The words of the best FEEDBACK_HITS of `candidates` (text and score,
    best first) that best set them apart: each word's IDF among the
    candidates (how few hold it), summed over the hits holding it, each hit
    counted by its score relative to the best. The query's own words, numbers
    and words under three letters are left out. The IDF is the candidates'
    own, not the store's: it needs no query, and a word common in the store
    but rare among them still tells them apart."""
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
    for (text, score), words in zip(candidates, words_of, strict=False):
        names = proper_names(text)
        for word in words:
            idf = math.log((len(candidates) + 1) / (held[word] + 0.5))
            boost = NAME_BOOST if word in names else 1.0
            weight[word] = weight.get(word, 0.0) + max(score, 0.0) / best * idf * boost
    return sorted(weight, key=lambda w: (-weight[w], w))[:count]


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


def query_names(query: str) -> set[str]:
    """The capitalised words of a query that are not function words
    (lower-cased): a question's first word is "What" or "When", a name
    anywhere else; a query of keywords may begin with one."""
    return {
        word.lower()
        for word in WORD.findall(query)
        if word[0].isupper() and word.lower() not in STOP_WORDS
    }


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


# A question in the present perfect ("What has Melanie painted?", "Which
# cities has Jon visited?", "How many times has Joanna been rejected?") asks
# for its subject's experiences: past events, each told once, most often
# with when it happened ("we went camping last week"), in passages that may
# share no word with the question. A passage that begins with a name the
# query names (SUBJECT_BOOST) and tells of a dated past event (a date in its
# text before its own: memory/retrieval/dates.py `tells_past`) weighs EXPERIENCE_BOOST
# more. On LoCoMo, among the 30 passages found for each multi-hop question
# holding "has/have", 36-42% of the evidence holds a resolved date, 13-16%
# of the rest.
# LoCoMo development split, lexical: multi-hop recall@5/@10 39.5/49.9 ->
# 41.6/49.8 (conversations 0-2: 41.5 -> 44.2 @5, 3-4: 37.3 -> 38.7),
# overall 69.8/77.5 -> 70.1/77.5; no question lost at @5. Multi-hop @5 with
# 1.1, 1.15, 1.25, 1.3: 40.2, 41.2, 41.6, 41.5. Without the subject
# condition, an adversarial question (one person asked about what the other
# did) dropped out of the top 10 (overall @10 77.4).
EXPERIENCE_BOOST = 1.2
_PARTICIPLE = (
    r"(?:\w{2,}ed|been|done|gone|seen|read|made|met|had|taken|given|written|won|bought|eaten"
    r"|found|heard|known|begun|become|come|run|got|gotten|kept|left|lost|taught|thought|told"
    r"|brought|built|felt|held|led|paid|said|sent|spent|sold|shown|grown|drawn|driven|flown"
    r"|ridden|worn|chosen|broken|spoken|fallen|forgotten|put|set|cut|hit|let|shut)"
)
# "has" or "have" as the auxiliary of a past participle within four words
# ("have Melanie and her kids made"); not "does Melanie have", a possession.
_PERFECT = re.compile(
    rf"\b(?:has|have|'ve)\b(?:\s+[\w'+-]+){{0,4}}?\s+{_PARTICIPLE}\b", re.IGNORECASE
)


def asks_experience(query: str) -> bool:
    """Whether `query` is in the present perfect (see EXPERIENCE_BOOST)."""
    return _PERFECT.search(query) is not None


def reweighed(
    query: str,
    scored: Sequence[tuple[Item, float]],
    text_of: Callable[[Item], str],
    told_past: Callable[[Item], bool] | None = None,
) -> list[tuple[Item, float]]:
    """`scored` (best first) with each score times its `aboutness` for
    `query` and its `length_weights` among them, and, for a query asking for
    experiences, EXPERIENCE_BOOST for the subject's passages `told_past`
    says tell of a dated past event (when given); best first again (stable:
    ties keep their order)."""
    names = query_names(query)
    factor = aboutness(names)
    past = told_past if names and asks_experience(query) else None
    texts = [text_of(item) for item, _ in scored]
    lengths = length_weights([_traits(text).length for text in texts])

    def experience(item: Item, text: str) -> float:
        if past is None or not begins_with_one_of(text, names) or not past(item):
            return 1.0
        return EXPERIENCE_BOOST

    weighed = [
        (item, score * factor(text) * length * experience(item, text))
        for (item, score), text, length in zip(scored, texts, lengths, strict=True)
    ]
    return sorted(weighed, key=lambda pair: -pair[1])
