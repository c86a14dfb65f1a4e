"""`runner.drive`: an async generator run to its end from synchronous code in
one go, each item handed on as it comes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import pytest

from memgpt_lite.llm import runner


def test_every_item_is_handed_on_in_order_within_one_task():
    tasks: list[asyncio.Task[object] | None] = []

    async def items() -> AsyncGenerator[int, None]:
        for number in range(5):
            tasks.append(asyncio.current_task())
            await asyncio.sleep(0)
            yield number

    seen: list[int] = []
    runner.drive(items(), seen.append)
    assert seen == [0, 1, 2, 3, 4]
    # One run for the whole generator, not one task per item (as iterate does).
    assert len(set(map(id, tasks))) == 1 and tasks[0] is not None


def test_an_error_of_the_receiver_closes_the_generator_and_goes_on():
    closed: list[bool] = []

    async def items() -> AsyncGenerator[int, None]:
        try:
            for number in range(5):
                yield number
        finally:
            closed.append(True)

    def receive(number: int) -> None:
        if number == 2:
            raise ValueError("enough")

    with pytest.raises(ValueError, match="enough"):
        runner.drive(items(), receive)
    assert closed == [True]
