"""Ranking variants on LoCoMo, measured without changing the shipped search:
each takes the final ranking archival search makes for a question (every
candidate, scored, before the page is cut) and returns another top 10, or
runs another search. One search per question serves every variant, so all
are compared on the same rankings.

    python benchmarks/locomo_variants.py --data ../shared/bench/locomo/locomo_dev.json
    python benchmarks/locomo_variants.py --data PATH --embedders none,local --db postgres
    python benchmarks/locomo_variants.py --data PATH --variants spread-below-5,decomposed

For each variant, the table of locomo_retrieval.py (recall@5 and @10 per
category, all conversations and each half) and its difference from the
shipped ranking. A variant that helps one half and costs the other is not
a signal; one under half a point is not worth a weight (docs/benchmarks.md).

The variants (`VARIANTS`), measured for multi-hop questions (their evidence
lies in several sessions) and recall@10; every one keeps the first five as
ranked unless it says otherwise:
- below-5 spreading: ranks 6-10 prefer sessions the top 5 do not hold;
- query decomposition: a question joining two names ("Jon and Gina") is
  searched once per name, the two rankings interleaved;
- a second query for questions asking for several things (`asks_for_list`),
  its hits from other sessions alternated into ranks 6-10;
- ranking more candidates for those questions;
- the turns next to the best hits, or the turn asking what a top hit
  answers, in ranks 6-10.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from databases import Databases, add_db_option, backends, label
from embedding_cache import DEFAULT_DIR, CachedEmbedder
from locomo_retrieval import (
    KS,
    Answered,
    Run,
    evidence_ids,
    halves,
    load_agent,
    make_embedder,
    report,
    turns_of,
)
from overrides import overridden

from memgpt_lite import Agent, Passage
from memgpt_lite.embeddings.embedder import Embedder
from memgpt_lite.memory.retrieval import search as search_module
from memgpt_lite.memory.retrieval.ranking import SESSION_GAP_SECONDS, feedback_words, reweighed
from memgpt_lite.storage.core.words import WORD

TOP = 5  # the ranks every below-5 variant keeps as they are
PAGE = max(KS)


class Asked(NamedTuple):
    """One question's search: the agent, the question and the shipped
    ranking (every candidate with its final score, best first)."""

    agent: Agent
    question: str
    ranking: list[tuple[Passage, float]]


Variant = Callable[[Asked], list[Passage]]


# A question asking for several things: "how many", "both", or a plural
# noun between "what"/"which" and its verb ("What books has Tim read?",
# "Which cities has Jon visited?"), or after "what are" ("What are Nate's
# favorite desserts?"). English marks the plural on the noun; the verb
# agrees with the subject named after it, so it tells nothing.
_VERB = r"(?:has|have|had|does|do|did|is|are|was|were|can|could|would|will)"
_WH_NOUNS = re.compile(
    r"^\W*(?:in\s+)?(?:what|which)\s+((?:[\w'/+.-]+\s+){0,4}?)" + _VERB + r"\b", re.IGNORECASE
)
_WHAT_ARE = re.compile(
    r"^\W*(?:what|which|who)\s+(?:are|were)\s+((?:[\w'/+.-]+\s*){1,5})", re.IGNORECASE
)
_SEVERAL = re.compile(r"\bhow\s+many\b|\bboth\b", re.IGNORECASE)


def _plural(word: str) -> bool:
    word = word.lower().strip("?.,")
    return len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is", "'s"))


def asks_for_list(question: str) -> bool:
    """Whether `question` asks for several things (see above)."""
    if _SEVERAL.search(question):
        return True
    for pattern in (_WH_NOUNS, _WHAT_ARE):
        match = pattern.search(question)
        if match and any(_plural(word) for word in match.group(1).split()):
            return True
    return False


def sessions(passages: Sequence[Passage]) -> list[int]:
    """Each passage's session (passages written at most SESSION_GAP_SECONDS
    after the one before, in time order), as ranking.py groups them."""
    times = [p.created_at.timestamp() for p in passages]
    order = sorted(range(len(passages)), key=times.__getitem__)
    session = [0] * len(passages)
    for before, after in zip(order, order[1:], strict=False):
        session[after] = session[before] + (times[after] - times[before] > SESSION_GAP_SECONDS)
    return session


def spread_below_top(ranking: list[tuple[Passage, float]], factor: float) -> list[Passage]:
    """The top TOP as ranked, then, one rank at a time, the passage whose
    score times `factor` to the power of the passages of its session
    already placed is best."""
    session = sessions([p for p, _ in ranking])
    placed = list(range(min(TOP, len(ranking))))
    count: dict[int, int] = {}
    for index in placed:
        count[session[index]] = count.get(session[index], 0) + 1
    rest = list(range(len(placed), len(ranking)))
    while rest and len(placed) < PAGE:
        best = max(rest, key=lambda i: ranking[i][1] * factor ** count.get(session[i], 0))
        rest.remove(best)
        placed.append(best)
        count[session[best]] = count.get(session[best], 0) + 1
    return [ranking[i][0] for i in placed]


def new_sessions_below_top(ranking: list[tuple[Passage, float]], per: int) -> list[Passage]:
    """The top TOP as ranked, then the best `per` passages of each session
    the top does not hold, in rank order, then the rest."""
    session = sessions([p for p, _ in ranking])
    held = {session[i] for i in range(min(TOP, len(ranking)))}
    placed, count = list(range(min(TOP, len(ranking)))), dict.fromkeys(held, per)
    for index in range(len(placed), len(ranking)):
        if count.get(session[index], 0) < per:
            placed.append(index)
            count[session[index]] = count.get(session[index], 0) + 1
    placed += [i for i in range(len(ranking)) if i not in set(placed)]
    return [ranking[i][0] for i in placed[:PAGE]]


def alternated(top: list[Passage], first: list[Passage], second: list[Passage]) -> list[Passage]:
    """`top`, then `first` and `second` taken in turn, each passage once."""
    out, seen = list(top), {p.id for p in top}
    for index in range(max(len(first), len(second))):
        for passages in (first, second):
            passage = passages[index] if index < len(passages) else None
            if passage is not None and passage.id not in seen:
                out.append(passage)
                seen.add(passage.id)
    return out[:PAGE]


_JOINED_NAMES = re.compile(r"\b([A-Z][\w-]+)('s)?\s+and\s+([A-Z][\w-]+)('s)?")


def split_names(question: str) -> list[str]:
    """For a question joining two names ("What do Jon and Gina both like?"),
    the question once per name, "both" left out; else none."""
    match = _JOINED_NAMES.search(question)
    if match is None:
        return []
    asked = []
    for group in (1, 3):
        name = match.group(group) + (match.group(group + 1) or "")
        one = question[: match.start()] + name + question[match.end() :]
        asked.append(re.sub(r"\bboth\s+", "", one, flags=re.IGNORECASE))
    return asked


def decomposed(asked: Asked) -> list[Passage]:
    parts = split_names(asked.question)
    if not parts:
        return [p for p, _ in asked.ranking[:PAGE]]
    first, second = (asked.agent.archival.search(part, limit=PAGE)[0] for part in parts)
    return alternated([], first, second)


def _other_sessions(asked: Asked, words: str) -> list[Passage]:
    """The best passages for `words` (the store's ranking, `reweighed` for
    the question), one per session the top TOP does not hold."""
    store, agent_id = asked.agent.store, asked.agent.state.id
    ranked = reweighed(asked.question, store.rank_passages(agent_id, words, 50).scored, _text)
    held = {p.created_at.timestamp() for p, _ in asked.ranking[:TOP]}
    found, days = [], set(held)
    for passage, _ in ranked:
        day = passage.created_at.timestamp()
        if day not in days:  # one LoCoMo session shares one time
            found.append(passage)
            days.add(day)
    return found


def second_query(from_feedback: bool) -> Variant:
    """For a question asking for several things, the best passages of the
    sessions the top does not hold, for the question's own words or for the
    words that set its best hits apart (`feedback_words`), alternated with
    ranks 6-10."""

    def variant(asked: Asked) -> list[Passage]:
        shipped = [p for p, _ in asked.ranking]
        if not asks_for_list(asked.question):
            return shipped[:PAGE]
        words = asked.question
        if from_feedback:
            words = " ".join(
                feedback_words(asked.question, [(p.text, s) for p, s in asked.ranking])
            )
        if not words.strip():
            return shipped[:PAGE]
        return alternated(shipped[:TOP], shipped[TOP:], _other_sessions(asked, words))

    return variant


def deeper(asked: Asked) -> list[Passage]:
    """Questions asking for several things ranked among 120 candidates (a
    page of 40 asks for them) instead of 50."""
    if not asks_for_list(asked.question):
        return [p for p, _ in asked.ranking[:PAGE]]
    return asked.agent.archival.search(asked.question, limit=40)[0][:PAGE]


def _turns(asked: Asked, wanted: list[tuple[Passage, int]]) -> list[Passage]:
    """The passages `offset` after each of `wanted` (passage, offset), in
    its session and not in the top TOP."""
    seqs = [(p.seq or 0) + offset for p, offset in wanted]
    found = asked.agent.store.passages_by_seq(asked.agent.state.id, seqs)
    top = {p.id for p, _ in asked.ranking[:TOP]}
    turns = []
    for (passage, _), seq in zip(wanted, seqs, strict=True):
        turn = found.get(seq)
        gap = abs(turn.created_at.timestamp() - passage.created_at.timestamp()) if turn else 0
        if turn is not None and gap <= SESSION_GAP_SECONDS and turn.id not in top:
            turns.append(turn)
    return turns


def neighbours(asked: Asked) -> list[Passage]:
    """The turns just after and just before the best two, alternated with
    ranks 6-10."""
    wanted = [(p, offset) for p, _ in asked.ranking[:2] for offset in (1, -1)]
    shipped = [p for p, _ in asked.ranking]
    return alternated(shipped[:TOP], shipped[TOP:], _turns(asked, wanted))


def askers(asked: Asked) -> list[Passage]:
    """Below the top TOP, the turn asking what a top passage answers (the
    one before it, ending with a question mark, by the other speaker)
    ranked at half the answer's score (ranking.py's ANSWER_SHARE, the other
    way)."""
    top = asked.ranking[:TOP]
    before = _turns(asked, [(p, -1) for p, _ in top])
    scored = {p.id: (p, s) for p, s in asked.ranking[TOP:]}
    answers = {(p.seq or 0) - 1: (p, s) for p, s in top}
    for turn in before:
        answer, score = answers[turn.seq or 0]
        if text_asks(turn.text) and first_word(turn.text) != first_word(answer.text):
            kept = scored.get(turn.id, (turn, 0.0))[1]
            scored[turn.id] = (turn, max(kept, 0.5 * score))
    rest = sorted(scored.values(), key=lambda pair: -pair[1])
    return [p for p, _ in top] + [p for p, _ in rest][: PAGE - len(top)]


def _text(passage: Passage) -> str:
    return passage.text


def text_asks(text: str) -> bool:
    """Whether `text` ends by asking (a closing parenthesis, an image's
    caption, left out), as ranking.py reads it."""
    text = text.rstrip()
    if text.endswith(")") and (start := text.rfind("(")) >= 0:
        text = text[:start].rstrip()
    return text.endswith("?")


def first_word(text: str) -> str:
    words = WORD.findall(text.lower())
    return words[0] if words else ""


VARIANTS: dict[str, Variant] = {
    "spread-below-5": lambda a: spread_below_top(a.ranking, 0.9),
    "spread-below-5-lists": lambda a: (
        spread_below_top(a.ranking, 0.9)
        if asks_for_list(a.question)
        else [p for p, _ in a.ranking[:PAGE]]
    ),
    "sessions-below-5-lists": lambda a: (
        new_sessions_below_top(a.ranking, 2)
        if asks_for_list(a.question)
        else [p for p, _ in a.ranking[:PAGE]]
    ),
    "decomposed": decomposed,
    "other-sessions-lists": second_query(from_feedback=False),
    "other-sessions-feedback-lists": second_query(from_feedback=True),
    "deeper-lists": deeper,
    "neighbours-below-5": neighbours,
    "askers-below-5": askers,
}


def evaluate(
    data: list[dict],
    embedder: Embedder | None,
    databases: Databases,
    backend: str,
    names: Sequence[str],
) -> dict[str, Run]:
    """Each question searched once as shipped; the recall of that ranking
    ("shipped") and of each variant in `names`."""
    runs = {name: Run() for name in ["shipped", *names]}
    rankings: list[list[tuple[Passage, float]]] = []
    shipped_in_conversation = search_module.in_conversation

    def kept(scored: list[tuple[Passage, float]]) -> list[tuple[Passage, float]]:
        """The shipped last step of ranking, its result kept."""
        final = shipped_in_conversation(scored)
        rankings.append(final)
        return final

    for n, sample in enumerate(data):
        turns = turns_of(sample["conversation"])
        db = databases.new(backend, f"locomo-variants-{n}")
        started = time.perf_counter()
        agent, dia_of = load_agent(db, turns, embedder)
        loading = time.perf_counter() - started
        for run in runs.values():
            run.load_seconds += loading
        known = {t[0] for t in turns}
        for qa in sample["qa"]:
            evidence = evidence_ids(qa.get("evidence", []), known)
            if not evidence:
                continue
            rankings.clear()
            started = time.perf_counter()
            with overridden({"search.in_conversation": kept}):
                found, _ = agent.archival.search(qa["question"], limit=PAGE)
            searched = time.perf_counter() - started
            asked = Asked(agent, qa["question"], rankings[-1] if rankings else [])
            for name, run in runs.items():
                started = time.perf_counter()
                top = found if name == "shipped" else VARIANTS[name](asked)
                # A variant's time: the shipped search's and its own.
                run.search_seconds += searched + time.perf_counter() - started
                recall = {k: _recall(top[:k], evidence, dia_of) for k in KS}
                run.answered.append(Answered(sample["sample_id"], qa["category"], recall))
        agent.store.close()
        databases.discard(db)
    return runs


def _recall(top: Sequence[Passage], evidence: list[str], dia_of: dict[str, set[str]]) -> float:
    found = set().union(*(dia_of[p.id] for p in top)) if top else set()
    return len(set(evidence) & found) / len(evidence)


def differences(run: Run, shipped: Run, split: tuple[list[str], list[str]]) -> str:
    """Overall and multi-hop recall@5/@10 minus the shipped ranking's, per half."""
    cells = []
    for category, name in ((None, "overall"), (1, "multi-hop")):
        for half, part in zip("AB", split, strict=True):
            deltas = "/".join(
                f"{run.recall(k, part, category) - shipped.recall(k, part, category):+.1f}"
                for k in KS
            )
            cells.append(f"{name} {half} {deltas}")
    return "   ".join(cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="a file in LoCoMo's format")
    parser.add_argument("--embedders", default="none", help='comma-separated: "none", "local"')
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated")
    add_db_option(parser)
    args = parser.parse_args()
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    if unknown := [n for n in names if n not in VARIANTS]:
        raise SystemExit(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    data = json.loads(args.data.read_text())
    split = halves(data)
    with Databases() as databases:
        for spec in (s.strip() for s in args.embedders.split(",")):
            embedder = make_embedder(spec, DEFAULT_DIR)
            for backend in backends(args.db):
                runs = evaluate(data, embedder, databases, backend, names)
                for name, run in runs.items():
                    report(f"{spec}, {name} [{label(backend)}]", run, split)
                    if name != "shipped":
                        print("   vs shipped: " + differences(run, runs["shipped"], split))
            if isinstance(embedder, CachedEmbedder):
                embedder.save()


if __name__ == "__main__":
    main()
