"""Tasks that start at once, as Python 3.12's eager tasks do, on Python 3.11.

A task created on 3.11 takes its first step only after every callback already queued on the loop.
Under a burst of chat requests that means every request is handled before any turn begins: the
first model request of each turn leaves only after the last request of the burst was read, and every
turn's first event waits for the whole burst. A turn started eagerly runs at once, inside the request
that started it, up to its first real wait (the model's answer), so turns begin in arrival order.

The step runs as the new task (`asyncio.current_task()` is the task, so timeouts entered in it cancel
the right one) and in the task's own copy of the context; a task carries the coroutine on from where
it waits. Python 3.12 and later use the standard library's `eager_start`.
"""

from __future__ import annotations

import asyncio
import collections.abc
import contextvars
import sys
from collections.abc import Coroutine, Generator
from typing import Any, TypeVar

T = TypeVar("T")


def start_task(coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """A task running `coro` that has already taken its first step."""
    loop = asyncio.get_running_loop()
    if sys.version_info >= (3, 12):
        return asyncio.Task(coro, loop=loop, eager_start=True)  # type: ignore[call-arg, unused-ignore]
    context = contextvars.copy_context()
    first = _FirstStep()
    task: asyncio.Task[T] = asyncio.Task(_Continuation(coro, first), loop=loop, context=context)
    caller = asyncio.current_task(loop)
    if caller is not None:
        asyncio.tasks._leave_task(loop, caller)
    asyncio.tasks._enter_task(loop, task)
    try:
        first.waiting_on = context.run(coro.send, None)
    except StopIteration as done:
        first.finished, first.result = True, done.value
    except BaseException as exc:  # noqa: BLE001 - the task's outcome, raised when it takes its step
        first.error = exc
    finally:
        asyncio.tasks._leave_task(loop, task)
        if caller is not None:
            asyncio.tasks._enter_task(loop, caller)
    return task


class _FirstStep:
    waiting_on: Any = None
    finished = False
    result: Any = None
    error: BaseException | None = None


def continuation(coro: Coroutine[Any, Any, Any], waiting_on: Any) -> Coroutine[Any, Any, Any]:
    """The rest of `coro`, which already ran up to its first wait on `waiting_on` (for a task to carry on)."""
    first = _FirstStep()
    first.waiting_on = waiting_on
    return _Continuation(coro, first)


class _Continuation(collections.abc.Coroutine):
    """A coroutine whose first step already ran: hands its first wait to the task, then passes everything through.

    A task cancelled before its first step throws into this object at once; the cancellation goes to the
    coroutine where it waits (its `finally` blocks run), as it would have with a plain task."""

    def __init__(self, coro: Coroutine[Any, Any, Any], first: _FirstStep) -> None:
        self.coro = coro
        self.first = first
        self.started = False

    def send(self, value: Any) -> Any:
        if self.started:
            return self.coro.send(value)
        self.started = True
        if self.first.error is not None:
            raise self.first.error
        if self.first.finished:
            raise StopIteration(self.first.result)
        return self.first.waiting_on

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        if not self.started:
            self.started = True
            if self.first.error is not None or self.first.finished:
                raise typ if val is None else val  # nothing waits any more: the task ends with what was thrown
        return self.coro.throw(typ) if val is None and tb is None else self.coro.throw(typ, val, tb)

    def close(self) -> None:
        self.coro.close()

    def __await__(self) -> Generator[Any, Any, Any]:
        return self

    def __iter__(self) -> Any:
        return self

    def __next__(self) -> Any:
        return self.send(None)
