"""Put the token and role cache in front of the web layer's resolvers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.auth import AUTH_CACHE, LOGIN_LIMITER
from platform_server.features.auth.cache import AuthCache

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:
    cache = AuthCache(platform.web.authenticate, platform.web.workspace_role)
    platform.web.authenticate = cache.authenticate
    platform.web.workspace_role = cache.member_role
    platform.set_runtime(AUTH_CACHE, cache)


async def stop(platform: Platform) -> None:
    await platform.runtime(LOGIN_LIMITER).close()  # a Redis limiter's connections (redis_url)
