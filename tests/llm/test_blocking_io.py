"""The blocking HTTP of a thread's own event loop (llm/blocking_io.py): used
only where nothing else runs on the loop, and never where proxies are set."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import httpx2

from memgpt_lite import Agent
from memgpt_lite.llm import runner
from memgpt_lite.llm.blocking_io import BlockingTransport, blocking_http_client
from memgpt_lite.llm.endpoint import _ssl_context
from memgpt_lite.testing import say


def transport_of(agent: Agent, loop: asyncio.AbstractEventLoop) -> object:
    client = agent.runner.llm._clients.for_loop(loop)  # type: ignore[attr-defined]
    return client._client._transport


def test_only_a_threads_own_loop_blocks(fake_llm, tmp_path):
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db")
    fake_llm.enqueue(say("one"), say("two"))
    assert agent.step("hi").replies == ["one"]
    assert isinstance(transport_of(agent, runner._thread_loop()), BlockingTransport)
    assert asyncio.run(agent.astep("again")).replies == ["two"]
    other = asyncio.new_event_loop()
    try:
        assert not isinstance(transport_of(agent, other), BlockingTransport)
    finally:
        other.close()


def test_proxies_in_the_environment_keep_httpx_own_client(monkeypatch):
    assert isinstance(blocking_http_client(_ssl_context()), httpx2.AsyncClient)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    assert blocking_http_client(_ssl_context()) is None


def test_steps_on_other_threads_share_one_client_and_connection(fake_llm, tmp_path):
    """A server runs an agent's steps on whichever worker thread is free:
    each thread's own loop uses the same client, and so the connection the
    first step opened, not a client and a connection of its own."""
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db")
    fake_llm.enqueue(say("one"), say("two"))
    loops: list[asyncio.AbstractEventLoop] = []

    def step_in_a_thread(message: str) -> list[str]:
        with ThreadPoolExecutor(1) as pool:  # a new thread, with a new loop
            replies = pool.submit(lambda: agent.step(message).replies).result()
            loops.append(pool.submit(runner._thread_loop).result())
        return replies

    assert step_in_a_thread("hi") == ["one"]
    assert step_in_a_thread("again") == ["two"]
    assert loops[0] is not loops[1]
    first, second = (transport_of(agent, loop) for loop in loops)
    assert first is second
    assert isinstance(first, BlockingTransport)
    assert len(first._transport._pool.connections) == 1
