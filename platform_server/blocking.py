"""Blocking work (bcrypt, parsing, inference, file I/O) runs here, off the IOLoop."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, TypeVar

from tornado.ioloop import IOLoop

R = TypeVar("R")


async def run_blocking(fn: Callable[..., R], *args: Any) -> R:
    """Run `fn(*args)` in the default executor and await its result."""
    return await IOLoop.current().run_in_executor(None, fn, *args)


def start_blocking(fn: Callable[..., R], *args: Any) -> asyncio.Future[R]:
    """Submit `fn(*args)` to the default executor now (from code that cannot await yet); await the future later."""
    return IOLoop.current().run_in_executor(None, fn, *args)
