"""Eagerly started tasks behave as tasks: first step at once, as the task, in its own context; cancellation and errors reach the coroutine."""
from __future__ import annotations

import asyncio
import contextvars

import pytest

from platform_server.eager import start_task

label: contextvars.ContextVar[str] = contextvars.ContextVar("label", default="caller")


async def test_the_first_step_runs_at_once_as_the_new_task_and_in_its_own_context() -> None:
    seen: list[object] = []

    async def body() -> str:
        seen.append(asyncio.current_task())
        label.set("task")
        await asyncio.sleep(0)
        seen.append(label.get())
        return "done"

    task = start_task(body())
    assert seen == [task]  # ran before start_task returned, with current_task() being the task itself
    assert label.get() == "caller"  # the task's context change stayed in the task
    assert await task == "done" and seen[1] == "task"


async def test_a_task_cancelled_before_its_next_step_runs_the_coroutines_cleanup() -> None:
    cleaned: list[str] = []

    async def body() -> None:
        try:
            await asyncio.sleep(10)
        finally:
            cleaned.append("finally ran")

    task = start_task(body())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned == ["finally ran"]


async def test_a_coroutine_that_ends_or_fails_in_its_first_step_gives_its_result_or_error() -> None:
    async def quick() -> int:
        return 7

    async def broken() -> None:
        raise ValueError("no model configured")

    assert await start_task(quick()) == 7
    with pytest.raises(ValueError, match="no model configured"):
        await start_task(broken())


async def test_a_timeout_entered_in_the_first_step_cancels_the_task_not_its_caller() -> None:
    async def slow() -> str:
        try:
            async with asyncio.timeout(0.05):
                await asyncio.sleep(10)
        except TimeoutError:
            return "timed out"
        return "not reached"

    task = start_task(slow())
    await asyncio.wait([task])  # the timeout fired inside the task; this caller goes on, not cancelled
    assert task.result() == "timed out"


async def test_turn_starts_are_paced_four_per_loop_pass_in_arrival_order() -> None:
    from platform_server.features.chat.pacing import TURN_STARTS_PER_PASS, TurnPacer

    pacer = TurnPacer()
    admitted: list[int] = []

    async def start(i: int) -> None:
        await pacer.admit()
        admitted.append(i)

    tasks = [asyncio.create_task(start(i)) for i in range(10)]
    await asyncio.sleep(0)  # one pass: every request arrived, only the first few start
    assert admitted == list(range(TURN_STARTS_PER_PASS))
    await asyncio.gather(*tasks)
    assert admitted == list(range(10))  # the others in arrival order, in later passes
