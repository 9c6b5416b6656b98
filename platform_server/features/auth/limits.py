"""The login limiter the login route uses: in this process's memory, or in Redis when `redis_url` is set.

With several processes behind one port (issue 31) each process's own counts would give a guesser N times
the failures before a lockout; on Redis every process counts into the same windows and sees the same
locks. The rules are LoginLimiter's (features/auth/service.py): a lockout per (username, address) and per
address, a slowdown per username; each step is one Lua script, so racing processes cannot both slip in.
"""

from __future__ import annotations

import itertools
import os
from typing import TYPE_CHECKING, Protocol

from platform_server.config import Config
from platform_server.features.auth.service import LoginLimiter, login_slowdown
from platform_server.lazy import lazy_import
from platform_server.web.errors import TooManyRequests

if TYPE_CHECKING:
    import redis.asyncio as aioredis
else:
    aioredis = lazy_import("redis.asyncio")


class LoginLimits(Protocol):
    async def before_login(self, username: str, address: str) -> float:
        """429 while the pair or the address is locked; else the seconds this attempt waits first."""

    async def failed_login(self, username: str, address: str) -> None: ...

    async def succeeded_login(self, username: str, address: str) -> None:
        """The right password: this pair's count and the username's slowdown start again."""

    async def close(self) -> None:
        """Let go of the connection to a shared store (at stop)."""


# KEYS: pair lock, address lock, username window. Returns -1 when locked, else the username's recent failures.
_BEFORE = """
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - tonumber(ARGV[1]) - 1)
return redis.call('ZCARD', KEYS[3])
"""

# KEYS: the pair, address and username windows; ARGV: window ms, a unique member, each window's lockout (0: never).
# A window that reaches its lockout sets `<key>:lock` for one window and starts counting again.
_FAILED = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, now, ARGV[2])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window - 1)
  redis.call('PEXPIRE', key, window)
  local limit = tonumber(ARGV[i + 2])
  if limit > 0 and redis.call('ZCARD', key) >= limit then
    redis.call('SET', key .. ':lock', 1, 'PX', window)
    redis.call('DEL', key)
  end
end
return 0
"""


class RedisLoginLimiter:
    """LoginLimiter's rules on Redis, shared by every process using the same `redis_url`."""

    def __init__(self, url: str, per_user: int, per_address: int, window_s: float) -> None:
        self.per_user, self.per_address, self.window_ms = per_user, per_address, int(window_s * 1000)
        self.client = aioredis.from_url(url)
        self._before = self.client.register_script(_BEFORE)
        self._failed = self.client.register_script(_FAILED)
        self._member = f"{os.getpid()}-{os.urandom(4).hex()}-"  # unique across processes
        self._seq = itertools.count()

    @staticmethod
    def _keys(username: str, address: str) -> list[str]:
        return [f"login:p:{username.lower()}|{address}", f"login:a:{address}", f"login:u:{username.lower()}"]

    async def before_login(self, username: str, address: str) -> float:
        pair, addr, user = self._keys(username, address)
        failures = int(await self._before(keys=[f"{pair}:lock", f"{addr}:lock", user], args=[self.window_ms]))
        if failures < 0:
            raise TooManyRequests("Too many failed login attempts, try again later")
        return login_slowdown(failures, self.per_user)

    async def failed_login(self, username: str, address: str) -> None:
        args: list[int | str] = [self.window_ms, f"{self._member}{next(self._seq)}", self.per_user, self.per_address, 0]
        await self._failed(keys=self._keys(username, address), args=args)

    async def succeeded_login(self, username: str, address: str) -> None:
        pair, _, user = self._keys(username, address)
        await self.client.delete(pair, user)

    async def close(self) -> None:
        await self.client.aclose()


def login_limits(config: Config) -> LoginLimits:
    """Redis windows when a Redis is configured (several processes), else this process's memory."""
    limits = (config.login_max_failures_per_user, config.login_max_failures_per_address, config.login_lockout_seconds)
    if config.redis_url:
        return RedisLoginLimiter(config.redis_url, *limits)
    return LoginLimiter(*limits)
