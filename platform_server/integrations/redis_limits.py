"""Sliding-window rate limits kept in Redis, so every process of one deployment spends one budget.

With `redis_url` set (issue 31: several processes behind one port), a limit counted in each process's
memory would let N processes admit N times the cap. Each window is a sorted set of request stamps; one
Lua script trims, checks every cap and counts the request atomically, so two processes racing for the
last slot cannot both get it, and a refused request counts nowhere (as the in-memory limiters do). The
script reads Redis's own clock (TIME), so the processes' clocks need not agree.
"""

from __future__ import annotations

import itertools
import os
from typing import TYPE_CHECKING

from platform_server.lazy import lazy_import

if TYPE_CHECKING:
    import redis.asyncio as aioredis
else:
    aioredis = lazy_import("redis.asyncio")

# KEYS: the windows; ARGV[1]: window in ms, ARGV[2]: a unique member, ARGV[3..]: each key's cap (0: none).
# Returns 0 when counted, else the ms until the oldest stamp of the first full window leaves it.
_HIT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
for i, key in ipairs(KEYS) do
  local cap = tonumber(ARGV[i + 2])
  if cap > 0 then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
    if redis.call('ZCARD', key) >= cap then
      local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
      return math.max(1, tonumber(oldest[2]) + window - now)
    end
  end
end
for i, key in ipairs(KEYS) do
  if tonumber(ARGV[i + 2]) > 0 then
    redis.call('ZADD', key, now, ARGV[2])
    redis.call('PEXPIRE', key, window)
  end
end
return 0
"""


class RedisWindows:
    """Sliding windows of one kind (`prefix`) in the Redis at `url`, shared by every process using it."""

    def __init__(self, url: str, prefix: str, window_s: float) -> None:
        self.client = aioredis.from_url(url)
        self.prefix, self.window_ms = prefix, int(window_s * 1000)
        self._script = self.client.register_script(_HIT)
        # A member unique across processes: two requests in the same millisecond are two stamps.
        self._member = f"{os.getpid()}-{os.urandom(4).hex()}-"
        self._seq = itertools.count()

    async def hit(self, caps: list[tuple[str, int]]) -> float:
        """Count one request against every (key, cap) unless one is full: 0.0 when counted, else seconds to wait."""
        keys = [f"{self.prefix}:{key}" for key, _ in caps]
        args: list[int | str] = [self.window_ms, f"{self._member}{next(self._seq)}", *(cap for _, cap in caps)]
        wait_ms = int(await self._script(keys=keys, args=args))
        return wait_ms / 1000.0

    async def close(self) -> None:
        await self.client.aclose()
