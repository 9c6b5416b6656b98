"""Put the token and role cache in front of the web layer's resolvers."""
from __future__ import annotations

from typing import Any

from platform_server.features.auth.cache import AuthCache


async def start(platform: Any) -> None:
    cache = AuthCache(platform.web.authenticate, platform.web.workspace_role)
    platform.web.authenticate = cache.authenticate
    platform.web.workspace_role = cache.member_role
    platform.services["auth_cache"] = cache
