"""Pacing of turn starts: at most TURN_STARTS_PER_PASS per pass of the IOLoop, the rest in arrival order.

A turn's start costs a few ms (its setup and model request run at once, inside the request); an
event of a running stream a fraction of one. Starting every turn of a burst of new chats in one pass
would hold up the events of streams already running and the first answers of the burst itself; the
starts beyond the limit wait for the next passes, after the network events that arrived meanwhile.
"""

from __future__ import annotations

import asyncio
from collections import deque

TURN_STARTS_PER_PASS = 4


class TurnPacer:
    """The chat runtime's gate for turn starts (`await pacer.admit()` before starting one)."""

    def __init__(self) -> None:
        self._starts_this_pass = 0
        self._pass_armed = False
        self._waiting: deque[asyncio.Future[None]] = deque()

    async def admit(self) -> None:
        """Return when this request may start its turn (at once, unless this pass already started its share)."""
        if self._starts_this_pass < TURN_STARTS_PER_PASS and not self._waiting:
            self._starts_this_pass += 1
            self._arm_next_pass()
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        self._arm_next_pass()
        await waiter

    def _arm_next_pass(self) -> None:
        if not self._pass_armed:
            self._pass_armed = True
            asyncio.get_running_loop().call_later(0, self._next_pass)  # a timer: runs after the next pass's I/O

    def _next_pass(self) -> None:
        self._pass_armed = False
        self._starts_this_pass = 0
        while self._waiting and self._starts_this_pass < TURN_STARTS_PER_PASS:
            waiter = self._waiting.popleft()
            if not waiter.done():  # a request whose client left meanwhile is skipped
                waiter.set_result(None)
                self._starts_this_pass += 1
        if self._waiting or self._starts_this_pass:
            self._arm_next_pass()
