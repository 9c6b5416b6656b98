"""aiohttp's request bodies written in the step that sends the request (Python 3.11).

aiohttp writes a request's body in a task of its own. Python 3.12 starts such a task eagerly, so a
small body leaves with the request; on 3.11 the task waits its turn on the loop, behind every callback
already queued. Under many concurrent chat turns that puts each turn's model request behind the setup
of every other turn: the first event of all of them waits for the slowest. This task factory starts
that one kind of task eagerly, as 3.12 does: it runs until it first waits, and a task carries it on
from there (a body that needs no waiting is written at once and no task is scheduled at all).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from platform_server.eager import continuation

EAGER = frozenset({"ClientRequest.write_bytes"})  # coroutines started at once (qualified names)


def install(loop: asyncio.AbstractEventLoop) -> None:
    """Start aiohttp's body writes eagerly on this loop (Python 3.11 only; no-op when a factory is set)."""
    if sys.version_info < (3, 12) and loop.get_task_factory() is None:
        loop.set_task_factory(_factory)


def _factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Future[Any]:
    if getattr(coro, "__qualname__", None) not in EAGER:
        return asyncio.Task(coro, loop=loop, **kwargs)
    try:
        waiting_on = coro.send(None)
    except StopIteration as done:  # finished without waiting: nothing to schedule
        result: asyncio.Future[Any] = loop.create_future()
        result.set_result(done.value)
        return result
    except BaseException as exc:  # noqa: BLE001 - the task's outcome, as a task would hold it
        failed: asyncio.Future[Any] = loop.create_future()
        failed.set_exception(exc)
        return failed
    return asyncio.Task(continuation(coro, waiting_on), loop=loop, **kwargs)
