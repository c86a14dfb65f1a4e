"""The fake server's misbehaviours, as seen by the real openai client and by
plain HTTP: HTML pages, raw bodies, hangs, drips and runs of errors."""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any

import openai
import pytest

from memgpt_lite.testing import (
    HTML_PAGE,
    FakeOpenAIServer,
    drip,
    drop,
    error,
    hang,
    html,
    raw,
    reply,
    say,
)

MODEL = "gpt-4o-mini"
USER = {"role": "user", "content": "hello"}


def client_for(server: FakeOpenAIServer, **kwargs: Any) -> openai.OpenAI:
    kwargs.setdefault("max_retries", 0)
    return openai.OpenAI(base_url=server.base_url, api_key=server.api_key, **kwargs)


def chat(client: openai.OpenAI) -> Any:
    return client.chat.completions.create(model=MODEL, messages=[USER])  # type: ignore[list-item]


def wait_until(condition: Any, what: str) -> None:
    """Poll `condition` for up to 5 s (a bound for a stuck test, not a timing claim)."""
    for _ in range(500):
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


def test_html_page_is_a_200_text_html_answer(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(html())
    raw_response = client_for(fake_llm).chat.completions.with_raw_response.create(
        model=MODEL,
        messages=[USER],  # type: ignore[list-item]
    )
    assert raw_response.status_code == 200
    assert raw_response.headers["content-type"] == "text/html; charset=utf-8"
    assert raw_response.http_response.text == HTML_PAGE
    assert fake_llm.rejections == [] and len(fake_llm.chat_requests) == 1


def test_raw_body_is_sent_verbatim_with_its_status_and_type(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(
        raw('{"id": "chatcmpl-1", "choices": ['),
        raw(b"\xff not text", status=502, content_type="text/plain", headers={"x-why": "proxy"}),
    )
    client = client_for(fake_llm)
    first = client.chat.completions.with_raw_response.create(model=MODEL, messages=[USER])  # type: ignore[list-item]
    assert first.status_code == 200
    assert first.http_response.content == b'{"id": "chatcmpl-1", "choices": ['
    with pytest.raises(openai.InternalServerError) as info:
        chat(client)
    assert info.value.response.content == b"\xff not text"
    assert info.value.response.headers["x-why"] == "proxy"
    assert [r.status for r in fake_llm.requests] == [200, 502]


def test_hang_never_answers_and_ends_when_the_client_hangs_up(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(hang(), reply("next"))
    with pytest.raises(openai.APITimeoutError):
        chat(client_for(fake_llm, timeout=0.2))
    assert fake_llm.requests[0].error == "no answer (hang)"
    assert fake_llm.requests[0].status == 0
    wait_until(lambda: fake_llm.hanging == 0, "the hang notices the client left")
    assert chat(client_for(fake_llm)).choices[0].message.content == "next"


def test_stop_ends_a_hang() -> None:
    server = FakeOpenAIServer().start()
    server.enqueue(hang())
    outcome: list[BaseException] = []

    def worker() -> None:
        try:
            chat(client_for(server))
        except openai.APIConnectionError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=worker)
    thread.start()
    wait_until(lambda: server.hanging == 1, "the request hangs")
    server.stop()
    thread.join(timeout=5)
    assert not thread.is_alive() and len(outcome) == 1


def test_drip_delivers_a_valid_reply_slowly_headers_included(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(drip(say("slow but whole"), interval=0.01, chunk=64))
    port = int(fake_llm.base_url.split(":")[2][:-3])
    body = json.dumps({"model": MODEL, "messages": [USER]}).encode()
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
        f"Authorization: Bearer {fake_llm.api_key}\r\nConnection: close\r\n\r\n"
    ).encode() + body
    chunks = []
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request)
        while data := sock.recv(4096):
            chunks.append(data)
    assert len(chunks) > 1  # it came in pieces
    assert chunks[0].startswith(b"HTTP/1.1 200")
    assert b"\r\n\r\n" not in chunks[0]  # the headers themselves were split
    # And the whole is a valid completion the client understands.
    fake_llm.enqueue(drip(say("again"), interval=0.001, chunk=32))
    (tool_call,) = chat(client_for(fake_llm, timeout=5)).choices[0].message.tool_calls
    assert json.loads(tool_call.function.arguments) == {"message": "again"}


def test_drip_of_an_error(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue(drip(error(503, "busy"), interval=0.001, chunk=16))
    with pytest.raises(openai.InternalServerError, match="busy"):
        chat(client_for(fake_llm))


def test_a_run_of_5xx_is_a_repeated_error_and_an_endless_one_a_responder(
    fake_llm: FakeOpenAIServer,
) -> None:
    fake_llm.enqueue(*[error(503, "busy")] * 3, reply("finally"))
    client = client_for(fake_llm)
    for _ in range(3):
        with pytest.raises(openai.InternalServerError, match="busy"):
            chat(client)
    assert chat(client).choices[0].message.content == "finally"
    fake_llm.responder = lambda body: error(503, "busy forever")
    for _ in range(3):
        with pytest.raises(openai.InternalServerError, match="busy forever"):
            chat(client)
    assert [r.status for r in fake_llm.requests] == [503] * 3 + [200] + [503] * 3


@pytest.mark.parametrize(
    "item",
    [
        raw(b"x", status=101),
        raw(b"x", headers={"a": 1}),  # type: ignore[dict-item]
        raw(b"x", headers={"a": "b\r\nX-Injected: 1"}),
        error(429, "x", headers={"Retry-After": "é"}),
        drip(reply("x"), chunk=0),
        drip(reply("x"), interval=-1),
        drip(drop()),  # type: ignore[arg-type]
        hang(delay=float("nan")),
    ],
)
def test_misbehaviours_are_checked_at_enqueue(fake_llm: FakeOpenAIServer, item: Any) -> None:
    with pytest.raises(ValueError):
        fake_llm.enqueue(item)
    assert fake_llm.pending() == 0


@pytest.mark.alone  # The HTML page must come back within the client's 0.2 s timeout.
def test_embeddings_take_the_misbehaviours_too(fake_llm: FakeOpenAIServer) -> None:
    fake_llm.enqueue_embeddings(html(), hang())
    client = client_for(fake_llm, timeout=0.2)
    page = client.embeddings.with_raw_response.create(model=MODEL, input="x")
    assert page.headers["content-type"].startswith("text/html")
    with pytest.raises(openai.APITimeoutError):
        client.embeddings.create(model=MODEL, input="x")
    with pytest.raises(ValueError, match="not reply"):
        fake_llm.enqueue_embeddings(drip(reply("x")))


def test_a_responder_that_raises_is_a_clear_400(fake_llm):
    def broken(body):
        raise KeyError("no such turn")

    fake_llm.responder = broken
    client = openai.OpenAI(base_url=fake_llm.base_url, api_key=fake_llm.api_key, max_retries=0)
    with pytest.raises(openai.BadRequestError, match="the responder raised KeyError"):
        client.chat.completions.create(model=MODEL, messages=[USER])
    assert len(fake_llm.rejections) == 1


def test_a_client_gone_mid_request_is_not_a_rejection(fake_llm):
    import socket

    host, port = fake_llm.base_url.split("//")[1].split("/")[0].split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n"
            + f"Authorization: Bearer {fake_llm.api_key}\r\n\r\n".encode()
            + b'{"model": "gpt-4o-mini", "mess'
        )
        sock.shutdown(socket.SHUT_WR)
        assert sock.recv(100) == b""  # closed without an answer
    assert fake_llm.rejections == [] and fake_llm.requests == []
