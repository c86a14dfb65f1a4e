"""benchmarks/locomo_retrieval.py on a tiny conversation in LoCoMo's format
(written here, not taken from LoCoMo), so it cannot rot: the recall it
reports, its halves, the weights' shares and the embedding cache."""

from __future__ import annotations

import sys

import numpy as np
from support.paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import locomo_retrieval  # noqa: E402
from databases import Databases  # noqa: E402
from embedding_cache import CachedEmbedder  # noqa: E402
from locomo_shares import SHARES  # noqa: E402
from overrides import overridden, parse_setting  # noqa: E402

from memgpt_lite.memory.retrieval import ranking  # noqa: E402


def _sample(sample_id: str, pet: str) -> dict:
    turns = [
        ("Ann", "I adopted a parrot called Kiwi yesterday."),
        ("Bo", "Congratulations! I am painting my kitchen blue."),
        ("Ann", f"My brother has a {pet} too."),
        ("Bo", "We are going hiking in the mountains next week."),
    ]
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": who, "dia_id": f"D1:{i + 1}", "text": text}
                for i, (who, text) in enumerate(turns)
            ],
        },
        "qa": [
            {"question": "What colour is Bo's kitchen?", "evidence": ["D1:2"], "category": 4},
            {"question": f"Who has a {pet}?", "evidence": ["D1:3; D9:9"], "category": 1},
            {"question": "Is this answerable?", "evidence": [], "category": 5},
        ],
    }


DATA = [_sample("conv-9", "hamster"), _sample("conv-10", "gecko"), _sample("conv-2", "ferret")]


def test_halves_split_sorted_ids_first_half_rounded_up():
    assert locomo_retrieval.halves(DATA) == (["conv-10", "conv-2"], ["conv-9"])


def test_recall_per_question_and_per_half(tmp_path):
    with Databases() as databases:
        run = locomo_retrieval.evaluate(DATA, None, databases)
    # The question without evidence is not asked; a malformed id is skipped.
    assert run.count() == 6 and run.count(["conv-9"]) == 2
    assert run.recall(5) == 100.0 and run.recall(10, ["conv-2"], category=1) == 100.0
    assert run.recall(5, ["conv-404"]) == 0.0


def test_overridden_puts_each_value_back():
    before = ranking.SUBJECT_BOOST
    with overridden({"ranking.SUBJECT_BOOST": 1.0}):
        assert ranking.SUBJECT_BOOST == 1.0
    assert before == ranking.SUBJECT_BOOST
    assert parse_setting("ranking.SUBJECT_BOOST=1.25") == ("ranking.SUBJECT_BOOST", 1.25)


def test_every_share_names_what_the_modules_hold():
    for settings in SHARES.values():
        with overridden(settings):
            pass


class CountingEmbedder:
    """A text's letters counted into four dimensions (deterministic), and
    how many texts it was asked for."""

    name, dimension = "test:letters", 4

    def __init__(self) -> None:
        self.asked = 0

    def embed(self, texts):
        self.asked += len(texts)
        rows = [[text.count(c) + 1.0 for c in "aeio"] for text in texts]
        return np.array(rows, dtype=np.float32)


def test_cached_embedder_embeds_each_text_once_across_runs(tmp_path):
    first = CachedEmbedder(CountingEmbedder(), tmp_path)
    vectors = first.embed(["a kiwi", "an owl", "a kiwi"])
    assert first.inner.asked == 2
    first.save()
    second = CachedEmbedder(CountingEmbedder(), tmp_path)
    again = second.embed(["an owl", "a kiwi"])
    assert second.inner.asked == 0 and second.dimension == 4
    assert np.array_equal(again, vectors[[1, 0]])
    second.embed(["a new text"])
    assert second.inner.asked == 1
