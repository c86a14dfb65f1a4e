"""POST /v1/embeddings on the fake server, driven by the real openai client."""

from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np
import openai
import pytest

from memgpt_lite.llm.tokens import TokenCounter
from memgpt_lite.testing import (
    FakeOpenAIServer,
    cosine,
    drop,
    error,
    fake_embedding,
    reply,
)
from memgpt_lite.testing.embeddings import words

MODEL = "text-embedding-3-small"
INVALID_INPUT = (
    "'$.input' is invalid. Please check the API reference: "
    "https://platform.openai.com/docs/api-reference."
)


def client_for(server: FakeOpenAIServer, **kwargs: Any) -> openai.OpenAI:
    kwargs.setdefault("max_retries", 0)
    return openai.OpenAI(base_url=server.base_url, api_key=server.api_key, **kwargs)


def embed(server: FakeOpenAIServer, input: Any, **kwargs: Any) -> list[list[float]]:  # noqa: A002
    result = client_for(server).embeddings.create(model=MODEL, input=input, **kwargs)
    return [item.embedding for item in result.data]


def tokens_of(text: str) -> list[int]:
    return TokenCounter(MODEL).encoding.encode_ordinary(text)


# ------------------------------------------------------------------ answers


def test_single_string_has_the_real_shape(fake_llm: FakeOpenAIServer) -> None:
    text = "The archivist remembers every conversation."
    result = client_for(fake_llm).embeddings.create(model=MODEL, input=text)

    assert result.object == "list"
    assert result.model == MODEL
    (item,) = result.data
    assert (item.object, item.index) == ("embedding", 0)
    assert item.embedding == fake_embedding(text)
    assert len(item.embedding) == 64
    assert math.isclose(math.hypot(*item.embedding), 1.0, rel_tol=1e-6)
    n = TokenCounter(MODEL).count_text(text)
    assert (result.usage.prompt_tokens, result.usage.total_tokens) == (n, n)
    # The client asks for base64 unless told otherwise, and decodes it itself.
    assert fake_llm.embedding_requests == [
        {"model": MODEL, "input": text, "encoding_format": "base64"}
    ]
    assert fake_llm.embedding_inputs_seen == 1
    assert fake_llm.rejections == fake_llm.chat_requests == []


def test_list_of_strings_keeps_order(fake_llm: FakeOpenAIServer) -> None:
    texts = ["first memory", "second memory", "a third, unrelated note"]
    result = client_for(fake_llm).embeddings.create(model=MODEL, input=texts)

    assert [item.index for item in result.data] == [0, 1, 2]
    assert [item.embedding for item in result.data] == [fake_embedding(t) for t in texts]
    assert result.usage.prompt_tokens == sum(TokenCounter(MODEL).count_text(t) for t in texts)
    assert fake_llm.embedding_inputs_seen == 3
    embed(fake_llm, ["one more"])
    assert fake_llm.embedding_inputs_seen == 4  # a running total, for batching tests


def test_token_ids_embed_like_their_text(fake_llm: FakeOpenAIServer) -> None:
    texts = ["hello there world", "tokens decode to text"]
    ids = [tokens_of(t) for t in texts]
    assert embed(fake_llm, ids[0]) == [fake_embedding(texts[0])]  # one input as tokens
    assert embed(fake_llm, ids) == [fake_embedding(t) for t in texts]

    result = client_for(fake_llm).embeddings.create(model=MODEL, input=ids)
    assert result.usage.prompt_tokens == sum(map(len, ids))


def test_dimensions_truncate_and_renormalise(fake_llm: FakeOpenAIServer) -> None:
    text = "short vectors for cheap storage of archival passages"
    (vector,) = embed(fake_llm, text, dimensions=16)

    assert len(vector) == 16
    assert vector == fake_embedding(text, truncate_to=16)
    assert math.isclose(math.hypot(*vector), 1.0, rel_tol=1e-6)
    assert fake_llm.embedding_requests[-1]["dimensions"] == 16


def test_constructor_sets_the_dimension() -> None:
    with FakeOpenAIServer(embedding_dimension=8) as server:
        (vector,) = embed(server, "small world")
        assert vector == fake_embedding("small world", 8)
        with pytest.raises(openai.BadRequestError) as info:
            embed(server, "small world", dimensions=9)
        assert info.value.code == "integer_above_max_value"
    with pytest.raises(ValueError):
        FakeOpenAIServer(embedding_dimension=0)


def test_float_and_base64_formats_decode_to_the_same_vectors(fake_llm: FakeOpenAIServer) -> None:
    texts = ["one format", "or the other"]
    client = client_for(fake_llm)
    as_float = client.embeddings.create(model=MODEL, input=texts, encoding_format="float")
    as_b64 = client.embeddings.create(model=MODEL, input=texts, encoding_format="base64")
    by_default = embed(fake_llm, texts)

    floats = [item.embedding for item in as_float.data]
    assert all(isinstance(x, float) for x in floats[0])
    # Asked for explicitly, base64 is handed over undecoded: little-endian float32.
    decoded = [
        np.frombuffer(base64.b64decode(item.embedding), dtype="<f4").tolist()  # type: ignore[arg-type]
        for item in as_b64.data
    ]
    assert floats == decoded == by_default == [fake_embedding(t) for t in texts]
    formats = [body["encoding_format"] for body in fake_llm.embedding_requests]
    assert formats == ["float", "base64", "base64"]


# ----------------------------------------------------------------- the maths


def test_vectors_are_deterministic(fake_llm: FakeOpenAIServer) -> None:
    text = "Deterministic across calls, servers and processes"
    assert embed(fake_llm, text) == embed(fake_llm, text)
    with FakeOpenAIServer() as other:
        assert embed(other, text) == embed(fake_llm, text)
    # Pinned values: a stable hash (blake2b), never Python's per-process hash().
    assert fake_embedding("cat", 8) == [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert fake_embedding("memories", 8) == [0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0]


def test_similarity_follows_shared_words(fake_llm: FakeOpenAIServer) -> None:
    query, related, unrelated = embed(
        fake_llm,
        [
            "my dog loves walking in the park",
            "walks in the park with the dog",
            "quarterly tax filings are due in April",
        ],
    )
    assert cosine(query, related) > 0.6
    assert abs(cosine(query, unrelated)) < 0.3
    assert cosine(query, related) > cosine(query, unrelated) + 0.4


def test_stemming_stop_words_and_empty_texts() -> None:
    assert words("The dogs were Walking, walked; WALKS!") == ["dog", "walk", "walk", "walk"]
    assert fake_embedding("the cats") == fake_embedding("cat")
    assert cosine(fake_embedding("running"), fake_embedding("run")) == pytest.approx(1.0)
    # A text of only stop words has no words: a fixed unit vector, not an error.
    empty = fake_embedding("the of and")
    assert empty == fake_embedding("!!!") and math.isclose(math.hypot(*empty), 1.0)
    assert abs(cosine(empty, fake_embedding("cat"))) < 0.2


# ---------------------------------------------------------------- validation


def _raw_post(server: FakeOpenAIServer, body: Any) -> openai.APIStatusError:
    """Post a body the typed client would not build, and return the error."""
    with pytest.raises(openai.APIStatusError) as info:
        client_for(server).post("/embeddings", body=body, cast_to=object)
    return info.value


TOO_LONG = (
    "Invalid 'input': array too long. Expected an array with maximum length 2048, "
    "but got an array with length 2049 instead."
)


@pytest.mark.parametrize(
    ("body", "message", "param", "code"),
    [
        ({"input": "x"}, "you must provide a model parameter", "model", None),
        ({"model": "", "input": "x"}, "you must provide a model parameter", "model", None),
        ({"model": 3, "input": "x"}, "you must provide a model parameter", "model", None),
        (
            {"model": MODEL},
            "Missing required parameter: 'input'.",
            "input",
            "missing_required_parameter",
        ),
        ({"model": MODEL, "input": ""}, INVALID_INPUT, "input", None),
        ({"model": MODEL, "input": []}, INVALID_INPUT, "input", None),
        ({"model": MODEL, "input": ["fine", ""]}, INVALID_INPUT, "input", None),
        ({"model": MODEL, "input": [[1, 2], []]}, INVALID_INPUT, "input", None),
        ({"model": MODEL, "input": ["text", 1]}, INVALID_INPUT, "input", None),
        ({"model": MODEL, "input": [[1], "text"]}, INVALID_INPUT, "input", None),
        ({"model": MODEL, "input": None}, INVALID_INPUT, "input", None),
        ({"model": MODEL, "input": 7}, INVALID_INPUT, "input", None),
        ({"model": MODEL, "input": {"text": "x"}}, INVALID_INPUT, "input", None),
        ({"model": MODEL, "input": [-1]}, INVALID_INPUT, "input", None),
        ({"model": MODEL, "input": [True]}, INVALID_INPUT, "input", None),
        ({"model": MODEL, "input": [1.5]}, INVALID_INPUT, "input", None),
        ({"model": MODEL, "input": [10**9]}, INVALID_INPUT, "input", None),  # not a token
        ({"model": MODEL, "input": ["x"] * 2049}, TOO_LONG, "input", "array_above_max_length"),
        (
            {"model": MODEL, "input": "x", "encoding_format": "int8"},
            "Invalid value: 'int8'. Supported values are: 'float' and 'base64'.",
            "encoding_format",
            "invalid_value",
        ),
        (
            {"model": MODEL, "input": "x", "dimensions": "8"},
            "Invalid type for 'dimensions': expected an integer, but got a string instead.",
            "dimensions",
            "invalid_type",
        ),
        (
            {"model": MODEL, "input": "x", "dimensions": True},
            "Invalid type for 'dimensions': expected an integer, but got a boolean instead.",
            "dimensions",
            "invalid_type",
        ),
        (
            {"model": MODEL, "input": "x", "dimensions": 0},
            "Invalid 'dimensions': integer below minimum value. "
            "Expected a value >= 1, but got 0 instead.",
            "dimensions",
            "integer_below_min_value",
        ),
        (
            {"model": MODEL, "input": "x", "dimensions": 65},
            "Invalid 'dimensions': integer above maximum value. "
            "Expected a value <= 64, but got 65 instead.",
            "dimensions",
            "integer_above_max_value",
        ),
    ],
)
def test_invalid_requests_are_400(
    fake_llm: FakeOpenAIServer, body: dict[str, Any], message: str, param: str, code: str | None
) -> None:
    exc = _raw_post(fake_llm, body)

    assert isinstance(exc, openai.BadRequestError)
    assert exc.body == {
        "message": message,
        "type": "invalid_request_error",
        "param": param,
        "code": code,
    }
    (rejection,) = fake_llm.rejections
    assert (rejection.path, rejection.status, rejection.error) == ("/v1/embeddings", 400, message)
    assert rejection.body == body
    assert fake_llm.embedding_requests == [] and fake_llm.embedding_inputs_seen == 0


def test_limits_are_inclusive(fake_llm: FakeOpenAIServer) -> None:
    assert len(embed(fake_llm, ["x"] * 2048)) == 2048
    assert len(embed(fake_llm, "x", dimensions=64)[0]) == 64
    assert len(embed(fake_llm, "x", dimensions=1)[0]) == 1
    assert embed(fake_llm, "x", dimensions=None) == [fake_embedding("x")]  # null: no truncation
    assert fake_llm.rejections == []


def test_wrong_api_key_is_401(fake_llm: FakeOpenAIServer) -> None:
    client = openai.OpenAI(base_url=fake_llm.base_url, api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        client.embeddings.create(model=MODEL, input="x")
    assert [r.status for r in fake_llm.rejections] == [401]


# ---------------------------------------------------------- scripted failures


def test_scripted_429_is_retried_after_retry_after(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue_embeddings(error(429, "Rate limit reached", headers={"Retry-After": "0"}))
    client = client_for(fake_llm, max_retries=1)
    result = client.embeddings.create(model=MODEL, input=["a", "b"])

    assert [item.embedding for item in result.data] == [fake_embedding("a"), fake_embedding("b")]
    assert [r.status for r in fake_llm.requests] == [429, 200]
    assert fake_llm.requests[0].error == "Rate limit reached"
    assert len(fake_llm.embedding_requests) == 2  # both attempts passed validation
    assert fake_llm.embedding_inputs_seen == 2  # but only one was embedded
    assert fake_llm.rejections == []  # scripted errors are not server rejections


def test_scripted_error_reaches_the_caller(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue_embeddings(error(500, "The server had an error"))
    with pytest.raises(openai.InternalServerError) as info:
        embed(fake_llm, "x")
    assert info.value.body["type"] == "server_error"
    assert embed(fake_llm, "x") == [fake_embedding("x")]  # the script is used up


def test_drop_is_recovered_by_one_retry(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue_embeddings(drop())
    result = client_for(fake_llm, max_retries=1).embeddings.create(model=MODEL, input="x")

    assert result.data[0].embedding == fake_embedding("x")
    assert [r.status for r in fake_llm.requests] == [0, 200]
    assert fake_llm.requests[0].error == "connection dropped"


def test_embedding_and_chat_scripts_are_separate(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(reply("chat answer"))
    fake_llm.enqueue_embeddings(error(429, "slow down"), error(400, "bad batch"))
    client = client_for(fake_llm)

    with pytest.raises(openai.RateLimitError):
        embed(fake_llm, "x")
    messages = [{"role": "user", "content": "hi"}]
    chat = client.chat.completions.create(model="gpt-4o-mini", messages=messages)  # type: ignore[arg-type]
    assert chat.choices[0].message.content == "chat answer"
    with pytest.raises(openai.BadRequestError) as info:
        embed(fake_llm, "x")
    assert info.value.body["message"] == "bad batch"
    assert fake_llm.pending() == 0
    assert len(fake_llm.chat_requests) == 1 and len(fake_llm.embedding_requests) == 2
    assert fake_llm.rejections == []


@pytest.mark.parametrize("item", [reply("vectors?"), "429", error(200, "not an error")])
def test_enqueue_embeddings_rejects_garbage(fake_llm: FakeOpenAIServer, item: Any) -> None:
    with pytest.raises(ValueError):
        fake_llm.enqueue_embeddings(item)


def test_reset_clears_embedding_state(fake_llm: FakeOpenAIServer) -> None:
    embed(fake_llm, ["a", "b"])
    fake_llm.enqueue_embeddings(drop())
    fake_llm.reset()
    assert fake_llm.embedding_requests == [] and fake_llm.embedding_inputs_seen == 0
    assert embed(fake_llm, "a") == [fake_embedding("a")]  # the drop was cleared too
