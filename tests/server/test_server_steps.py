"""The server's step runner: steps in worker threads, one at a time per
agent in the order they arrived, each run to its end even when its client
stops listening; and the agents it keeps from step to step."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memgpt_lite import Agent
from memgpt_lite.agent.workspace import Workspace
from memgpt_lite.errors import NotFoundError
from memgpt_lite.events import StepEvent, StepFinished
from memgpt_lite.models import DEFAULT_USER
from memgpt_lite.server.context import ServerContext
from memgpt_lite.server.steps import StepRunner
from memgpt_lite.settings.resolve import resolve_settings
from memgpt_lite.storage.open import open_storage
from memgpt_lite.storage.protocol import Storage
from memgpt_lite.testing.model import FunctionModel
from memgpt_lite.testing.script import Reply, say


@dataclass
class Sam:
    """Agent sam, whose model echoes each message after a pause long
    enough for other sends to queue; `seen` is what it was sent, in order."""

    store: Storage
    seen: list[str] = field(default_factory=list)
    agent_id: str = ""

    def answer(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        last = [m for m in messages if m["role"] == "user"][-1]["content"]
        self.seen.append(last)
        time.sleep(0.02)
        return say(f"re: {last}")

    def load(self) -> Agent:
        return Agent.load("sam", store=self.store, llm=FunctionModel(self.answer))

    def users_and_replies(self) -> tuple[list[str | None], list[str | None]]:
        stored = self.store.messages_from(self.agent_id, 0)
        users = [m.content for m in stored if m.role == "user"]
        return users, [c.sent_message() for m in stored for c in m.tool_calls]


@pytest.fixture
def sam(tmp_path: Path) -> Iterator[Sam]:
    with open_storage(str(tmp_path / "a.db")) as store:
        agent = Sam(store)
        agent.agent_id = Agent.create("sam", "gpt-4o-mini", store=store).state.id
        yield agent


async def collect(events: Any) -> list[StepEvent]:
    return [event async for event in events]


def test_sends_to_one_agent_run_in_the_order_they_arrived(sam: Sam) -> None:
    async def main() -> list[list[StepEvent]]:
        runner = StepRunner(8)
        try:
            sends = [runner.events(sam.agent_id, sam.load, f"message {i}") for i in range(8)]
            return await asyncio.gather(*(collect(s) for s in sends))
        finally:
            runner.close()

    results = asyncio.run(main())
    assert sam.seen == [f"message {i}" for i in range(8)]
    for i, events in enumerate(results):
        assert isinstance(events[-1], StepFinished)
        assert events[-1].result.replies == [f"re: message {i}"]


def test_a_step_whose_client_left_finishes_before_the_next(sam: Sam) -> None:
    async def main() -> list[StepEvent]:
        runner = StepRunner(2)
        try:
            abandoned = runner.events(sam.agent_id, sam.load, "first")
            await anext(abandoned)  # step_started, then the client goes away
            await abandoned.aclose()
            return await collect(runner.events(sam.agent_id, sam.load, "second"))
        finally:
            runner.close()

    second = asyncio.run(main())
    assert isinstance(second[-1], StepFinished)
    assert sam.seen == ["first", "second"]
    assert sam.users_and_replies() == (["first", "second"], ["re: first", "re: second"])


def test_a_result_whose_caller_was_cancelled_is_still_stored_before_the_next(sam: Sam) -> None:
    async def main() -> list[str]:
        runner = StepRunner(2)
        try:
            first = asyncio.ensure_future(runner.result(sam.agent_id, sam.load, "first"))
            await asyncio.sleep(0.005)  # the step is in its thread
            first.cancel()
            return (await runner.result(sam.agent_id, sam.load, "second")).replies
        finally:
            runner.close()

    assert asyncio.run(main()) == ["re: second"]
    assert sam.seen == ["first", "second"]
    assert sam.users_and_replies() == (["first", "second"], ["re: first", "re: second"])


def test_an_agents_steps_share_one_agent_until_its_model_changes(sam: Sam) -> None:
    store = sam.store
    Agent.create("bobs", "gpt-4o-mini", store=store, owner="bob")
    context = ServerContext(workspace=Workspace(store, resolve_settings()), steps=StepRunner(1))
    first = context.step_agent(DEFAULT_USER, "sam")
    first.runner.token_counter.count_text("counted once")
    again = context.step_agent(DEFAULT_USER, "sam")
    assert again is first  # its model client and token counts with it
    store.update_agent(first.state.id, lambda state: setattr(state.llm, "model", "gpt-4o"))
    changed = context.step_agent(DEFAULT_USER, "sam")
    assert changed is not first and changed.runner.token_counter is not first.runner.token_counter
    with pytest.raises(NotFoundError):
        context.step_agent(DEFAULT_USER, "bobs")
    context.steps.close()
