"""Hybrid search over archival passages and recall messages.

Lexical ranking is the store's BM25 (SQLite FTS5: porter stemming, stop words
dropped, any input taken as plain words; see storage/core/words.py for
large memories). With
an embedder, the query is also embedded and compared with the agent's stored
vectors (the in-process index of vector_index.py), and
the two are fused (fusion.py `fused`): BM25 over the query's best BM25, plus
VECTOR_WEIGHT times the cosine min-max normalised over the items found (a
passage the vectors found that the words did not return counts the lowest
word score returned).
(Reciprocal rank fusion was measured too: with a dense model weaker than
BM25, as MiniLM is on conversational data, it ranked worse than BM25 alone.) Items stored before an
embedder was set, or while the endpoint was down, are embedded on the next
search, a bounded batch at a time; search never fails because an embedder did.

A store with the `VectorSearch` capability (PostgreSQL with pgvector) finds
the nearest vectors itself, with the similarities of the lexical hits, so
nothing is loaded into the process (see `ServerHits`); other stores, and
PostgreSQL without pgvector, use the in-process index.

Before fusion, the words ranking is widened by pseudo-relevance feedback
(`with_feedback`): the words that set the best hits apart are searched again,
at lower weight, so a second hop or another mention of the same thing is
found by the hits' words, not only the question's (memory/retrieval/ranking.py).
Then each passage's word score is weighed by what the passage is about
(`reweighed`: whether it begins with a name the query names, ends by asking,
or is much shorter than the others found; for a question asking when,
whether it states a time). A period the query names ("in May 2023", "the
week before August 3, 2023"; memory/retrieval/questions.py) ranks its items
first. Last, after fusion when there are vectors, where each passage sits
in a conversation weighs on its score (`in_conversation`): the passage
after one that asks answers it, and a session shares its best match.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import numpy as np

from memgpt_lite.embeddings.embedder import EmbeddingMismatchError
from memgpt_lite.errors import LLMError
from memgpt_lite.memory.retrieval import fusion
from memgpt_lite.memory.retrieval.dates import Period, dated_within
from memgpt_lite.memory.retrieval.fusion import Nearness, fused
from memgpt_lite.memory.retrieval.questions import query_period
from memgpt_lite.memory.retrieval.ranking import (
    FEEDBACK_BUDGET,
    FEEDBACK_DEPTH,
    Turn,
    answers_lifted,
    date_boosted,
    feedback_words,
    fuse_feedback,
    reweighed,
    sessions_smoothed,
)
from memgpt_lite.memory.retrieval.vector_index import (
    Hits,
    ServerHits,
    StartedSearch,
    VectorHits,
)
from memgpt_lite.models import AgentState, Message, Passage
from memgpt_lite.storage.protocol import (
    Owner,
    Ranking,
    VectorSearch,
)
from memgpt_lite.text import clean_text, clean_texts

if TYPE_CHECKING:
    from memgpt_lite.memory.deps import MemoryDeps

log = logging.getLogger(__name__)

BACKFILL_PER_SEARCH = 512
T = TypeVar("T", Passage, Message)


def check_embedder(agent: MemoryDeps) -> None:
    """Refuse an embedder other than the one the agent's vectors came from."""
    embedder, state = agent.embedder, agent.state
    if embedder is None or state.embedding_model is None:
        return
    same_dimension = embedder.dimension in (None, state.embedding_dimension)
    if embedder.name != state.embedding_model or not same_dimension:
        raise EmbeddingMismatchError(
            f"agent {state.name!r} has vectors from {state.embedding_model} "
            f"({state.embedding_dimension} dimensions), not {embedder.name}"
            f"{f' ({embedder.dimension} dimensions)' if embedder.dimension else ''}; use the "
            f"same embedder, or re-embed: memgpt-lite archival {state.name} reembed"
        )


def embed_texts(agent: MemoryDeps, texts: Sequence[str]) -> np.ndarray | None:
    """The agent's embedder's vectors for `texts`, None without an embedder
    (a call to the endpoint or the local model: nothing is written)."""
    if agent.embedder is None:
        return None
    vectors = agent.embedder.embed(list(texts))  # clean: passages, messages, cleaned queries
    check_embedder(agent)
    return vectors


def record_vectors(
    agent: MemoryDeps, owner: Owner, seqs: Sequence[int], vectors: np.ndarray
) -> None:
    """Store vectors made by `embed_texts`; record the agent's embedding space
    on first use (the field alone, read fresh: another process may have
    recorded one meanwhile, which must then match)."""
    embedder = agent.embedder
    if embedder is None or not len(seqs):
        return

    def record_space(state: AgentState) -> None:
        if state.embedding_model is None:
            state.embedding_model = embedder.name
            state.embedding_dimension = int(vectors.shape[1])

    with agent.store.transaction():
        if agent.state.embedding_model is None:
            agent.state = agent.store.update_agent(agent.state.id, record_space)
            check_embedder(agent)
        agent.store.add_vectors(agent.state.id, owner, seqs, vectors)


def store_vectors(
    agent: MemoryDeps, owner: Owner, seqs: Sequence[int], texts: Sequence[str]
) -> None:
    """Embed and store; record the agent's embedding space on first use."""
    vectors = embed_texts(agent, texts) if seqs else None
    if vectors is not None:
        record_vectors(agent, owner, seqs, vectors)


def passage_vectors(agent: MemoryDeps, passages: Sequence[Passage]) -> np.ndarray | None:
    """The vectors of `passages`' texts (None without an embedder). A
    passage's context (the turn before it) is found by words, at half
    weight, but not embedded: leaning the vector toward it (the text's plus
    0.3 times the context's) was retired, its share under half a point of
    LoCoMo recall@5 on either half (+0.1, +0.3) and below zero at @10
    (-0.6, -0.1), for twice the embedding (docs/benchmarks.md)."""
    return embed_texts(agent, [p.text for p in passages])


def backfill(agent: MemoryDeps, owner: Owner, limit: int = BACKFILL_PER_SEARCH) -> int:
    """Embed up to `limit` stored items that have no vector yet (none in a
    database this process may only read: search uses the vectors it has)."""
    if agent.store.read_only:
        return 0
    if owner == "passage":
        passages = agent.store.unembedded_passages(agent.state.id, limit)
        vectors = passage_vectors(agent, passages) if passages else None
        if vectors is not None:
            record_vectors(agent, owner, [p.seq or 0 for p in passages], vectors)
        return len(passages)
    pending = agent.store.unembedded_messages(agent.state.id, limit)
    store_vectors(agent, owner, [s for s, _ in pending], [t for _, t in pending])
    return len(pending)


def _vector_thread() -> ThreadPoolExecutor:
    global _VECTOR_THREAD
    if _VECTOR_THREAD is None:
        _VECTOR_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memgpt-vectors")
    return _VECTOR_THREAD


_VECTOR_THREAD: ThreadPoolExecutor | None = None


def _start_vector_search(
    agent: MemoryDeps, owner: Owner, query: str, depth: int
) -> StartedSearch | None:
    """Embed `query` and start the vector search on a worker thread (numpy
    releases the GIL, so it overlaps the full-text query), or, when the store
    searches vectors itself, prepare its query (run once the lexical hits are
    known). None when there is no embedder or it fails: search then stays
    lexical."""
    if agent.embedder is None:
        return None
    try:
        backfill(agent, owner)
        vector = agent.embedder.embed([query])[0]
    except LLMError as exc:
        log.warning(
            "agent %s: embedding failed, searching by words only: %s", agent.state.name, exc
        )
        return None
    if agent.state.embedding_dimension is None:
        return None
    store, agent_id = agent.store, agent.state.id
    if isinstance(store, VectorSearch) and store.server_vectors:

        def on_server(also: Sequence[int]) -> Hits:
            return ServerHits.of(store.nearest_vectors(agent_id, owner, vector, depth, also))

        return on_server
    index = agent.vector_index(owner)
    index.refresh()  # here: the worker thread then runs numpy alone
    future: Future[VectorHits] = _vector_thread().submit(index.nearest, vector, depth)
    return lambda also: future.result()


def _finished(search: StartedSearch | None, lexical: list[tuple[T, float]]) -> Hits | None:
    hits = search([item.seq or 0 for item, _ in lexical]) if search is not None else None
    return hits if hits is not None and hits.ranked else None


def _hybrid(
    lexical: list[tuple[T, float]],
    hits: Hits,
    fetch: Callable[[list[int]], dict[int, T]],
    limit: int,
    offset: int,
    total: int,
    rerank: Callable[[list[tuple[T, float]]], list[tuple[T, float]]] | None = None,
    lift: Callable[[dict[int, T]], Callable[[Nearness], Nearness]] | None = None,
    unranked: Callable[[dict[int, float]], float] | None = None,
) -> tuple[list[T], int]:
    """One page of the items of `lexical` and of the vectors' `hits`, by
    their `fused` scores (the vectors' nearness changed by what `lift` makes
    of the items by seq, and the word score of those `lexical` lacks what
    `unranked` makes of it, when given), reweighed by `rerank` when given."""
    by_seq = {item.seq or 0: item for item, _ in lexical}
    by_seq.update(fetch([s for s in hits.ranked if s not in by_seq]))  # those passing filters
    words = {item.seq or 0: score for item, score in lexical}
    scored = [
        (by_seq[seq], score)
        for seq, score in fused(
            words,
            {seq: hits.similarity(seq) for seq in by_seq},
            lift(by_seq) if lift is not None else None,
            unranked(words) if unranked is not None else 0.0,
        )
    ]
    if rerank is not None:
        scored = rerank(scored)
    page = [item for item, _ in scored[offset : offset + limit]]
    return page, max(total, len(scored))


# The feedback pass's options for `rank_passages`: it scores few rows, and
# leaves out the words found in more than that many passages. Such a word
# adds little to a score (its IDF is low), and to compute that IDF FTS5 reads
# every row holding it: at 1M synthetic passages the feedback pass took 13 ms
# median, 28 ms at p95 with them, against a few ms without.
FEEDBACK_OPTIONS: dict[str, Any] = {"budget": FEEDBACK_BUDGET, "drop_over_budget": True}


def with_feedback(
    query: str,
    rank: Callable[[str, int, bool], Ranking[T]],
    depth: int,
    text_of: Callable[[T], str],
) -> tuple[list[tuple[T, float]], int]:
    """The best `depth` items for `query` by its words and, at lower weight,
    by the words that set its best hits apart (`feedback_words`), with the
    fused scores; and how many items the query's words matched. `rank` is the
    store's BM25 ranking of some words (words, depth, and whether it is the
    feedback pass: FEEDBACK_OPTIONS)."""
    first, total, _ = rank(query, depth, False)
    # The words are taken from the hits that are most about the query's
    # subject (`reweighed`): multi-hop recall@5 on LoCoMo +0.7.
    about = reweighed(query, first, text_of)
    words = feedback_words(query, [(text_of(item), score) for item, score in about])
    if not words:
        return first, total
    second = rank(" ".join(words), depth, True).scored
    by_seq = {item.seq or 0: item for item, _ in [*second, *first]}
    fused = fuse_feedback(
        [(item.seq or 0, score) for item, score in first],
        [(item.seq or 0, score) for item, score in second],
    )
    return [(by_seq[seq], score) for seq, score in fused[:depth]], total


def _passage_text(passage: Passage) -> str:
    return passage.text


def _passage_turn(passage: Passage) -> Turn:
    return Turn(passage.seq or 0, passage.created_at.timestamp())


def search_passages(
    agent: MemoryDeps,
    query: str,
    limit: int,
    offset: int = 0,
    tags: Sequence[str] | None = None,
    start: date | None = None,
    end: date | None = None,
    include_superseded: bool = True,
) -> tuple[list[Passage], int]:
    """One page of the agent's passages for `query`, best first, and the
    total: current passages first, then, with `include_superseded`, those a
    newer passage replaced (ranked among themselves), as if one list."""
    query, tags = clean_text(query), clean_texts(tags)  # they reach the store and the embedder
    store, agent_id = agent.store, agent.state.id
    depth = max(50, 3 * (offset + limit))
    # Replaced passages are few or none: with none, one search needs no filter.
    any_replaced = store.list_passages(agent_id, 0, superseded=True)[1] > 0
    filtered = bool(tags or start or end or any_replaced)
    vector_search = _start_vector_search(agent, "passage", query, depth * (4 if filtered else 1))

    # A month named without its year is the latest one memory holds.
    period = query_period(query, datetime.now(UTC), lambda: store.newest_passage_time(agent_id))
    filters = _PassageFilters(tags, start, end, period=period)
    if not any_replaced:
        return _passage_page(agent, query, vector_search, limit, offset, depth, filters)
    current = filters._replace(superseded=False)
    found, total = _passage_page(agent, query, vector_search, limit, offset, depth, current)
    if not include_superseded:
        return found, total
    # The replaced ones continue the list where the current ones end; asked
    # for one at least, for their count.
    rest, after = limit - len(found), max(0, offset - total)
    replaced = filters._replace(superseded=True)
    older, more = _passage_page(agent, query, vector_search, max(rest, 1), after, depth, replaced)
    return found + older[: max(rest, 0)], total + more


class _PassageFilters(NamedTuple):
    tags: list[str] | None
    start: date | None
    end: date | None
    superseded: bool | None = None
    period: Period | None = None  # named by the query: boosted (see _passages_in_period)


def _passage_page(
    agent: MemoryDeps,
    query: str,
    vector_search: StartedSearch | None,
    limit: int,
    offset: int,
    depth: int,
    filters: _PassageFilters,
) -> tuple[list[Passage], int]:
    """One page of the passages passing `filters`, by words and vectors."""
    store, agent_id = agent.store, agent.state.id
    tags, start, end, superseded, period = filters
    rank = _PassageRanker(agent, filters, offset + limit)
    lexical, total = with_feedback(query, rank, max(FEEDBACK_DEPTH, depth), _passage_text)
    if period:
        lexical, total = _passages_in_period(rank, query, lexical, total)
    # What each passage is about weighs on its word score, before fusion
    # with vectors: after it, the same factor outweighed the vectors
    # (LoCoMo with the local embedder: overall recall@5 68.3 -> 66.9).
    lexical = reweighed(query, lexical, _passage_text)
    hits = _finished(vector_search, lexical)
    if hits is None:
        lexical = in_conversation(lexical)
        return [p for p, _ in lexical[offset : offset + limit]], total

    def fetch(seqs: list[int]) -> dict[int, Passage]:
        return store.passages_by_seq(agent_id, seqs, tags, start, end, superseded=superseded)

    return _hybrid(
        lexical,
        hits,
        fetch,
        limit,
        offset,
        total,
        rerank=in_conversation,
        lift=answers_near,
        unranked=fusion.unranked_words,  # read when called: benchmarks override it
    )


# The answer to a question is near the query through the question it
# answers: the vectors' nearness of the passage after one that asks gains
# VECTOR_ANSWER_SHARE of the asking one's, before fusion (and the fused
# score ANSWER_SHARE of the asking one's after it, `in_conversation`). A
# passage's words hold its context (the question) at half weight; this
# gives the vector side of an answer some of its question too. LoCoMo development
# split, hybrid with the local MiniLM, recall@5/@10, set on half A: without
# 77.7/83.6, 0.1 77.9/83.6, 0.15 77.9/83.6, 0.2 78.0/83.6, 0.25 78.4/83.5,
# 0.3 78.2/83.6, 0.35 77.9/83.5, 0.5 78.0/83.0, 1.0 76.2/82.4; half B with
# 0.25 72.9/80.1 -> 73.4/80.2 (0.2: 73.0, 0.3: 73.1 at 5).
VECTOR_ANSWER_SHARE = 0.25


def answers_near(by_seq: dict[int, Passage]) -> Callable[[Nearness], Nearness]:
    """The vectors' nearness of the passages `by_seq` with each answer
    gaining VECTOR_ANSWER_SHARE of its question's (`answers_lifted`)."""

    def lift(near: Nearness) -> Nearness:
        # Only items next to another found can be or have an answer.
        paired = [
            (by_seq[seq], value)
            for seq, value in near.items()
            if seq - 1 in near or seq + 1 in near
        ]
        lifted = answers_lifted(paired, _passage_turn, _passage_text, VECTOR_ANSWER_SHARE)
        return near | {passage.seq or 0: value for passage, value in lifted}

    return lift


def in_conversation(scored: list[tuple[Passage, float]]) -> list[tuple[Passage, float]]:
    """`scored` reweighed by where each passage sits in a conversation: the
    passage after one that asks answers it (`answers_lifted`), and the
    passages of a session share its best match (`sessions_smoothed`). On
    the fused scores in a hybrid search, so a passage the vectors found
    gains too. LoCoMo development split, hybrid with the local MiniLM,
    recall@5/@10 on half A: 78.0/82.3 applied to the word scores before
    fusion, 77.7/83.6 after; half B 72.0/79.2 and 72.9/80.1."""
    lifted = answers_lifted(scored, _passage_turn, _passage_text)
    return sessions_smoothed(lifted, _passage_turn)


def _passage_within(period: Period) -> Callable[[Passage], bool]:
    """Whether a passage belongs to `period` (`dated_within`, which keeps
    the dates it read of recent texts: `_passages_in_period` asks again
    after adding to the ranking)."""

    def within(passage: Passage) -> bool:
        return dated_within(passage.text, passage.created_at, period)

    return within


def _period_bounds(filters: _PassageFilters) -> tuple[date | None, date | None] | None:
    """The dates (None: open) of the period named by the query within the
    `start`/`end` filters; None without a period or when they do not meet."""
    period, start, end = filters.period, filters.start, filters.end
    if period is None:
        return None
    first, last = max(start or period.start, period.start), min(end or period.end, period.end)
    if first > last:
        return None
    return None if first == date.min else first, None if last == date.max else last


class _PassageRanker:
    """`with_feedback`'s `rank` for one page of passages (`rank_passages`
    with the page's filters). With a period named, the question's ranking
    also brings the best `page` passages stored within it, when the store can
    tell them from its best matches (`rank_passages_in_period`), for
    `_passages_in_period`: it needs them when the page has too few of the
    period's (about one dated search in six), and a second ranking within
    the period cost as much as the first (at 1M passages, p95 of dated
    searches 123 ms against 55 without)."""

    def __init__(self, agent: MemoryDeps, filters: _PassageFilters, page: int) -> None:
        self.store, self.agent_id = agent.store, agent.state.id
        self.filters, self.page = filters, page
        self.period = _period_bounds(filters)
        self.in_period: list[tuple[Passage, float]] | None = None

    def __call__(self, words: str, count: int, feedback: bool) -> Ranking[Passage]:
        tags, start, end, superseded, _ = self.filters
        if feedback or self.period is None:
            return self._rank(words, count, feedback, start, end)
        ranking, self.in_period = self.store.rank_passages_in_period(
            self.agent_id,
            words,
            count,
            tags,
            start,
            end,
            period=self.period,
            period_limit=self.page,
            superseded=superseded,
        )
        return ranking

    def within_period(self, words: str, count: int, feedback: bool) -> Ranking[Passage]:
        """The same within the period's days: for the question's words, what
        the first call brought, if the store could tell."""
        if not feedback and self.in_period is not None:
            return Ranking(self.in_period[:count], len(self.in_period), proven=False)
        low, high = self.period or (None, None)
        return self._rank(words, count, feedback, low, high)

    def _rank(
        self, words: str, count: int, feedback: bool, start: date | None, end: date | None
    ) -> Ranking[Passage]:
        """`rank_passages` between `start` and `end`, with the page's other
        filters (and FEEDBACK_OPTIONS for the feedback pass)."""
        tags, _, _, superseded, _ = self.filters
        extra = FEEDBACK_OPTIONS if feedback else {}
        return self.store.rank_passages(
            self.agent_id, words, count, tags, start, end, superseded=superseded, **extra
        )


def _passages_in_period(
    rank: _PassageRanker,
    query: str,
    lexical: list[tuple[Passage, float]],
    total: int,
) -> tuple[list[tuple[Passage, float]], int]:
    """`lexical` reranked with the passages of the query's period boosted.
    When fewer than a page (`rank.page`) of those are among it, the best
    matches stored within the period are added first (ranked within the
    period: they may rank far down among all). With a page of them already,
    none it would add could reach the page: each scores below all of
    `lexical`, so below each boosted one. The tags and `start`/`end` filters
    bound both."""
    period = rank.filters.period
    if period is None:
        return lexical, total
    within_period = _passage_within(period)
    ranked, inside = date_boosted(lexical, within_period)
    if inside >= rank.page or rank.period is None:
        return ranked, total
    # Scored as `lexical` was (with the feedback words), so the two compare.
    within, _ = with_feedback(query, rank.within_period, rank.page, _passage_text)
    seen = {p.seq for p, _ in lexical}
    lexical = lexical + [(p, s) for p, s in within if p.seq not in seen]
    return date_boosted(lexical, within_period)[0], max(total, len(lexical))


def search_messages(
    agent: MemoryDeps, query: str, limit: int, offset: int = 0, exclude_step_id: str | None = None
) -> tuple[list[Message], int]:
    """One page of the agent's past user and assistant messages for `query`."""
    query = clean_text(query)  # it reaches the store and the embedder
    store, agent_id = agent.store, agent.state.id
    depth = max(50, 3 * (offset + limit))

    period = query_period(query, datetime.now(UTC))
    vector_search = _start_vector_search(agent, "message", query, depth)
    if vector_search is None and period is None:  # words alone, ranked once
        return store.search_messages(agent_id, query, limit, offset, exclude_step_id)
    lexical, total, _ = store.rank_messages(agent_id, query, depth, exclude_step_id)
    if period:  # messages are not annotated: their own time, or ISO dates in them
        lexical, _ = date_boosted(
            lexical, lambda m: dated_within(m.content or "", m.created_at, period)
        )
    hits = _finished(vector_search, lexical)
    if hits is None:  # no vectors: the words alone
        return [m for m, _ in lexical[offset : offset + limit]], total

    def fetch(seqs: list[int]) -> dict[int, Message]:
        return store.messages_by_seq(agent_id, seqs, exclude_step_id)

    return _hybrid(lexical, hits, fetch, limit, offset, total)
