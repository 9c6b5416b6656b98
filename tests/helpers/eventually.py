"""Waiting for what happens in the background: one helper and one budget instead of a polling loop per test.

`await eventually(check)` calls `check` (a function or a coroutine function) until it answers something truthy and
answers that; an `AssertionError` raised by `check` counts as "not yet". Past the budget it fails with the last
value or assertion, so a test that waits says what it waited for. `eventually_sync` is the same for code that runs
outside the event loop (threads, subprocesses).

A negative assertion ("X does not happen") never sleeps a fixed time: it waits, with `eventually`, for the event
that would have come after X (a later tick counted, a log line written, the next request answered), then checks
that X did not happen.
"""
from __future__ import annotations

import asyncio
import inspect
import time
from typing import Any, Awaitable, Callable, TypeVar, overload

T = TypeVar("T")

# Generous: the suite shares two cores between several runs, and a check that holds returns at its first call.
TIMEOUT_S = 30.0
INTERVAL_S = 0.02


class Timeout(AssertionError):
    """The condition did not hold within the budget."""


def _failure(what: str, timeout: float, value: Any, error: AssertionError | None) -> Timeout:
    last = f"last failure: {error}" if error is not None else f"last value: {value!r}"
    return Timeout(f"{what or 'the condition'} did not hold within {timeout:g} s ({last})")


@overload
async def eventually(check: Callable[[], Awaitable[T]], timeout: float = ..., interval: float = ..., what: str = ...) -> T: ...
@overload
async def eventually(check: Callable[[], T], timeout: float = ..., interval: float = ..., what: str = ...) -> T: ...


async def eventually(check: Callable[[], Any], timeout: float = TIMEOUT_S, interval: float = INTERVAL_S,
                     what: str = "") -> Any:
    """The first truthy answer of `check()` (sync or async), asked every `interval` seconds for up to `timeout`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value: Any = None
        error: AssertionError | None = None
        try:
            value = check()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
        except AssertionError as e:
            error = e
        if loop.time() >= deadline:
            raise _failure(what, timeout, value, error) from error
        await asyncio.sleep(interval)


def eventually_sync(check: Callable[[], T], timeout: float = TIMEOUT_S, interval: float = INTERVAL_S,
                    what: str = "") -> T:
    """`eventually` for a caller outside the event loop: blocks the calling thread between tries."""
    deadline = time.monotonic() + timeout
    while True:
        value: Any = None
        error: AssertionError | None = None
        try:
            value = check()
            if value:
                return value
        except AssertionError as e:
            error = e
        if time.monotonic() >= deadline:
            raise _failure(what, timeout, value, error) from error
        time.sleep(interval)
