"""Users, logins, JWT and personal access tokens, workspace members and the cache of who may do what."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from platform_server.features.auth.cache import AuthCache
    from platform_server.features.auth.limits import LoginLimits
    from platform_server.features.auth.tokens import JwtIssuer


JWT: RuntimeKey[JwtIssuer] = RuntimeKey("jwt")
LOGIN_LIMITER: RuntimeKey[LoginLimits] = RuntimeKey("login_limiter")
AUTH_CACHE: RuntimeKey[AuthCache] = RuntimeKey("auth_cache")
