"""Rate limits of the public webchat routes: per widget token and client address, and per token overall."""

from __future__ import annotations

import math
import time
from collections import deque
from typing import Callable, Protocol

from platform_server.integrations.redis_limits import RedisWindows
from platform_server.web.errors import TooManyRequests

WINDOW_S = 60.0
MAX_KEYS = 100_000  # past this many, keys with nothing in the window are forgotten


class WebchatLimits(Protocol):
    async def check(self, channel_id: int, address: str) -> None:
        """Count one request of this widget from this address; 429 when either cap is reached."""

    async def close(self) -> None:
        """Let go of the connection to a shared store (at stop)."""


def _refuse(wait_s: float) -> TooManyRequests:
    return TooManyRequests(f"Too many webchat requests, try again in {max(1, math.ceil(wait_s))} s")


def _caps(channel_id: int, address: str, per_address: int, per_token: int) -> list[tuple[str, int]]:
    return [(f"a:{channel_id}|{address}", per_address), (f"t:{channel_id}", per_token)]


class WebchatLimiter:
    """A sliding one-minute window of requests for each (channel, address) and each channel.

    The first cap keeps one visitor (or one script) from flooding a widget; the second caps what the
    whole public, unauthenticated widget can cost its owner (every message is a model call). A limit
    of 0 turns that cap off. A refused request does not count."""

    def __init__(self, per_address: int, per_token: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_address, self.per_token, self.clock = per_address, per_token, clock
        self._hits: dict[str, deque[float]] = {}

    def _window(self, key: str, now: float) -> deque[float]:
        q = self._hits.get(key)
        if q is None:
            q = self._hits[key] = deque()
        while q and q[0] <= now - WINDOW_S:
            q.popleft()
        return q

    def hit(self, channel_id: int, address: str) -> None:
        """Count one request of this widget from this address; 429 when either cap is reached."""
        now = self.clock()
        if len(self._hits) > MAX_KEYS:
            self._forget(now)
        checks = _caps(channel_id, address, self.per_address, self.per_token)
        windows = [(self._window(key, now), limit) for key, limit in checks if limit > 0]
        for q, limit in windows:
            if len(q) >= limit:
                raise _refuse(q[0] + WINDOW_S - now)
        for q, _ in windows:
            q.append(now)

    async def check(self, channel_id: int, address: str) -> None:
        self.hit(channel_id, address)

    async def close(self) -> None:
        pass

    def _forget(self, now: float) -> None:
        for key in [k for k, q in self._hits.items() if not q or q[-1] <= now - WINDOW_S]:
            del self._hits[key]


class RedisWebchatLimiter:
    """The same caps kept in Redis (`redis_url`): every process behind the port shares one budget per widget."""

    def __init__(self, url: str, per_address: int, per_token: int) -> None:
        self.per_address, self.per_token = per_address, per_token
        self.windows = RedisWindows(url, "webchat", WINDOW_S)

    async def check(self, channel_id: int, address: str) -> None:
        wait = await self.windows.hit(_caps(channel_id, address, self.per_address, self.per_token))
        if wait:
            raise _refuse(wait)

    async def close(self) -> None:
        await self.windows.close()


def webchat_limits(redis_url: str, per_address: int, per_token: int) -> WebchatLimits:
    """Redis windows when a Redis is configured (several processes), else this process's memory."""
    if redis_url:
        return RedisWebchatLimiter(redis_url, per_address, per_token)
    return WebchatLimiter(per_address, per_token)
