"""The limit on one model request as a whole: hangs, drips (headers included),
runs of 5xx and Retry-After all end at the deadline with one clear line; and
the mechanism behind it works from threads, inside an event loop, and stops at
Ctrl-C."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from typing import Any

import pytest

from memgpt_lite import Agent, LLMError
from memgpt_lite.llm import runner
from memgpt_lite.testing import FakeOpenAIServer, cut, drip, error, hang, reply, say

# Limits of 0.3 to 1.2 s: a request after a timeout must still be answered
# within them, and a run of retries counted as the server saw it.
pytestmark = pytest.mark.alone


def make_agent(tmp_path, timeout: float | None = None, **llm_options: Any) -> Agent:
    options = {"max_retries": 4} | llm_options
    return Agent.create(
        "sam", "gpt-4o-mini", db=tmp_path / "a.db", llm_options=options, timeout=timeout
    )


def assert_still_valid(agent: Agent, server: FakeOpenAIServer) -> None:
    server.enqueue(say("back"))
    assert agent.step("are you there?").replies == ["back"]
    assert server.rejections == []


def wait_until(condition: Any, what: str) -> None:
    """Poll for up to 10 s: a bound for a stuck test, not a timing claim."""
    for _ in range(1000):
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


def limit_error(server: FakeOpenAIServer, seconds: str, attempts: str, last: str = "") -> str:
    return (
        f"the model endpoint {server.base_url} did not answer within {seconds} s ({attempts}"
        f"{last}); a slow model may need a longer limit (--timeout, timeout=, or timeout in "
        "config.toml)"
    )


def step_with(driver: str, agent: Agent, message: str) -> Any:
    """agent.step (its HTTP blocks its thread's own loop, see blocking_io.py),
    or agent.astep on an event loop of the caller's."""
    if driver == "step":
        return agent.step(message)
    return asyncio.run(agent.astep(message))


@pytest.mark.parametrize("driver", ["step", "astep"])
def test_a_hang_ends_at_the_limit(fake_llm, tmp_path, driver):
    agent = make_agent(tmp_path, timeout=0.3)
    fake_llm.enqueue(hang())
    with pytest.raises(LLMError) as caught:
        step_with(driver, agent, "hi")
    assert str(caught.value) == limit_error(fake_llm, "0.3", "1 attempt")
    wait_until(lambda: fake_llm.hanging == 0, "the connection is closed")
    assert_still_valid(agent, fake_llm)


@pytest.mark.parametrize("driver", ["step", "astep"])
@pytest.mark.parametrize(
    ("interval", "chunk"),
    [(0.02, 1), (0.2, 200)],
    ids=["through-the-headers", "through-the-body"],
)
def test_a_drip_that_would_deliver_ends_at_the_limit(fake_llm, tmp_path, interval, chunk, driver):
    """Each byte arrives well within any per-read timeout, and the reply is
    valid: only a limit on the whole request stops it."""
    agent = make_agent(tmp_path, timeout=0.4, timeout_seconds=5.0)
    fake_llm.enqueue(drip(say("too late"), interval=interval, chunk=chunk))
    with pytest.raises(LLMError) as caught:
        step_with(driver, agent, "hi")
    assert str(caught.value) == limit_error(fake_llm, "0.4", "1 attempt")
    assert_still_valid(agent, fake_llm)


def test_a_run_of_5xx_that_outlasts_the_limit(fake_llm, tmp_path):
    """Backoff (0.5 s, then 1 s...) within the limit, then the limit's error."""
    agent = make_agent(tmp_path, timeout=1.2, max_retries=1000)
    fake_llm.responder = lambda body: error(503, "busy")
    with pytest.raises(LLMError) as caught:
        agent.step("hi")
    attempts = len(fake_llm.requests)
    assert attempts > 1
    assert str(caught.value) == limit_error(
        fake_llm, "1.2", f"{attempts} attempts", "; last: answered 503: busy"
    )
    fake_llm.responder = None
    assert_still_valid(agent, fake_llm)


def test_retry_after_longer_than_the_time_left_fails_at_once(fake_llm, tmp_path):
    agent = make_agent(tmp_path, timeout=1)
    fake_llm.enqueue(error(429, "Rate limit reached", headers={"Retry-After": "5"}), say("unused"))
    with pytest.raises(LLMError) as caught:
        agent.step("hi")
    assert str(caught.value).startswith(
        f"the model endpoint {fake_llm.base_url} answered 429: Rate limit reached and asked to "
        "retry after 5 s, more than the "
    )
    assert str(caught.value).endswith(" s left of the 1 s limit")
    assert fake_llm.pending() == 1  # not retried
    fake_llm.reset()
    assert_still_valid(agent, fake_llm)


def test_retries_within_the_limit_still_succeed(fake_llm, tmp_path):
    agent = make_agent(tmp_path, timeout=5)
    busy = error(503, "busy", headers={"retry-after-ms": "20"})
    fake_llm.enqueue(busy, busy, say("made it"))
    result = agent.step("hi")
    assert result.replies == ["made it"]
    assert [r.status for r in fake_llm.requests] == [503, 503, 200]
    assert result.llm_seconds > 0  # the time spent in the endpoint is counted


def test_seconds_in_calls_counts_the_time_in_the_endpoint(fake_llm, tmp_path):
    agent = make_agent(tmp_path)
    fake_llm.enqueue(reply(tool_calls=[say("x").tool_calls[0]], delay=0.2))
    started = time.perf_counter()
    result = agent.step("hi")
    elapsed = time.perf_counter() - started
    assert 0 < result.llm_seconds <= elapsed
    assert agent.runner.llm.seconds_in_calls == result.llm_seconds


def _ctrl_c_during_step(agent: Agent, fake_llm: FakeOpenAIServer, when: str) -> None:
    """Step, and press Ctrl-C once the server holds a request open (`when`
    says at what point); then the client must close the connection and leave
    no task behind on the loop the step ran on (this thread's own)."""
    main = threading.get_ident()

    def interrupt() -> None:
        wait_until(lambda: fake_llm.hanging == 1, when)
        signal.pthread_kill(main, signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        agent.step("hi")
    wait_until(lambda: fake_llm.hanging == 0, "the client closed the connection")
    assert not [t for t in asyncio.all_tasks(runner._thread_loop()) if not t.done()]


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs pthread_kill")
def test_ctrl_c_cancels_the_request_in_flight(fake_llm, tmp_path):
    """KeyboardInterrupt in the calling thread ends the wait at once, closes the
    connection (the server sees the client leave), and leaves no task behind."""
    agent = make_agent(tmp_path, timeout=60)
    fake_llm.enqueue(hang())
    _ctrl_c_during_step(agent, fake_llm, "the request is in flight")
    assert_still_valid(agent, fake_llm)


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs pthread_kill")
def test_ctrl_c_mid_stream_closes_the_connection(fake_llm, tmp_path):
    """The first words have come, the rest never does: Ctrl-C ends the wait
    and the stream's connection."""
    agent = make_agent(tmp_path, timeout=60)
    fake_llm.enqueue(cut(say("Hello there, how are you"), after=5, hang=True))
    _ctrl_c_during_step(agent, fake_llm, "the stream has stopped mid-answer")
    assert fake_llm.requests[0].streamed
    assert_still_valid(agent, fake_llm)


def test_works_inside_a_running_event_loop(fake_llm, tmp_path):
    """As in Jupyter: a synchronous step from a coroutine, then one awaited."""
    agent = make_agent(tmp_path, timeout=5)
    fake_llm.enqueue(say("from a coroutine"), say("awaited"))

    async def main() -> tuple[list[str], list[str]]:
        replies = agent.step("hi").replies
        return replies, (await agent.astep("again")).replies

    assert asyncio.run(main()) == (["from a coroutine"], ["awaited"])
    assert fake_llm.rejections == []


def test_threads_each_with_an_agent_step_at_once(fake_llm, tmp_path):
    fake_llm.responder = lambda body: reply(
        tool_calls=[say(body["messages"][-1]["content"]).tool_calls[0]], delay=0.05
    )
    results: dict[int, list[str]] = {}

    def talk(i: int) -> None:
        agent = Agent.create(f"a{i}", "gpt-4o-mini", db=tmp_path / f"{i}.db", timeout=10)
        results[i] = [reply for n in range(3) for reply in agent.step(f"{i}-{n}").replies]

    threads = [threading.Thread(target=talk, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == {i: [f"{i}-0", f"{i}-1", f"{i}-2"] for i in range(6)}
    assert fake_llm.rejections == []
