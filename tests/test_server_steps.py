"""The server's step runner: steps in worker threads, one at a time per
agent in the order they arrived, each run to its end even when its client
stops listening."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from memgpt_lite import Agent
from memgpt_lite.errors import NotFoundError
from memgpt_lite.loop.events import StepEvent, StepFinished
from memgpt_lite.models import DEFAULT_USER
from memgpt_lite.server.context import ServerContext
from memgpt_lite.server.steps import StepRunner
from memgpt_lite.storage.open import open_storage
from memgpt_lite.testing.model import FunctionModel
from memgpt_lite.testing.script import Reply, say


def slow_echo(seen: list[str]) -> FunctionModel:
    def answer(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        last = [m for m in messages if m["role"] == "user"][-1]["content"]
        seen.append(last)
        time.sleep(0.02)  # long enough for the other sends to queue
        return say(f"re: {last}")

    return FunctionModel(answer)


async def collect(events: Any) -> list[StepEvent]:
    return [event async for event in events]


def test_sends_to_one_agent_run_in_the_order_they_arrived(tmp_path: Path) -> None:
    seen: list[str] = []
    model = slow_echo(seen)
    with open_storage(str(tmp_path / "a.db")) as store:
        agent_id = Agent.create("sam", "gpt-4o-mini", store=store, llm=model).state.id

        def load() -> Agent:
            return Agent.load("sam", store=store, llm=model)

        async def main() -> list[list[StepEvent]]:
            runner = StepRunner(8)
            try:
                sends = [runner.events(agent_id, load, f"message {i}") for i in range(8)]
                return await asyncio.gather(*(collect(s) for s in sends))
            finally:
                runner.close()

        results = asyncio.run(main())
    assert seen == [f"message {i}" for i in range(8)]
    for i, events in enumerate(results):
        assert isinstance(events[-1], StepFinished)
        assert events[-1].result.replies == [f"re: message {i}"]


def test_a_step_whose_client_left_finishes_before_the_next(tmp_path: Path) -> None:
    seen: list[str] = []
    model = slow_echo(seen)
    with open_storage(str(tmp_path / "a.db")) as store:
        agent_id = Agent.create("sam", "gpt-4o-mini", store=store, llm=model).state.id

        def load() -> Agent:
            return Agent.load("sam", store=store, llm=model)

        async def main() -> list[StepEvent]:
            runner = StepRunner(2)
            try:
                abandoned = runner.events(agent_id, load, "first")
                await anext(abandoned)  # step_started, then the client goes away
                await abandoned.aclose()
                return await collect(runner.events(agent_id, load, "second"))
            finally:
                runner.close()

        second = asyncio.run(main())
        stored = store.messages_from(agent_id, 0)
    assert isinstance(second[-1], StepFinished)
    assert seen == ["first", "second"]
    users = [m.content for m in stored if m.role == "user"]
    assert users == ["first", "second"]
    replies = [c.sent_message() for m in stored for c in m.tool_calls]
    assert replies == ["re: first", "re: second"]


def test_an_agents_steps_share_one_agent_until_its_model_changes(tmp_path: Path) -> None:
    with open_storage(str(tmp_path / "a.db")) as store:
        Agent.create("sam", "gpt-4o-mini", store=store)
        Agent.create("bobs", "gpt-4o-mini", store=store, owner="bob")
        context = ServerContext(store=store, steps=StepRunner(1))
        first = context.step_agent(DEFAULT_USER, "sam")
        first.token_counter.count_text("counted once")
        again = context.step_agent(DEFAULT_USER, "sam")
        assert again is first  # its model client and token counts with it
        store.update_agent(first.state.id, lambda state: setattr(state.llm, "model", "gpt-4o"))
        changed = context.step_agent(DEFAULT_USER, "sam")
        assert changed is not first and changed.token_counter is not first.token_counter
        with pytest.raises(NotFoundError):
            context.step_agent(DEFAULT_USER, "bobs")
        context.steps.close()


def test_a_result_whose_caller_was_cancelled_is_still_stored_before_the_next(
    tmp_path: Path,
) -> None:
    seen: list[str] = []
    model = slow_echo(seen)
    with open_storage(str(tmp_path / "a.db")) as store:
        agent_id = Agent.create("sam", "gpt-4o-mini", store=store, llm=model).state.id

        def load() -> Agent:
            return Agent.load("sam", store=store, llm=model)

        async def main() -> list[str]:
            runner = StepRunner(2)
            try:
                first = asyncio.ensure_future(runner.result(agent_id, load, "first"))
                await asyncio.sleep(0.005)  # the step is in its thread
                first.cancel()
                second = await runner.result(agent_id, load, "second")
                return second.replies
            finally:
                runner.close()

        assert asyncio.run(main()) == ["re: second"]
        stored = store.messages_from(agent_id, 0)
    assert seen == ["first", "second"]
    assert [m.content for m in stored if m.role == "user"] == ["first", "second"]
