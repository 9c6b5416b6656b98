"""OAuth connections to model vendors (sign-in, token storage and the periodic refresh)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from tornado.ioloop import PeriodicCallback

    from platform_server.features.oauth.service import OAuthService


OAUTH: RuntimeKey[OAuthService] = RuntimeKey("oauth")
OAUTH_REFRESH: RuntimeKey[PeriodicCallback] = RuntimeKey("oauth_refresh")
